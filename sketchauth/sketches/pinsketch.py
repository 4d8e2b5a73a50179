"""PinSketch: the BCH-syndrome secure sketch for set difference (Dodis–Ostrovsky–Reyzin–Smith §6.3).

Dodis–Ostrovsky–Reyzin–Smith, "Fuzzy extractors", §6.3 (the construction minisketch also
implements). The universe is the non-zero elements of GF(2^m) (``8 ≤ m ≤ 64``, fixed primitive
polynomial per m, see :mod:`sketchauth.sketches._gf2m`); a secret is a set ``A`` of them, and a
sample ``B`` is close iff ``|A Δ B| ≤ t``.

* **Enc(A)** = the odd power sums ``s_i = Σ_{a∈A} a^i`` for ``i = 1, 3, …, 2t−1``: ``t`` field
  elements, written as ``t`` big-endian words of ``⌈m/8⌉`` bytes. Deterministic.
* **Dec(S, B)**: add B's power sums to S, which gives the power sums of ``D = A Δ B`` (elements
  of both sets cancel in characteristic 2); find the error-locator polynomial of D by
  Berlekamp–Massey (even power sums by squaring, ``s_2i = s_i²``); find its roots by
  Berlekamp's trace algorithm with random multipliers from the operating system's generator
  (what :mod:`secrets` reads; no field scan);
  check that the roots' own power sums are exactly the syndromes; return ``A = B Δ D``.

**What decode guarantees.** Decode returns a set ``A'`` if and only if ``A'`` is the unique set
with ``|A' Δ B| ≤ t`` whose sketch equals ``S`` (the BCH code has minimum distance ``2t+1``, so
there is at most one); otherwise it raises :class:`DecodeError`. In particular it *always*
recovers ``A`` when ``|A Δ B| ≤ t``, and it never returns a set whose sketch differs from
``S``: every failure the algebra can see (locator longer than t, a zero, repeated or
out-of-field root, fewer roots than its degree, roots whose power sums disagree with the
syndromes) is a :class:`DecodeError`. The one case no decoder can detect: when
``|A Δ B| > t`` but some *other* set ``A'`` within distance t of B has the same sketch
(necessarily ``|A Δ A'| ≥ 2t + 1``), ``A'`` is returned — it is a valid decoding of ``S``
and B; the enrolment hash check rejects it. For random B far from A this happens with
probability about ``(Σ_{k≤t} C(2^m−1, k)) / 2^(t·m) ≈ 1/t!`` (``2^-15.3`` at ``t = 8``,
``2^-44`` at ``t = 16``; but about 1 at ``t = 1``, where every syndrome is some single element) —
small for useful t and checked by the tests on tiny parameters.

**Accounting.** No randomness; ``S`` takes ``2^(t·m)`` values whenever the odd exponents
``1, 3, …, 2t−1`` lie in distinct cyclotomic cosets of full size m modulo ``2^m − 1``, which
holds exactly when ``t ≤ 2^(⌈m/2⌉−1)`` (t ≤ 8 at m = 8, t ≤ 128 at m = 16, every allowed t from
m = 17 on), so the loss is at most
``t·m`` bits (optimal). For larger t relative to m some syndromes are fixed by others
(``s_i = s_j^(2^k)``) or live in a subfield; :meth:`PinSketch.report` then gives the exact
``|S|`` (the BCH redundancy, below ``t·m``) and payloads violating those relations are
rejected as malformed.

**Inputs and outputs.** Sets are whatever collection of integers the caller holds: a Python
``set`` or ``frozenset``, a list or tuple, ``dict.keys()``, a generator (read once), numpy
integer arrays or galois ``FieldArray`` s (their integer representation is used; the
polynomial basis of the caller's field does not matter, elements are labels). 0,
out-of-range elements, duplicates, sets with more than ``2^m − 1`` elements and things that
are not collections of integers (a ``str``, ``bytes``, a mapping, a lone number, nested lists,
booleans, non-integral floats) raise :class:`SampleError` saying what to pass. Decode returns
the recovered set as a **sorted numpy int64 array** (``uint64`` at m = 64, whose elements reach
``2^64 − 1``; an int64 array would wrap the upper half to negative numbers). ``encode_many`` / ``decode_many`` take
any iterables of such sets (and of helpers).

Example::

    >>> sk = PinSketch(m=16, t=4)
    >>> helper = sk.encode({3, 70, 1000, 2024, 65535})
    >>> sk.decode(helper, [3, 70, 1001, 2024, 65535, 9]).tolist()   # 3 differences
    [3, 70, 1000, 2024, 65535]
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from sketchauth._lazy import LazyModule
from sketchauth.errors import DecodeError, ParameterError, SketchFormatError
from sketchauth.sketches._backend import native_module
from sketchauth.sketches._backend import resolve as resolve_backend
from sketchauth.sketches.base import (
    EntropyReport,
    ErrorPolicy,
    SchemeDescriptor,
    SecureSketch,
    SymbolSpace,
    check_batch,
)
from sketchauth.sketches.format import record_head
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int
from sketchauth.sketches.samples import as_collection, as_element_set
from sketchauth.sketches.types import ElementSet

if TYPE_CHECKING:
    from sketchauth.sketches import _gf2m
else:  # the field arithmetic (the package's largest module) is loaded by a sketch's first use
    _gf2m = LazyModule("sketchauth.sketches._gf2m")

__all__ = ["MAX_T", "PinSketch"]

#: Largest supported t. Decoding costs O(t² log t) scalar field operations and the root
#: finder's squaring matrix holds m·t² words (16 MiB at m = 32, t = 256), so a helper record
#: announcing a huge t must not be able to buy seconds of CPU or gigabytes of memory.
MAX_T = 256

#: The field degrees supported: ``_gf2m.MIN_M`` and ``_gf2m.MAX_M``, repeated here so that the
#: parameters below do not load the field arithmetic at import (a test holds them equal).
MIN_M, MAX_M = 8, 64


def _cyclotomic_relations(m: int, t: int) -> tuple[list[tuple[int, int, int]], list[tuple[int, int]], int]:
    """Relations among the odd power sums of GF(2^m) sets, and ``|S|`` in bits.

    Returns ``(dependent, subfield, bits)``: ``dependent`` lists ``(k, j, e)`` meaning
    ``s_(2k+1) = s_(2j+1)^(2^e)``; ``subfield`` lists ``(k, c)`` meaning ``s_(2k+1)`` lies in
    GF(2^c) (its cyclotomic coset has size ``c < m``); ``bits`` is the sum of the coset sizes of
    the independent exponents, the exact dimension of the syndrome space over GF(2).
    """
    n = (1 << m) - 1
    top = 2 * t  # only odd members below 2t are ever looked up: only they are recorded
    first_seen: dict[int, tuple[int, int]] = {}  # coset member -> (index k, power e)
    dependent: list[tuple[int, int, int]] = []
    subfield: list[tuple[int, int]] = []
    bits = 0
    for k in range(t):
        i = 2 * k + 1
        if i in first_seen:
            j, e = first_seen[i]
            dependent.append((k, j, e))
            continue
        member, size = i, 0
        while True:
            if member & 1 and member < top:
                first_seen.setdefault(member, (k, size))
            member = (member * 2) % n
            size += 1
            if member == i:
                break
        bits += size
        if size < m:
            subfield.append((k, size))
    return dependent, subfield, bits


#: The parameters and their limits (published as they are by the service).
PARAMETERS = ParameterSpec.of(
    Parameter("m", "int", "field GF(2^m): elements are 1..2^m - 1", low=MIN_M, high=MAX_M),
    Parameter("t", "int", "set difference tolerated, |A symmetric-difference B| <= t < 2^(m-1)", low=1, high=MAX_T),
)


def _default_sweep(params: Mapping[str, Any]) -> list[int]:
    """Set differences tolerated, from tight to loose."""
    return [2, 4, 8, 12, 16, 24]


def _small_instance(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """GF(2^8), t = 1 (the sketch is the XOR of the elements): every subset of {1..8} of at most
    two elements, 37 secrets."""
    sets: list[list[int]] = (
        [[]] + [[a] for a in range(1, 9)] + [list(c) for c in itertools.combinations(range(1, 9), 2)]
    )
    return {"m": 8, "t": 1}, sets


#: Bytes of a record's digest (the format's BLAKE2b-128).
_DIGEST = 16


class _FastPath:
    """A sketch's compiled field, its records' fixed header (through the payload length) with the
    digest state after it, the record length before the digest, and whether the extension draws
    the trace multiplier itself (``getentropy``).

    A plain class, not a dataclass: it is never compared or shown, and a frozen dataclass costs
    about half a millisecond to create at import."""

    __slots__ = ("core", "entropy", "hasher", "head", "size")

    def __init__(self, core: Any, head: bytes, hasher: Any, size: int, entropy: bool) -> None:
        self.core = core
        self.head = head
        self.hasher = hasher
        self.size = size
        self.entropy = entropy


class PinSketch(SecureSketch[ElementSet, ElementSet]):
    """PinSketch over GF(2^m) correcting set differences of up to ``t`` elements.

    ``backend`` selects the field arithmetic for this object: ``"auto"`` (the compiled kernels
    when the package was installed with a C compiler, see :func:`sketchauth.sketches.backend`),
    ``"native"`` or ``"numpy"``. It never changes results or the helper format, so it is not a
    parameter of the helper data.
    """

    descriptor = SchemeDescriptor(
        name="pinsketch",
        sample_kind="set",
        summary="PinSketch, BCH syndromes over GF(2^m) (Dodis-Ostrovsky-Reyzin-Smith): close iff the sets differ "
        "in at most t elements",
        parameters=PARAMETERS,
        min_element=1,
        sweep="t",
        default_sweep=_default_sweep,
        small_instance=_small_instance,
        linkage_attacks={"pinsketch": "difference-decoding"},
        repeated_attacks={"pinsketch": "difference-decoding"},
        example=({"m": 16, "t": 4}, [[3, 70, 1000, 2024, 65535]], [3, 70, 1001, 2024, 65535, 9]),
    )

    def __init__(self, m: int, t: int, *, backend: str = "auto") -> None:
        self._m = check_int("m", m, MIN_M, MAX_M)
        self._t = check_int("t", t, 1, min(MAX_T, (1 << (self._m - 1)) - 1))
        self.backend = resolve_backend(backend)
        self._width = (self._m + 7) // 8
        self._dependent, self._subfield, self._bits = _cyclotomic_relations(self._m, self._t)
        self._field: _gf2m.BinaryField | None = None
        self._fast: _FastPath | None = None

    @property
    def m(self) -> int:
        """The field degree (read-only: helper records and cached headers depend on it)."""
        return self._m

    @property
    def t(self) -> int:
        """The set difference tolerated (read-only, like :attr:`m`)."""
        return self._t

    @property
    def field(self) -> _gf2m.BinaryField:
        """The GF(2^m) arithmetic (built on first use: numpy tables cost a few ms)."""
        if self._field is None:
            self._field = _gf2m.binary_field(self.m, backend=self.backend)
        return self._field

    def __getstate__(self) -> dict[str, Any]:
        """Pickle without the field arithmetic (a compiled object that cannot be pickled; it is
        rebuilt on first use), so a sketch can be sent to worker processes (``--jobs``)."""
        state = self.__dict__.copy()
        state["_field"] = None
        state["_fast"] = None
        return state

    # -- the fast public calls ---------------------------------------------------------------------
    def _fast_path(self) -> _FastPath | None:
        """What one-call encodes and decodes need (compiled kernels, this class exactly: a
        subclass may change :meth:`params` and so its records); built on first use."""
        if self._fast is None and self.field.backend == "native" and type(self) is PinSketch:
            prefix, own = self._helper_prefix()
            if own:
                head, hasher = record_head(prefix, self._t * self._width)
                core = cast(Any, self.field)._core
                entropy = bool(native_module().cpu_features()["entropy"])
                self._fast = _FastPath(core, head, hasher, len(head) + self._t * self._width, entropy)
        return self._fast

    def encode(self, secret: ElementSet) -> bytes:
        """Helper data for the set ``secret`` (see :meth:`SecureSketch.encode`).

        The sets callers usually hold (an exact ``list``, ``tuple``, ``set`` or ``frozenset`` of
        ``int``, or a contiguous 64-bit integer numpy vector) are validated and summed in one
        compiled call, and the record is written from its cached header; anything else, and any
        defect, takes the general path, which alone words the refusal.
        """
        fast = self._fast or self._fast_path()
        if fast is not None:
            payload = fast.core.encode_plain(secret, self._t, self._width)
            if payload is not None:
                digest = fast.hasher.copy()
                digest.update(payload)
                record: bytes = fast.head + payload + digest.digest()
                return record
        return super().encode(secret)

    def decode(self, helper: bytes, sample: ElementSet) -> np.ndarray:
        """The enrolled set from helper data and a close sample (see :meth:`SecureSketch.decode`).

        A record of this very sketch (its header byte for byte, the fixed length, the digest)
        with a plain sample (as in :meth:`encode`) is decoded in one compiled call, the random
        trace multiplier drawn there from the operating system; anything else goes through the
        general parser and validation, which give every error its wording.
        """
        fast = self._fast or self._fast_path()
        if (
            fast is not None
            and type(helper) is bytes
            and len(helper) == fast.size + _DIGEST
            and helper.startswith(fast.head)
        ):
            start, end = len(fast.head), fast.size
            digest = fast.hasher.copy()
            digest.update(helper[start:end])
            if digest.digest() == helper[end:]:  # the payload is checked in the call, as _check_payload does
                beta = None if fast.entropy else _gf2m.random_multiplier(self.field)
                try:
                    words = fast.core.decode_plain(helper, start, self._width, self._t, sample, beta)
                except DecodeError:
                    raise DecodeError(self._too_far) from None
                if words is not None:
                    return np.frombuffer(words, dtype=self._dtype)
        return cast(np.ndarray, super().decode(helper, sample))

    def params(self) -> dict[str, Any]:
        return {"m": self.m, "t": self.t}

    # -- secrets ------------------------------------------------------------------------------------
    @property
    def _dtype(self) -> type[np.integer[Any]]:
        """The recovered sets' integers: uint64 at m = 64 (elements up to 2^64 − 1), else int64."""
        return np.uint64 if self._m == 64 else np.int64

    def _as_set(self, elements: Any, name: str) -> np.ndarray:
        return as_element_set(elements, 1, 1 << self.m, max_size=(1 << self.m) - 1, name=name)

    def check_secret(self, secret: Any) -> np.ndarray:
        """The secret as a sorted int64 array of distinct non-zero field elements (uint64 at m = 64)."""
        return self._as_set(secret, "secret")

    def secret_bytes(self, secret: Any) -> bytes:
        """Sorted elements, each as a big-endian word of ``⌈m/8⌉`` bytes."""
        return self._pack(self.check_secret(secret).astype(np.uint64))

    # -- payload words ------------------------------------------------------------------------------
    def _pack(self, words: np.ndarray) -> bytes:
        return _gf2m.pack_words(words, self._width)

    def _unpack(self, payload: bytes) -> np.ndarray:
        if len(payload) != self.t * self._width:
            raise SketchFormatError(f"PinSketch payload must be {self.t * self._width} bytes, got {len(payload)}")
        return _gf2m.unpack_words(payload, self._width)

    # -- encode / decode ------------------------------------------------------------------------------
    def _encode_payload(self, secret: np.ndarray, randomness: Any) -> bytes:
        if randomness is not None:
            raise ParameterError("PinSketch is deterministic: randomness must be None")
        return _gf2m.odd_power_sums_packed(self.field, secret, self.t, self._width)

    def _check_payload(self, payload: bytes) -> None:
        if len(payload) == self.t * self._width and self._every_word_valid:
            return  # full-width words, no relations: every payload of this length is a sketch
        syndromes = self._unpack(payload)
        if self.m != 8 * self._width and np.any(syndromes >> np.uint64(self.m)):
            raise SketchFormatError(f"PinSketch syndrome wider than {self.m} bits")
        self._check_relations(syndromes)

    @property
    def _every_word_valid(self) -> bool:
        """Whether every ``t``-word payload is a possible sketch: words as wide as the field
        (``m = 8·width``: no out-of-range value) and syndromes free of cyclotomic relations."""
        return self.m == 8 * self._width and not (self._dependent or self._subfield)

    def _check_relations(self, syndromes: np.ndarray) -> None:
        if not (self._dependent or self._subfield):
            return
        field = self.field
        s = [int(v) for v in syndromes]
        for k, j, e in self._dependent:
            if s[k] != field.pow(s[j], 1 << e):
                raise SketchFormatError("PinSketch syndromes violate a cyclotomic relation")
        for k, c in self._subfield:
            if field.pow(s[k], 1 << c) != s[k]:
                raise SketchFormatError("PinSketch syndrome outside its subfield")

    def _decode_payload(self, payload: bytes, sample: Any) -> np.ndarray:
        if len(payload) != self.t * self._width:
            self._unpack(payload)  # raises the length error
        sample_set = self._as_set(sample, "sample")
        try:
            return _gf2m.decode_payload(self.field, payload, self._width, sample_set)
        except DecodeError:
            raise DecodeError(self._too_far) from None

    def _recover(self, syndromes: np.ndarray, sample: np.ndarray, sample_sums: np.ndarray) -> np.ndarray:
        """``A = B Δ D`` where D is the unique set of ≤ t elements with the given power sums."""
        try:
            return _gf2m.recover_set(self.field, syndromes ^ sample_sums, sample)
        except DecodeError:
            raise DecodeError(self._too_far) from None

    @property
    def _too_far(self) -> str:
        return f"the sample differs from the enrolled set in more than {self.t} elements"

    # -- batches ------------------------------------------------------------------------------------
    def encode_many(self, secrets: Iterable[Any]) -> list[bytes]:
        """Helper data for many sets (any iterable of them); power sums of all sets in one vectorised pass."""
        sets = [self.check_secret(s) for s in as_collection(secrets, "secrets", what="sets", ordered=True)]
        if not sets:
            return []
        lengths = np.array([s.size for s in sets], dtype=np.int64)
        sums = _gf2m.odd_power_sums_segments(self.field, np.concatenate(sets), lengths, self.t)
        return [self._wrap(self._pack(row)) for row in sums]

    def decode_many(
        self, helpers: Iterable[bytes], samples: Iterable[Any], *, errors: ErrorPolicy = "raise"
    ) -> list[Any]:
        """Decode many (helper, sample) pairs; the samples' power sums in one vectorised pass.

        One entry per pair: the recovered set (sorted int64 array). A sample too far from its
        set raises :class:`DecodeError` with ``errors="raise"``; with ``errors="return"`` the
        list holds that ``DecodeError`` instance in its place, so evaluation can count failures
        without losing the batch (the same policy as the vaults). Malformed helpers or samples
        raise at once (``SketchFormatError`` / ``SampleError``).
        """
        helpers, samples = check_batch(helpers, samples, errors)
        syndromes = [self._unpack(self.payload(h)) for h in helpers]
        sets = [self._as_set(s, "sample") for s in samples]
        if not sets:
            return []
        lengths = np.array([s.size for s in sets], dtype=np.int64)
        sample_sums = _gf2m.odd_power_sums_segments(self.field, np.concatenate(sets), lengths, self.t)
        results: list[Any] = []
        for s, b, sb in zip(syndromes, sets, sample_sums, strict=False):
            try:
                results.append(self._recover(s, b, sb))
            except DecodeError as exc:
                if errors == "raise":
                    raise
                results.append(exc)
        return results

    def syndromes(self, helper: bytes) -> np.ndarray:
        """The syndromes ``s_1, s_3, …, s_2t−1`` carried by ``helper`` (uint64)."""
        return self._unpack(self.payload(helper))

    # -- accounting ------------------------------------------------------------------------------------
    def report(self) -> EntropyReport:
        nominal = self.t * self.m
        notes = [f"BCH syndrome sketch over GF(2^{self.m}): {self.t} odd power sums, deterministic"]
        if self._bits < nominal:
            notes.append(
                f"t={self.t} is large for m={self.m}: some power sums are fixed by others, "
                f"|S| = {self._bits} bits < t·m = {nominal}"
            )
        else:
            notes.append("loss <= t·m = t·log2(N+1) bits, optimal for set difference")
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=float(self._bits),
            randomness_bits=0.0,
            notes=notes,
            extra={"m": self.m, "t": self.t, "nominal_bits": nominal},
        )

    # -- symbols (for mixing) ---------------------------------------------------------------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        """The t syndromes as m-bit words (XOR group). Only for ``|S| = t·m``: otherwise the
        syndromes are not a free group and a pad would produce impossible sketches."""
        if self._bits != self.t * self.m:
            raise ParameterError(
                f"PinSketch(m={self.m}, t={self.t}) syndromes are not independent; it cannot be mixed "
                "format-preservingly (use a larger m)"
            )
        return self._unpack(payload), SymbolSpace("xor", bits=self.m)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        return self._pack(symbols)
