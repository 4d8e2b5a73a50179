"""Angular sketch with a dense polar code: IronMask's rotation onto a codeword of a better-packed code.

The helper is built exactly as the angular sketch's (:mod:`sketchauth.sketches.angular`; Kim et
al., CVPR 2021, §3–4): a Haar-random orthogonal ``R`` with ``R t = c`` for the normalised template
``t`` and a uniformly drawn codeword ``c``, stored as its Householder factors in ``int16`` fixed
point and decoded through the same fixed-point ``R̂``. Only the code
differs. IronMask's ``α``-sparse code reads the codeword off the ``α`` largest rotated
coordinates; for 64 bits it needs ``α = 12`` in 128 dimensions, ``10`` in 256, ``8`` in 512, and
then decodes half the probes only at cosines 0.825 / 0.675 / 0.525 to the template. The sphere can
hold ``2^64`` codewords decodable at much wider angles (the channel capacity of ``n`` uses at
signal-to-noise ratio ``cos²/(1 − cos²)`` reaches 64 bits at cosines 0.71 / 0.54 / 0.40). This
family uses the codewords ``(1 − 2x)/√n`` of a binary polar code of length ``n`` with ``bits``
information bits, decoded with a list of ``list_size`` paths (:mod:`sketchauth.sketches.polar`):
half the probes decode at cosines 0.725 / 0.575 / 0.425 (64 bits, list 8; ``benchmarks/bench_spherical_codes.py``).

**Decoding condition, exactly.** ``y = R̂ p̂`` (integers, exact in float64); the decoded codeword
is the list decoder's choice on ``y`` (:func:`~sketchauth.sketches.polar.decode_batch`, integer
arithmetic throughout — the same decisions on every CPU and in the vectorised evaluation, which
calls the very same function). With ``list_size ≥ 2^bits`` the list keeps every codeword and the
decoder returns the codeword of largest correlation ``⟨y, c⟩`` under its min-sum metric. With
``min_cos = τ > 0`` the decoded ``c'`` is refused unless ``cos(p, R̂ᵀc') ≥ τ``:
``Σ_i c'_i y_i > 0`` and ``(Σ_i c'_i y_i)² ≥ τ²·n·2^28·‖p̂‖²`` in exact integers. A list decoder has
no guaranteed radius: how often a probe at a given angle decodes is measured, not bounded.

**Security figures** (:meth:`PolarAngularSketch.report`): (a) the codebook, ``bits`` bits — for a
template uniform on the sphere the helper is Haar on ``O(n)`` whatever the codeword, so every
codeword stays possible; the template distribution of real people is not uniform, which a
population model exploits (measured, ``benchmarks/bench_angular.py``); (c) the population attack,
about ``log2(1/FMR)`` argon2id evaluations. A dense codeword spreads over all ``n`` rows of ``R``
(each ``|c_i| = 1/√n``), so no few rows stand out as IronMask's support rows do.
"""

from __future__ import annotations

import math
import secrets as _secrets
from collections.abc import Mapping
from typing import Any

import numpy as np

from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.sketches.angular import MAX_DIMENSION, AngularSketch, Codeword
from sketchauth.sketches.base import EntropyReport, SchemeDescriptor, SymbolSpace
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int
from sketchauth.sketches.polar import CRC_POLYNOMIALS, PolarCode, correlation, decode_batch, polar_transform, signs

__all__ = ["MAX_LIST_SIZE", "MIN_POLAR_DIMENSION", "PolarAngularSketch"]

#: Smallest dimension of the polar family.
MIN_POLAR_DIMENSION = 8
#: Largest list of the decoder (decoding cost grows with it).
MAX_LIST_SIZE = 128
#: CRC lengths the code can carry (0: none, the code of every helper made before the CRC existed).
CRC_BITS = (0, *sorted(CRC_POLYNOMIALS))

PARAMETERS = ParameterSpec.of(
    Parameter("dimension", "int", "length n of every embedding", low=MIN_POLAR_DIMENSION, high=MAX_DIMENSION),
    Parameter(
        "bits",
        "int",
        "information bits of the polar code (bits < dimension): 2^bits codewords on the sphere",
        low=1,
        high=MAX_DIMENSION - 1,
    ),
    Parameter(
        "list_size",
        "int",
        "paths kept by the list decoder (larger: decodes wider angles, costs more)",
        low=1,
        high=MAX_LIST_SIZE,
        required=False,
        default=8,
    ),
    Parameter(
        "crc",
        "int",
        "bits of the outer CRC the list decoder checks (0, 4, 6, 8, 11 or 16; 0: the plain polar code). "
        "Absent in a record: 0, the code before the CRC",
        low=0,
        high=max(CRC_POLYNOMIALS),
        required=False,
        default=0,
    ),
    Parameter(
        "min_cos",
        "number",
        "after decoding, refuse unless cos(probe, decoded template) >= min_cos (0: no check)",
        low=0,
        high=1,
        required=False,
        default=0.0,
    ),
)


def _default_sweep(params: Mapping[str, Any]) -> list[int]:
    """Information bits from tolerant (few) to strict; below the dimension (a few small ones in
    the smallest dimensions, which no larger setting fits).

    >>> _default_sweep({"dimension": 512}), _default_sweep({"dimension": 16}), _default_sweep({"dimension": 8})
    ([16, 32, 48, 64, 80, 96, 128], [2, 4, 8], [2, 4])
    """
    n = int(params.get("dimension", 512))
    return [b for b in (16, 32, 48, 64, 80, 96, 128) if b < n] or [b for b in (2, 4, 8) if b < n]


_EXAMPLE_T = [((-1) ** i) * (1.0 + (i % 5) / 4.0) for i in range(16)]


class PolarAngularSketch(AngularSketch):
    """Angular sketch of ``dimension``-D embeddings on a polar code with ``bits`` information bits."""

    descriptor = SchemeDescriptor(
        name="angular-polar",
        sample_kind="vector",
        summary="rotation onto a dense polar codeword on the sphere (IronMask's helper, a better-packed code): "
        "raw float embeddings compared by angle; close iff the list decoder finds the codeword",
        parameters=PARAMETERS,
        length_parameters=("dimension",),
        sweep="bits",
        default_sweep=_default_sweep,
        template="sketchauth.sketches.angular:mean_direction",
        min_captures=1,
        max_captures=None,
        example=(
            {"dimension": 16, "bits": 2},
            [_EXAMPLE_T, [x * 1.1 for x in _EXAMPLE_T]],
            [x + (0.1 if i % 3 == 0 else 0.0) for i, x in enumerate(_EXAMPLE_T)],
        ),
    )

    def __init__(self, dimension: int, bits: int, list_size: int = 8, min_cos: float = 0.0, crc: int = 0) -> None:
        n = check_int("dimension", dimension, MIN_POLAR_DIMENSION, MAX_DIMENSION)
        self.bits = check_int("bits", bits, 1, n - 1)
        self.list_size = check_int("list_size", list_size, 1, MAX_LIST_SIZE)
        self.crc = check_int("crc", crc, 0, max(CRC_POLYNOMIALS))
        if self.crc not in CRC_BITS:
            raise ParameterError(f"crc must be one of {', '.join(map(str, CRC_BITS))}, got {self.crc}")
        if self.bits + self.crc >= n:
            raise ParameterError(f"bits + crc must stay below the dimension {n}, got {self.bits} + {self.crc}")
        # Every coordinate of a codeword is ±1/√n: the angular machinery sees a weight-n codeword.
        super().__init__(n, n - 1, min_cos)
        self.alpha = n
        self.code = PolarCode(n, self.bits, self.crc)

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dimension": self.dimension, "bits": self.bits, "list_size": self.list_size}
        if self.crc:
            out["crc"] = self.crc
        if self.min_cos:
            out["min_cos"] = self.min_cos
        return out

    # -- codewords: ±1 vectors (int8) of the polar code ---------------------------------------------
    def random_codeword(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """A uniform codeword (``int8`` ±1) from :mod:`secrets`, or from a seeded ``rng`` in simulations."""
        if rng is not None:
            info = rng.integers(0, 2, self.bits).astype(np.uint8)
        else:
            info = np.array([_secrets.randbits(1) for _ in range(self.bits)], dtype=np.uint8)
        return signs(self.code.encode(info))

    def _check_codeword(self, word: np.ndarray) -> np.ndarray:
        arr = np.asarray(word)
        if arr.shape != (self.dimension,) or arr.dtype.kind not in "iu":
            raise SampleError(f"a codeword is {self.dimension} integers +-1")
        values = arr.astype(np.int64)
        if np.any(np.abs(values) != 1):
            raise SampleError("a polar codeword has every entry +1 or -1")
        if self.code.information(((1 - values) // 2).astype(np.uint8)) is None:
            raise SampleError("the vector is not a codeword of this polar code")
        return values.astype(np.int8)

    # -- decoding ------------------------------------------------------------------------------------
    def _decode_payload(self, payload: bytes, sample: Any) -> Codeword:
        y, p = self.rotated(self._matrix(payload), sample)
        coded = decode_batch(y[None, :], self.code, self.list_size)
        if self.crc and not bool(self.code.valid(coded[0])):
            raise DecodeError("no path of the decoder's list holds the code's CRC")
        total = float(correlation(coded, y[None, :])[0])
        if self._min_cos > 0 and not (total > 0 and self.angle_accepts(total, p)):
            raise DecodeError(f"the probe's angle to the decoded template exceeds arccos({self.decision_cos})")
        return signs(coded[0]).view(Codeword)

    # -- accounting ----------------------------------------------------------------------------------
    def report(self) -> EntropyReport:
        n, k = self.dimension, self.bits
        capacity_cos = math.sqrt(1.0 - 2.0 ** (-2.0 * k / n))
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=8.0 * self._compact_bytes,
            randomness_bits=float(k),
            notes=(
                f"(a) codebook work from one helper without a matching sample: {k} bits (2^{k} polar codewords), "
                "exact when the template is uniform on the sphere; a concentrated template distribution lowers it "
                "(measured in benchmarks/bench_angular.py)",
                "(b) information-theoretic: H~(c|R) >= bits - D_inf(template density || uniform); the DORS sketch "
                "bound |S| - H(R) is vacuous",
                "(c) population attack (database and pepper held): about log2(1/FMR) argon2id evaluations, "
                "whatever the code",
                f"decodes iff the list decoder (list {self.list_size}, exact integer min-sum"
                + (f", the least-metric path whose {self.crc}-bit CRC holds" if self.crc else "")
                + ") returns the codeword; "
                f"no code of {k} bits in {n} dimensions decodes typical probes below cos {capacity_cos:.3f} "
                "(channel capacity)",
            ),
            extra={
                "codebook_bits": float(k),
                "helper_bytes": self._compact_bytes,
                "list_size": self.list_size,
                "crc": self.crc,
                "capacity_cos": capacity_cos,
                "min_cos": self.min_cos,
            },
        )

    # -- symbols (for mixing): row-sign flips by a codeword ---------------------------------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        """The information bits of the row-sign vector: ``bits`` symbols of one bit.

        Flipping the rows of ``R`` where a binary word ``d`` is 1 maps ``R t = c`` (coded bits ``x``)
        to the vector of coded bits ``x ⊕ d``, a codeword iff ``d`` is one — unlike the sparse code,
        whose codewords any row-sign flip permutes. So a pad moves the row signs by codewords only:
        with ``s`` the row-sign vector (1: the row's first non-zero entry is negative) and
        ``u = polar_transform(s)`` (``s`` padded with zeros to ``N``), the symbols are ``u`` at the
        information indices; replacing them by ``v`` flips the rows where ``encode(u_info ⊕ v)`` is 1
        and leaves ``u`` at the frozen indices as it was. Every key, right or wrong, then gives a helper
        that takes the template onto a codeword at the same angle: a genuine sample does not tell the
        right key from a wrong one (a flip of arbitrary rows would: its image is no codeword).
        """
        signs, _ = super().symbols(payload)
        x = np.zeros(self.code.N, dtype=np.uint8)
        x[: self.dimension] = signs
        return polar_transform(x)[self.code.data].astype(np.uint64), SymbolSpace("xor", bits=1)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        current, _ = self.symbols(payload)
        change = (current ^ np.asarray(symbols, dtype=np.uint64)).astype(np.uint8)
        return self._flip_rows(payload, self.code.encode(change)[: self.dimension] == 1)

    def pad_group_bits(self, report: EntropyReport | None = None) -> float:
        """A pad acts on the row signs through the code's ``2^bits`` codewords (:meth:`symbols`)."""
        return float(self.bits)
