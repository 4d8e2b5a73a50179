"""Euclidean interval sketch: per-feature quantisation lattice (Fang's thesis, ch. 6).

Each feature ``b_i ∈ [0, n)`` with public tolerance ``v_i ≥ 1`` is sketched as
``S_i = b_i mod (2v_i − 1)``. The values congruent to ``S_i`` form a lattice whose cells
(intervals of length ``2v_i − 1``) are centred on lattice points; decoding a sample ``d'``
returns, per feature, the lattice point nearest ``d'``, which is ``b_i`` exactly when
``|d'_i − b_i| < v_i``.

Accounting: no randomness, and ``S_i`` takes ``min(2v_i − 1, n)`` values, so the loss is at most
``Σ log2 min(2v_i − 1, n)`` bits (``Σ log2(2v_i − 1)`` whenever ``2v_i − 1 ≤ n``). Features add up.

Beyond the tolerance the sketch usually *cannot* tell: the nearest lattice point is some other
value and decode returns a different secret (the caller's hash check rejects it). Only when the
nearest lattice point falls outside ``[0, n)`` does decode know and raise :class:`DecodeError`.

**Real-valued and signed features.** With a ``step`` ``δ`` (and optionally an ``offset`` ``o``,
the real value of level 0) a measurement ``x`` is first mapped to the level
``⌊(x − o)/δ + 1/2⌋`` by :class:`~sketchauth.sketches.samples.Quantiser`, the one place where
real values become lattice integers; the sketch then works on levels ``[0, n)``, i.e. on the
values ``[o − δ/2, o + (n − ½)δ)``. A negative ``offset`` takes signed features (embeddings):
:meth:`IntervalSketch.for_range` picks ``offset`` and ``n`` from a range ``[low, high]``. Without a
step, an integer ``offset`` shifts integer features (``x − o``). A sketch with a step or an offset
refuses every secret *and sample* outside that range with :class:`SampleError` naming the feature
and the range; the tolerance ``v`` is in levels (``v·δ`` in the features' units).

**Which methods take what.** ``check_secret``, ``encode``, ``encode_with``, ``secret_bytes``,
``decode`` (its sample) and :meth:`IntervalSketch.quantise` take the caller's values — real
measurements when the sketch quantises, integers otherwise. ``check_secret``, ``decode`` and
``quantise`` return :class:`~sketchauth.sketches.samples.Levels`, the secret's canonical form, which
every one of those methods takes back *without quantising again*: ``encode(check_secret(x))``,
``enrol`` (which normalises, then encodes) and a cascade of mixed secrets all sketch the same
levels as ``encode(x)``. Without a step or an offset, integer samples are levels as they are and
may lie anywhere (a level just outside ``[0, n)`` can be within the tolerance of an enrolled
level at the edge); secrets must lie in ``[0, n)``.

Example::

    >>> sk = IntervalSketch(n=100, v=3, features=2)
    >>> helper = sk.encode([40, 7])
    >>> sk.decode(helper, [42, 5]).tolist()
    [40, 7]
    >>> signed = IntervalSketch.for_range(-1.0, 1.0, step=0.25, v=2, features=2)
    >>> signed.n, signed.offset, signed.quantise([-1.0, 0.3]).tolist()
    (9, -1.0, [0, 5])
    >>> signed.decode(signed.encode([-0.9, 0.3]), [-0.8, 0.1]).tolist()
    [0, 5]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import numpy as np

from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches._lattice import lattice_offset, nearest_lattice_point
from sketchauth.sketches.base import EntropyReport, SchemeDescriptor, SecureSketch, SymbolSpace
from sketchauth.sketches.format import pack_uints, uint_width, unpack_uints
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int
from sketchauth.sketches.samples import Levels, Quantiser
from sketchauth.sketches.types import FeatureVector

__all__ = ["IntervalSketch"]

#: Largest universe size: keeps every intermediate well inside int64.
MAX_N = 2**52
#: Largest number of features (as for the asymmetric sketches): an untrusted helper announcing
#: ``features = 10^9`` must be refused before the tolerance vector is allocated.
MAX_FEATURES = 2**16

#: The parameters and their limits (published as they are by the service).
PARAMETERS = ParameterSpec.of(
    Parameter("n", "int", "size of each feature's universe [0, n)", low=2, high=MAX_N),
    Parameter(
        "v",
        "per-feature",
        "tolerance: |d'_i - b_i| < v_i, 1 <= v_i <= n; one int for all features or one per feature",
        low=1,
        high=MAX_N,
        max_items=MAX_FEATURES,
    ),
    Parameter(
        "features",
        "int",
        "vector length (default: from v when v is a list, else 1)",
        low=1,
        high=MAX_FEATURES,
        required=False,
    ),
    Parameter(
        "step",
        "number",
        "quantisation step for real-valued features (none: integer features)",
        low=0,
        exclusive_low=True,
        required=False,
    ),
    Parameter(
        "offset",
        "number",
        "value of level 0, for signed features: values [offset - step/2, offset + (n - 1/2)*step) "
        "are accepted, others refused (an integer when there is no step)",
        required=False,
    ),
)


def _default_sweep(params: Mapping[str, Any]) -> list[int]:
    """Tolerances from tight to loose, in levels (the same whatever the universe)."""
    return [2, 4, 6, 8, 10, 12, 16]


def _small_instance(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """n = 12, v = 2, one feature: every one of the 12 secrets (3 residues mod 2v − 1)."""
    return {"n": 12, "v": 2, "features": 1}, [[b] for b in range(12)]


class IntervalSketch(SecureSketch[FeatureVector, FeatureVector]):
    """Interval sketch of integer, real or signed real feature vectors (levels ``[0, n)``).

    Parameters: ``n`` the number of levels of each feature; ``v`` the tolerance in levels, one int
    for every feature or one per feature; ``step`` the quantisation step for real-valued input
    (``None`` for integer input); ``features`` the vector length (taken from ``v`` when it is a
    sequence); ``offset`` the value of level 0 (``None``: 0; an integer when there is no step).
    """

    descriptor = SchemeDescriptor(
        name="interval",
        sample_kind="vector",
        summary="interval sketch per feature, S = b mod (2v - 1): close iff |d'_i - b_i| < v_i for every feature",
        parameters=PARAMETERS,
        length_parameters=("v", "features"),
        sweep="v",
        default_sweep=_default_sweep,
        small_instance=_small_instance,
        linkage_attacks={"interval": "residue-distance"},
        repeated_attacks={"interval": "crt"},
        example=({"n": 256, "v": 8, "features": 4}, [[120, 33, 200, 71]], [123, 30, 205, 71]),
    )

    def __init__(
        self,
        n: int,
        v: int | Sequence[int],
        step: float | None = None,
        features: int | None = None,
        offset: float | int | None = None,
    ) -> None:
        self.n = check_int("n", n, 2, MAX_N)
        if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            count = 1 if features is None else check_int("features", features, 1, MAX_FEATURES)
            tolerances = [check_int("v", v, 1, self.n)] * count
        else:
            try:
                tolerances = [check_int("v", x, 1, self.n) for x in v]  # type: ignore[union-attr]
            except TypeError:
                raise ParameterError("v must be an int or a sequence of ints") from None
            if not tolerances or len(tolerances) > MAX_FEATURES:
                raise ParameterError(f"v must have 1 to {MAX_FEATURES} entries, got {len(tolerances)}")
            if features is not None and check_int("features", features, 1, MAX_FEATURES) != len(tolerances):
                raise ParameterError(f"features={features} but v has {len(tolerances)} entries")
        self.v = np.array(tolerances, dtype=np.int64)
        self.features = len(tolerances)
        #: Real values → levels (the sketch's only quantisation; validates step and offset).
        self.quantiser = Quantiser(self.n, step, offset)
        self.step = self.quantiser.step
        self.offset = self.quantiser.offset
        self.moduli = 2 * self.v - 1
        self._width = uint_width(int(self.moduli.max()) - 1)

    @classmethod
    def for_range(
        cls, low: float, high: float, *, step: float, v: int | Sequence[int], features: int | None = None
    ) -> IntervalSketch:
        """The sketch whose levels of width ``step`` cover at least ``[low, high]`` (signed values).

        ``offset = low`` and ``n = ⌊(high − low)/step + 1/2⌋ + 1``
        (:meth:`~sketchauth.sketches.samples.Quantiser.covering`); it accepts the values
        ``[low − step/2, low + (n − ½)·step)``.
        """
        q = Quantiser.covering(low, high, step)
        return cls(q.n, v, step=q.step, features=features, offset=q.offset)

    # -- parameters -------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        uniform = bool(np.all(self.v == self.v[0]))
        out: dict[str, Any] = {
            "n": self.n,
            "v": int(self.v[0]) if uniform else self.v.tolist(),
            "features": self.features,
            "step": self.step,
        }
        if self.offset is not None:
            out["offset"] = self.offset
        return out

    # -- secrets ------------------------------------------------------------------------------------
    def quantise(self, values: Any) -> Levels:
        """The levels of one feature vector (``SampleError`` outside the range of a quantising sketch)."""
        return self.quantiser.levels(values, self.features, name="sample")

    def check_secret(self, secret: Any) -> Levels:
        """The secret's levels (:class:`Levels`, in ``[0, n)``); :class:`Levels` are not re-quantised."""
        return self._in_range(self.quantiser.levels(secret, self.features, name="secret"))

    def _in_range(self, b: Levels) -> Levels:
        bad = np.flatnonzero((b < 0) | (b >= self.n))
        if bad.size:
            raise SampleError(f"secret feature {int(bad[0])} is outside the levels [0, {self.n})")
        return b

    def secret_bytes(self, secret: Any) -> bytes:
        """Canonical bytes of the secret's levels (what ``decode`` returns is hashed the same way)."""
        return pack_uints(self.check_secret(secret), uint_width(self.n - 1))

    # -- encode / decode ----------------------------------------------------------------------------
    def _encode_payload(self, secret: np.ndarray, randomness: Any) -> bytes:
        return pack_uints(lattice_offset(secret, self.v), self._width)

    def _offsets(self, payload: bytes) -> np.ndarray:
        return cast("np.ndarray", unpack_uints(payload, self._width, self.features).astype(np.int64))

    def _check_payload(self, payload: bytes) -> None:
        s = self._offsets(payload)
        if np.any(s >= self.moduli) or np.any(s >= self.n):
            raise SketchFormatError("interval sketch value out of range for its tolerance")

    def _decode_payload(self, payload: bytes, sample: Any) -> Levels:
        d = self.quantiser.levels(sample, self.features, name="sample")
        nearest = nearest_lattice_point(d.view(np.ndarray), self._offsets(payload), self.v)
        if np.any((nearest < 0) | (nearest >= self.n)):
            raise DecodeError("sample is beyond the tolerance of at least one feature")
        return nearest.view(Levels)

    # -- accounting -----------------------------------------------------------------------------------
    def report(self) -> EntropyReport:
        values = np.minimum(self.moduli, self.n).astype(float)
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=float(np.log2(values).sum()),
            randomness_bits=0.0,
            notes=(
                "deterministic: no randomness, loss <= sum_i log2 min(2 v_i - 1, n)",
                "beyond the tolerance decode returns another lattice point unless it falls outside [0, n)",
            ),
        )

    # -- symbols (for mixing) ------------------------------------------------------------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        moduli = np.minimum(self.moduli, self.n).astype(np.uint64)
        return self._offsets(payload).astype(np.uint64), SymbolSpace("mod", moduli=moduli)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        return pack_uints(symbols, self._width)
