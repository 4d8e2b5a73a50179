"""Angular sketch of unit-norm embeddings: a random rotation onto a sparse spherical codeword (IronMask).

Kim et al., "IronMask: Modular Architecture for Protecting Deep Face Template", CVPR 2021, §3–4.
Deep face and voice models output float vectors compared by the angle between them; this family
protects such a vector without quantising any coordinate.

**Code.** ``C_α`` is the set of unit vectors of ``R^n`` with exactly ``α`` non-zero entries, each
``±1/√α``: ``|C_α| = C(n, α)·2^α`` codewords (``n = 512``: ``α = 8`` gives 64.6 bits, ``α = 16``
115.4; ``n = 192``, ``α = 8``: 53.2). The nearest codeword to any ``y`` (largest ``⟨y, c⟩``) is
read off by sorting: the ``α`` largest ``|y_i|``, with their signs (Kim et al. §4.2).

**Enc(t).** ``t ← t/‖t‖``; draw a uniform codeword ``c`` and the helper ``R`` Haar-distributed on
``{R ∈ O(n) : R t = c}`` (Kim et al. §4.1 take ``R = Q_c·diag(1, U)·Q_t`` with ``U`` Haar on
``O(n − 1)`` and ``Q_x`` the reflection exchanging ``e_1`` and ``x``; a QR of an ``n × n``
Gaussian matrix, ``O(n³)``, 1.1–1.3 s wall at ``n = 512`` on a loaded 2-core machine with
OpenBLAS's threads). The same distribution is drawn here in ``O(n²)``, directly as Householder
factors (:mod:`sketchauth.sketches._rotation`): every ``R ∈ O(n)`` is uniquely
``R = diag(r)·H_0 ⋯ H_{n−2}·diag(s)`` (the QR factorisation of ``R``; ``H_k`` a reflection of
coordinates ``k..n−1`` with vector ``(1, w_k)``, ``|w_k,i| ≤ 1``; ``r, s ∈ {±1}^n``). With ``r``
uniform and ``R0 = diag(r)·R``, ``R0`` must be Haar on ``{R0 : R0 t = r∘c}``; its first column
``x`` is then uniform among unit vectors with ``⟨x, r∘c⟩ = t_0``, and given ``x`` the trailing
block is Haar on ``O(n − 1)`` under the constraint left for ``t_{1:}`` — the subgroup algorithm
(Diaconis and Shahshahani 1987, §2; Stewart 1980, §3, without the constraint), one column at a
time, ``O(n − k)`` work for column ``k``. So ``R t = c`` (to float64 precision before storage) and,
given ``(t, c)``, ``R`` is Haar-distributed on ``{R : R t = c}``, exactly as IronMask's. For a
template ``t`` uniform on the sphere ``R`` is then Haar on ``O(n)`` whatever ``c`` is: the helper
alone leaves every codeword equally possible. (A compact "shift" helper — a single reflection
``v = s − c`` or any ``O(n)`` offset — would publish the support of ``c`` in its large
coordinates; it is not used: the stored factors are a function of ``R`` alone, below.) The
recovered secret is the codeword, a :class:`Codeword`; the stored hash and any released key are
derived from it (and the enrolment salt) only. All randomness comes from :func:`os.urandom`
(the Gaussians) and :mod:`secrets` (codeword, ``r``); never a seed.

**Stored form** (:func:`sketchauth.sketches._rotation.pack`): the ``n(n−1)/2`` coordinates
``w_k,i`` as big-endian ``int16``, ``round(2^15·w)``, then the ``n`` bits of ``s`` and of ``r``:
``n(n−1) + 2⌈n/8⌉`` bytes (261,760 at ``n = 512``, 49.9% of the 524,288 of a dense ``int16``
matrix; an orthogonal matrix has ``n(n−1)/2`` degrees of freedom, so two bytes each is the same
precision per degree of freedom as before). **Security of the stored form:** it is a
deterministic function ``F(R)`` of the Haar helper ``R`` (the Householder factors of ``R`` are
unique, and rounding is a fixed map), so for any template distribution it tells an attacker at
most what ``R`` tells (data processing: ``I(c; F(R)) ≤ I(c; R)``, ``H∞(c | F(R)) ≥ H∞(c | R)``);
for a uniform template both are independent of ``c``. It holds no seed: nothing in it regenerates
the draw. **Decoding** uses ``R' = diag(r)·H'_0 ⋯ H'_{n−2}·diag(s)`` with the stored (rounded)
vectors — a product of exact reflections, so ``R'`` is orthogonal for *any* payload — in fixed
point ``R̂ = round(2^14 · R')``, the dense representation of the previous helper format, on which
decoding is unchanged. :meth:`AngularSketch.decode` does not expand ``R̂`` (``O(n³)``, four times
the whole decode at ``n = 512``): it applies the reflections to the probe (``O(n²)``), which places
every ``(R̂p̂)_i`` within ``(½ + 2^−12)·Σ|p̂_j|`` of the result (``½`` per entry of ``R̂``, the rest for float64
error), and computes exact rows of ``R̂`` only where the decision can depend on them — the ``α``
largest and the few within that bound of the ``α``-th — reaching the decision of the expanded
``R̂`` on every probe (:meth:`AngularSketch._rotated_where_it_matters`); it expands (blocked, under
one BLAS thread) only when that cannot be certified (about 2% of probes at ``n = 512``,
:file:`benchmarks/bench_angular_enrol.py`). The polar family's list decoder reads every
coordinate of ``R̂p̂`` exactly, so that family, and the vectorised deciders (many probes per
helper), expand ``R̂``. Rounding moves ``R' t`` from ``c`` by ``≈ 3·10^−4`` at ``n = 512``
(:file:`benchmarks/bench_angular_enrol.py` measures it), the same order as the dense format's
``int16`` entries. Dense helpers (``2n²`` bytes, ``R̂`` itself) are still read, told apart by
their length (``2n² ≠ n(n−1) + 2⌈n/8⌉`` for every ``n ≥ 2``).

**Fixed point.** Entries of an orthogonal matrix lie in ``[−1, 1]``, so ``R̂``'s absolute error is
at most ``2^−15`` and ``‖R̂/2^14 − R'‖₂ ≈ 10^−3``, far below the angles that separate people. Fixed
point rather than ``float16``: the probe is quantised to integers too (:func:`quantise_probe`:
scaled by a power of two so its largest coordinate has 24 bits, then rounded), so
``y = R̂ p̂`` is a vector of integers below ``2^53`` that float64 arithmetic computes *exactly*,
in any order — the decoder and the vectorised decider of :mod:`sketchauth.evaluate.deciders`
reach bit-identical decisions on every CPU, given ``R̂``. (``R̂`` itself is rounded from a
float64 product: a platform whose BLAS sums in another order moves an entry across a rounding
boundary with probability about ``2^−38`` per entry.)

**Dec(p).** ``y = R̂ p̂``; ``c'`` = the ``α`` largest ``|y_i|`` with their signs. **Exact decoding
condition** (the margin): ``Dec`` returns ``c`` iff

    ``min_{i ∈ supp c} sign(c_i)·y_i  >  max_{j ∉ supp c} |y_j|``;

a tie between the ``α``-th and ``(α+1)``-th largest ``|y_i|`` is refused (:class:`DecodeError`),
so the rule has no boundary case left to chance. Guaranteed angle: codewords are at least
``√(2/α)`` apart, so every probe within angle ``θ`` of ``t`` with ``2 sin(θ/2) < 1/√(2α)``
decodes (the packing radius of ``C_α``; a fixed-point ``R̂`` moves it by ``≈ 10^−3``). With
``min_cos = τ > 0`` a decoded ``c'`` is also refused unless ``cos(p, R̂ᵀc') ≥ τ``, i.e.
``Σ_{i ∈ supp c'} |y_i| ≥ τ·√α·2^14·‖p̂‖``, checked in exact integer arithmetic: the FMR knob
between the codes' discrete steps. After a successful decode ``R̂ᵀc' ≈ t``, so this is the
unprotected cosine matcher, restricted to probes the code decodes.

**Untrusted helpers.** A compact payload must be exactly ``n(n−1) + 2⌈n/8⌉`` bytes with zero
padding bits; any coordinates give reflections, so its ``R'`` is orthogonal by construction, and
its cost is fixed by ``n`` (the sketch's parameter), not by the payload. A dense payload must be
exactly ``n²`` ``int16`` values; every row must have
unit norm within ``10^−3`` and ``R̂R̂ᵀ/2^28`` must act as the identity on fresh random vectors
(:data:`ORTHOGONALITY_PROBES` Gaussian columns drawn per load, relative error at most
:data:`ORTHOGONALITY_TOLERANCE`; a full ``R̂R̂ᵀ`` would cost ``n³``, ~5 ms at ``n = 512``): a
rank-deficient "accept anyone" matrix fails this with overwhelming probability.

**Accounting** (:meth:`AngularSketch.report`): ``|S| = 8·(n(n−1) + 2⌈n/8⌉)`` bits and the recoverable discrete
randomness is the codeword, ``log2 |C_α|`` bits, so the sketch bound ``|S| − H∞(R)`` is vacuous;
the figures that matter are named in ``extra`` (the codebook work against one helper without a
matching sample, and the conditions under which it holds) and measured in
``benchmarks/bench_angular.py`` (prior-guided ranking, population attack, linkage).

Example::

    >>> import numpy as np
    >>> sk = AngularSketch(dimension=64, alpha=4)
    >>> t = np.random.default_rng(1).normal(size=64)
    >>> helper = sk.encode(t)
    >>> probe = t + 0.2 * np.random.default_rng(2).normal(size=64)
    >>> secret = sk.decode(helper, probe)
    >>> int(np.count_nonzero(secret)), secret.dtype.name
    (4, 'int8')
"""

from __future__ import annotations

import copy
import math
import os
import secrets as _secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Self, cast

import numpy as np

from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches import _rotation
from sketchauth.sketches.base import EntropyReport, SchemeDescriptor, SecureSketch, SymbolSpace
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int
from sketchauth.sketches.samples import as_collection
from sketchauth.sketches.types import FeatureVector

__all__ = [
    "ORTHOGONALITY_PROBES",
    "ORTHOGONALITY_TOLERANCE",
    "PROBE_BITS",
    "SCALE_BITS",
    "AngularRandomness",
    "AngularSketch",
    "Codeword",
    "cap_fraction",
    "codebook_bits",
    "decoding_margin",
    "mean_direction",
    "packing_limit_cos",
    "probe_matrix",
    "quantise_probe",
]

#: Largest dimension: ``2n²`` bytes of helper (8 MiB at 2048) and exact integer arithmetic
#: (``2^14 · n · 2^24 < 2^53``).
MAX_DIMENSION = 2048
#: Smallest dimension (at least one coordinate off every support).
MIN_DIMENSION = 2
#: Fixed-point bits of the stored matrix: ``R̂ = round(2^14 · R)`` (``int16``).
SCALE_BITS = 14
_SCALE = 1 << SCALE_BITS
#: Bits of the probe's largest coordinate after quantisation (:func:`quantise_probe`).
PROBE_BITS = 24
#: Row norms of a loaded helper must be within this of 1 (quantisation moves them ~4e-5).
ROW_NORM_TOLERANCE = 1e-3
#: Relative error ``‖(R̂R̂ᵀ/2^28 − I)x‖ / ‖x‖`` allowed on each random vector ``x`` (a valid
#: helper is near 6e-4 at ``n = 512``, 1.2e-3 at 2048).
ORTHOGONALITY_TOLERANCE = 1e-2
#: Gaussian vectors of the per-load orthogonality check (each refuses a bad helper on its own).
ORTHOGONALITY_PROBES = 4
#: The fast decoder computes at most this many exact rows per codeword entry, and at most ``n/2`` (``2n²``
#: flops a row against ``4n³/3`` for the whole ``R̂``); beyond, it expands ``R̂``.
_EXACT_ROWS_LIMIT = 4

PARAMETERS = ParameterSpec.of(
    Parameter("dimension", "int", "length n of every embedding", low=MIN_DIMENSION, high=MAX_DIMENSION),
    Parameter(
        "alpha",
        "int",
        "non-zero entries of each codeword (alpha < dimension): log2(C(n, alpha) * 2^alpha) bits; "
        "a probe decodes iff its alpha largest rotated coordinates are the codeword's, with its signs",
        low=1,
        high=MAX_DIMENSION - 1,
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


def codebook_bits(dimension: int, alpha: int) -> float:
    """``log2(C(n, α) · 2^α)``, the size of the code ``C_α`` in bits (exact to float precision).

    >>> round(codebook_bits(512, 8), 1), round(codebook_bits(512, 16), 1), round(codebook_bits(192, 8), 1)
    (64.6, 115.4, 53.2)
    """
    return math.log2(math.comb(dimension, alpha)) + alpha


def cap_fraction(dimension: int, cos: float) -> float:
    """Area of the spherical cap ``{x : ⟨x, e⟩ ≥ cos}`` over the area of ``S^(n−1)``.

    ``∫_0^θ sin^(n−2)φ dφ / ∫_0^π sin^(n−2)φ dφ`` with ``θ = arccos(cos)``, by the trapezoidal rule
    on 200,001 points in log space (relative error far below what the bounds need).
    """
    theta = math.acos(max(-1.0, min(1.0, cos)))
    phi = np.linspace(0.0, theta, 200_001)[1:]
    log_w = (dimension - 2) * np.log(np.sin(phi))
    top = float(log_w.max())
    weights = np.exp(log_w - top)
    area = float(((weights[1:] + weights[:-1]) * np.diff(phi)).sum() / 2.0)
    norm = 0.5 * math.log(math.pi) + math.lgamma((dimension - 1) / 2) - math.lgamma(dimension / 2)
    return math.exp(math.log(area) + top - norm) if area > 0 else 0.0


def packing_limit_cos(dimension: int, bits: float) -> float:
    """The largest ``cos θ`` such that ``2^bits`` disjoint cells can each hold a cap of angle ``θ``.

    A code with ``2^k`` cells on ``S^(n−1)`` cannot give every cell the cap of angle ``θ`` unless the
    cap's area fraction is at most ``2^−k``; so no ``k``-bit code decodes *every* probe within ``θ``
    of its template beyond this angle, and (Hardy–Littlewood rearrangement) for probe noise that is
    isotropic around the template with a density decreasing in the angle, the cap is the cell of
    area ``2^−k`` that decodes most often: ``FNMR ≥ Pr[cos(t, p) < packing_limit_cos(n, k)]``.

    >>> round(packing_limit_cos(512, 64), 3), round(packing_limit_cos(192, 64), 3)
    (0.386, 0.593)
    """
    target = -bits * math.log(2.0)
    lo, hi = 0.0, 1.0  # cap_fraction decreases in cos
    for _ in range(50):
        mid = (lo + hi) / 2.0
        fraction = cap_fraction(dimension, mid)
        if fraction > 0 and math.log(fraction) > target:
            lo = mid
        else:
            hi = mid
    return lo


class Codeword(np.ndarray):
    """A codeword of ``C_α`` as its signed support: an ``int8`` vector with ``α`` entries ``±1``.

    The codeword itself is this vector divided by ``√α``. :meth:`AngularSketch.decode` returns
    one; :meth:`AngularSketch.check_secret` returns one that also carries the enrolled template
    (``template``, kept only until the helper is made: it is never written anywhere).
    """

    template: np.ndarray | None = None

    def __array_finalize__(self, obj: Any) -> None:
        # Views and slices are not enrolment secrets: they never carry a template.
        self.template = None


@dataclass(frozen=True, slots=True)
class AngularRandomness:
    """The encoder's randomness: the codeword (``Codeword`` without template), the standard normals
    of the conditioned Householder draw (``n(n+1)/2`` of them) and the ``n`` row signs ``±1``."""

    codeword: np.ndarray
    gaussians: np.ndarray
    row_signs: np.ndarray


def _direction(x: Any, n: int, name: str) -> np.ndarray:
    """``x`` as a finite float64 vector of ``n`` real numbers with a direction (not the zero vector).

    Any ordered collection of numbers (list, tuple, generator read once, numpy array of any real
    dtype); sets, strings, mappings, booleans, complex values and nested rows are refused with
    :class:`SampleError`. Messages name positions only, never values (they are biometric data).
    """
    items = as_collection(x, name, what="numbers", ordered=True, max_size=n)
    try:
        arr = np.asarray(items)
    except (TypeError, ValueError):
        raise SampleError(f"{name} is not a vector of numbers") from None
    if arr.dtype.kind not in "iuf":
        raise SampleError(f"{name} must contain real numbers, got dtype {arr.dtype}")
    if arr.ndim != 1 or arr.shape[0] != n:
        raise SampleError(f"{name} must be an embedding of {n} numbers, got shape {arr.shape}")
    arr = arr.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(arr))
    if bad.size:
        raise SampleError(f"{name} has a NaN or infinite value at coordinate {int(bad[0])}")
    if not np.any(arr):
        raise SampleError(f"{name} is the zero vector: it has no direction to compare by angle")
    return arr


def quantise_probe(p: np.ndarray) -> np.ndarray:
    """Probes as integers: ``round(p · 2^(24 − e))``, ``2^(e−1) ≤ max|p_i| < 2^e``, along the last axis.

    Scaling by a power of two is exact and the decision depends only on the probe's direction, so
    this keeps 24 bits of the largest coordinate and makes ``R̂ p̂`` exact in float64. A matrix is
    quantised row by row with the very same element-wise arithmetic (the vectorised decider's path).

    >>> quantise_probe(np.array([0.5, -0.25, 1e-9])).tolist()
    [8388608.0, -4194304.0, 0.0]
    """
    _, exponent = np.frexp(np.max(np.abs(p), axis=-1, keepdims=True))
    return cast("np.ndarray", np.rint(np.ldexp(p, PROBE_BITS - exponent)))


def probe_matrix(rows: Any, dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """``(P̂, malformed)``: quantised probes (zero rows where malformed) and which rows are malformed.

    A row is malformed where :meth:`AngularSketch.decode` would raise :class:`SampleError`: not
    ``dimension`` real numbers, NaN/inf, or the zero vector.
    """
    try:
        arr = np.asarray(rows)
    except (TypeError, ValueError):  # ragged rows
        arr = np.zeros(0, dtype=object)
    if arr.dtype.kind in "iuf" and arr.ndim == 2 and arr.shape[1] == dimension:
        arr = arr.astype(np.float64)
        bad = ~np.all(np.isfinite(arr), axis=1) | ~np.any(arr != 0, axis=1)
        clean = np.where(bad[:, None], 1.0, arr)
        return np.where(bad[:, None], 0.0, quantise_probe(clean)), bad
    out, bad_rows = np.zeros((len(rows), dimension)), np.zeros(len(rows), dtype=bool)
    for k, row in enumerate(rows):
        try:
            out[k] = quantise_probe(_direction(row, dimension, "sample"))
        except SampleError:
            bad_rows[k] = True
    return out, bad_rows


def decoding_margin(y: np.ndarray, codeword: np.ndarray) -> np.ndarray:
    """``min_{i ∈ supp} sign·y_i − max_{j ∉ supp} |y_j|`` per row of ``y``: decode succeeds iff > 0.

    ``y`` is ``(..., n)`` (rotated probes), ``codeword`` the signed support (``n`` entries in
    ``{−1, 0, 1}``).
    """
    c = np.asarray(codeword)
    support = c != 0
    inside = (y[..., support] * c[support]).min(axis=-1)
    outside = np.abs(y[..., ~support]).max(axis=-1)
    return cast("np.ndarray", inside - outside)


def _gaussian_matrix(rows: int, cols: int) -> np.ndarray:
    """Standard normal entries from :func:`os.urandom` (Box–Muller on 53-bit uniforms)."""
    count = rows * cols
    half = (count + 1) // 2
    words = np.frombuffer(os.urandom(16 * half), dtype=np.uint64).reshape(2, half) >> np.uint64(11)
    u1 = (words[0].astype(np.float64) + 1.0) / 2.0**53  # (0, 1]: log is finite
    u2 = words[1].astype(np.float64) / 2.0**53
    radius = np.sqrt(-2.0 * np.log(u1))
    normals = np.concatenate([radius * np.cos(2 * np.pi * u2), radius * np.sin(2 * np.pi * u2)])
    return normals[:count].reshape(rows, cols)


def haar_orthogonal(size: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """A Haar-distributed matrix of ``O(size)``: QR of an :func:`os.urandom` Gaussian matrix, signs fixed
    (Mezzadri, "How to generate random matrices from the classical compact groups", 2007, §5).

    ``rng``: a seeded generator instead, for simulations only (never for a stored helper).
    """
    if size == 0:
        return np.zeros((0, 0))
    gaussian = _gaussian_matrix(size, size) if rng is None else rng.normal(size=(size, size))
    q, r = np.linalg.qr(gaussian)
    signs = np.sign(np.diag(r))
    signs[signs == 0] = 1.0
    return q * signs[None, :]


def mean_direction(sketch: AngularSketch, captures: Sequence[Any]) -> Codeword:
    """Template from several captures: the mean of their directions, as a checked secret.

    Each capture is normalised first (so a loud capture does not dominate), the mean is taken
    and :meth:`AngularSketch.check_secret` normalises it and draws the codeword.
    """
    rows = as_collection(captures, "captures", what="embeddings", ordered=True)
    if len(rows) == 0:
        raise SampleError("enrolment needs at least one capture")
    units = [d / np.linalg.norm(d) for d in (_direction(r, sketch.dimension, "capture") for r in rows)]
    mean = np.mean(units, axis=0)
    if not np.any(np.abs(mean) > 1e-12):
        raise SampleError("the captures cancel out (their mean is the zero vector): enrol from other captures")
    return sketch.check_secret(mean)


def _default_sweep(params: Mapping[str, Any]) -> list[int]:
    """Codeword weights from tolerant (few bits) to strict; capped below the dimension."""
    n = int(params.get("dimension", 512))
    return [a for a in (2, 4, 6, 8, 10, 12, 16) if a < n]


_EXAMPLE_T = [((-1) ** i) * (1.0 + (i % 5) / 4.0) for i in range(16)]


def _checked_cos(min_cos: Any) -> float:
    """``min_cos`` as a float in [0, 1], or ``ParameterError``."""
    if isinstance(min_cos, bool) or not isinstance(min_cos, (int, float, np.integer, np.floating)):
        raise ParameterError(f"min_cos must be a number in [0, 1], got {type(min_cos).__name__}")
    if not (math.isfinite(min_cos) and 0.0 <= float(min_cos) <= 1.0):
        raise ParameterError(f"min_cos must be in [0, 1], got {min_cos!r}")
    return float(min_cos)


class AngularSketch(SecureSketch[FeatureVector, FeatureVector]):
    """IronMask sketch of ``dimension``-D embeddings with ``alpha``-sparse codewords (module docstring)."""

    descriptor = SchemeDescriptor(
        name="angular",
        sample_kind="vector",
        summary="rotation onto a sparse spherical codeword (IronMask, Kim et al. CVPR 2021): raw float "
        "embeddings compared by angle; close iff the rotated probe's alpha largest coordinates are the codeword's",
        parameters=PARAMETERS,
        length_parameters=("dimension",),
        sweep="alpha",
        default_sweep=_default_sweep,
        template="sketchauth.sketches.angular:mean_direction",
        linkage_attacks={"angular": "rotation-pairing"},
        min_captures=1,
        max_captures=None,
        example=(
            {"dimension": 16, "alpha": 2},
            [_EXAMPLE_T, [x * 1.1 for x in _EXAMPLE_T]],
            [x + (0.1 if i % 3 == 0 else 0.0) for i, x in enumerate(_EXAMPLE_T)],
        ),
    )

    def __init__(self, dimension: int, alpha: int, min_cos: float = 0.0) -> None:
        self.dimension = check_int("dimension", dimension, MIN_DIMENSION, MAX_DIMENSION)
        self.alpha = check_int("alpha", alpha, 1, self.dimension - 1)
        self.min_cos = _checked_cos(min_cos)
        self._min_cos = Fraction(self.min_cos)
        self._bytes = 2 * self.dimension * self.dimension
        self._compact_bytes = _rotation.compact_bytes(self.dimension)

    @property
    def decision_cos(self) -> float:
        """The threshold decoding applies: ``min_cos``, or another one (:meth:`deciding_at`)."""
        return float(self._min_cos)

    def deciding_at(self, min_cos: float) -> Self:
        """This sketch accepting a decoded codeword iff ``cos(probe, decoded template) ≥ min_cos``.

        The same parameters (:meth:`params`, ``min_cos`` included), so it reads exactly the helper
        data this sketch makes and names them as its own; only the angle check decoding applies
        changes (:attr:`decision_cos`). For a verifier whose probe is not the one the threshold was
        chosen for: an attempt averaging several captures
        (:meth:`~sketchauth.features.angular.AngularPipeline.sketch_for_captures`). ``0``: no check.
        """
        view = copy.copy(self)
        view._min_cos = Fraction(_checked_cos(min_cos))
        return view

    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dimension": self.dimension, "alpha": self.alpha}
        if self.min_cos:
            out["min_cos"] = self.min_cos
        return out

    # -- secrets ------------------------------------------------------------------------------------
    def check_secret(self, secret: Any) -> Codeword:
        """The enrolment secret: a fresh uniform codeword bound to the normalised template.

        A :class:`Codeword` carrying its template is returned as it is (idempotent); a raw
        embedding is validated (finite, not zero, ``dimension`` numbers), normalised and given a
        codeword drawn with :mod:`secrets` — the hashed secret is that codeword, never the template.
        """
        if isinstance(secret, Codeword) and secret.template is not None:
            self._check_codeword(secret)
            return secret
        if isinstance(secret, Codeword):
            raise SampleError("a decoded codeword cannot be enrolled again: enrol from the embedding")
        t = _direction(secret, self.dimension, "secret")
        word = self.random_codeword().view(Codeword)
        word.template = t / np.linalg.norm(t)
        return word

    def random_codeword(self, rng: np.random.Generator | None = None) -> np.ndarray:
        """A uniform codeword (``int8`` signed support) from :mod:`secrets`, or from a seeded ``rng``
        in simulations (never for a stored helper)."""
        word = np.zeros(self.dimension, dtype=np.int8)
        if rng is not None:
            word[rng.choice(self.dimension, self.alpha, replace=False)] = rng.choice(
                np.array([-1, 1], dtype=np.int8), self.alpha
            )
            return word
        support = _secrets.SystemRandom().sample(range(self.dimension), self.alpha)
        word[support] = [1 if _secrets.randbits(1) else -1 for _ in support]
        return word

    def _check_codeword(self, word: np.ndarray) -> np.ndarray:
        arr = np.asarray(word)
        if arr.shape != (self.dimension,) or arr.dtype.kind not in "iu":
            raise SampleError(f"a codeword is {self.dimension} integers in {{-1, 0, 1}}")
        if np.any(np.abs(arr.astype(np.int64)) > 1) or np.count_nonzero(arr) != self.alpha:
            raise SampleError(f"a codeword has exactly {self.alpha} entries +-1 and zeros elsewhere")
        return arr.astype(np.int8)

    def secret_bytes(self, secret: Any) -> bytes:
        """The codeword's canonical bytes: its ``n`` signed-support entries as ``int8``.

        Takes what :meth:`check_secret` or :meth:`decode` returned (a :class:`Codeword`); a raw
        embedding is refused, since its codeword is drawn at enrolment.
        """
        if not isinstance(secret, Codeword):
            raise SampleError("secret_bytes takes the Codeword returned by check_secret or decode, not an embedding")
        return self._check_codeword(secret).tobytes()

    def draw_randomness(self, secret: Any) -> AngularRandomness:
        n = self.dimension
        bits = _secrets.randbits(n)
        signs = np.array([-1 if (bits >> i) & 1 else 1 for i in range(n)], dtype=np.int8)
        gaussians = _gaussian_matrix(1, _rotation.gaussian_count(n))[0]
        return AngularRandomness(np.asarray(secret, dtype=np.int8).copy(), gaussians, signs)

    def simulated_randomness(self, secret: Any, rng: np.random.Generator) -> AngularRandomness:
        """The encoder's randomness from a seeded ``rng``: simulations only, never a stored helper."""
        n = self.dimension
        signs = rng.choice(np.array([-1, 1], dtype=np.int8), n)
        gaussians = rng.normal(size=_rotation.gaussian_count(n))
        return AngularRandomness(np.asarray(secret, dtype=np.int8).copy(), gaussians, signs)

    # -- encode / decode ----------------------------------------------------------------------------
    def _encode_payload(self, secret: Codeword, randomness: Any) -> bytes:
        if not isinstance(randomness, AngularRandomness):
            raise ParameterError("randomness must be an AngularRandomness")
        n = self.dimension
        gaussians = np.asarray(randomness.gaussians, dtype=np.float64)
        signs = np.asarray(randomness.row_signs)
        if gaussians.shape != (_rotation.gaussian_count(n),) or not np.all(np.isfinite(gaussians)):
            raise ParameterError(f"the randomness needs {_rotation.gaussian_count(n)} finite standard normals")
        if signs.shape != (n,) or not np.all(np.abs(signs) == 1):
            raise ParameterError(f"the row signs must be {n} values +-1")
        if not np.array_equal(np.asarray(randomness.codeword), np.asarray(secret)):
            raise ParameterError("the randomness's codeword is not the secret's")
        assert secret.template is not None  # check_secret made it: a Codeword with a template
        r = signs.astype(np.float64)
        c = np.asarray(secret, dtype=np.float64) / math.sqrt(self.alpha)
        ws, s = _rotation.conditioned_householder(secret.template, r * c, gaussians)
        return _rotation.pack(ws, s, r)

    def _matrix(self, payload: bytes) -> np.ndarray:
        """``R̂`` as float64 integers: read (dense form) or ``round(2^14·R')`` of the expanded compact form."""
        if len(payload) == self._compact_bytes:
            flat, s, r = self._unpacked(payload)
            rotation = _rotation.expand(flat, s, r)
            return cast("np.ndarray", np.clip(np.rint(rotation * _SCALE), -_SCALE, _SCALE))
        if len(payload) != self._bytes:
            raise SketchFormatError(
                f"angular payload must be {self._compact_bytes} bytes (compact rotation of dimension "
                f"{self.dimension}) or {self._bytes} bytes (dense {self.dimension}^2 int16), got {len(payload)}"
            )
        return np.frombuffer(payload, dtype=">i2").astype(np.float64).reshape(self.dimension, self.dimension)

    def _unpacked(self, payload: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        try:
            return _rotation.unpack(payload, self.dimension)
        except ValueError as exc:
            raise SketchFormatError(f"angular helper: {exc}") from None

    def _check_payload(self, payload: bytes) -> None:
        if len(payload) == self._compact_bytes:
            self._unpacked(payload)  # every reflection is orthogonal: only the length and padding can be wrong
        else:
            self._checked_matrix(payload)

    def _checked_matrix(self, payload: bytes) -> np.ndarray:
        """``R̂`` if it is orthogonal within tolerance (module docstring), else ``SketchFormatError``."""
        r = self._matrix(payload)
        rows = np.einsum("ij,ij->i", r, r) / float(_SCALE) ** 2
        if np.any(np.abs(rows - 1.0) > ROW_NORM_TOLERANCE):
            raise SketchFormatError("angular helper is not an orthogonal matrix (a row is not of unit norm)")
        rng = np.random.default_rng(_secrets.randbits(128))
        for _ in range(ORTHOGONALITY_PROBES):
            # One vector at a time: matrix-vector products stay fast on a busy multi-threaded BLAS.
            x = rng.normal(size=self.dimension)
            err = r @ (x @ r) / float(_SCALE) ** 2 - x
            if np.linalg.norm(err) > ORTHOGONALITY_TOLERANCE * np.linalg.norm(x):
                raise SketchFormatError("angular helper is not an orthogonal matrix (R R^T is not the identity)")
        return r

    def matrix(self, helper: bytes) -> np.ndarray:
        """The helper's ``R̂`` (float64 integers ``round(2^14·R)``) after the strict checks of :meth:`payload`."""
        return self._matrix(self.payload(helper))

    def rotated(self, matrix: np.ndarray, probe: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(y, p̂)``: the quantised probe and its image ``y = R̂ p̂`` (exact integers in float64)."""
        p = quantise_probe(_direction(probe, self.dimension, "sample"))
        return matrix @ p, p

    def _decode_payload(self, payload: bytes, sample: Any) -> Codeword:
        # decode() reaches here through _unwrap, which has run _check_payload on this payload.
        p = quantise_probe(_direction(sample, self.dimension, "sample"))
        y = self._rotated_where_it_matters(payload, p) if len(payload) == self._compact_bytes else None
        return self._decided(self._matrix(payload) @ p if y is None else y, p)

    def _decided(self, y: np.ndarray, p: np.ndarray) -> Codeword:
        """The codeword the ``α`` largest ``|y_i|`` name, or :class:`DecodeError` (a tie, or the angle check)."""
        magnitude = np.abs(y)
        order = np.argsort(-magnitude, kind="stable")
        if magnitude[order[self.alpha - 1]] == magnitude[order[self.alpha]]:
            raise DecodeError("the probe is equally close to several codewords")
        support = order[: self.alpha]
        if not self.angle_accepts(float(magnitude[support].sum()), p):
            raise DecodeError(f"the probe's angle to the decoded template exceeds arccos({self.decision_cos})")
        word = np.zeros(self.dimension, dtype=np.int8)
        word[support] = np.where(y[support] > 0, 1, -1)
        return word.view(Codeword)

    def _rotated_where_it_matters(self, payload: bytes, p: np.ndarray) -> np.ndarray | None:
        """``y = R̂p̂`` exactly on every row the decision can depend on and 0 on the others, in ``O(n²)``;
        ``None`` when that cannot be certified (then the caller expands ``R̂``: :meth:`_matrix`).

        ``z = 2^14·R'p̂`` through the reflections is within ``B = (½ + 2^−12)·Σ|p̂_j|`` of ``y`` (each
        entry of ``R̂`` is within ``½`` of ``2^14·R'``; ``2^−12`` covers float64 error ``10^7`` times
        over). With ``S`` the ``α`` rows of largest ``|z|`` and ``m = min_S |z_i| − B > 0``, every row
        with ``|z_j| + B < m`` has ``|y_j| < |y_i|`` for all ``i ∈ S``: it is neither in the support
        nor tied with the ``α``-th largest. The other rows (``S`` and the few near the boundary) get
        their exact ``R̂`` rows (:meth:`_rotation.Reflections.fixed_rows`) and exact ``y_i``, so
        :meth:`_decided` reaches the decision of the expanded ``R̂`` — the same support, tie,
        signs and angle sum — on every probe.
        """
        flat, s, r = self._unpacked(payload)
        reflections = _rotation.Reflections(flat, s, r)
        if not reflections.honest:
            return None
        z = np.abs(reflections.apply(p)) * _SCALE
        bound = (0.5 + 2.0**-12) * float(np.abs(p).sum())
        top = np.argpartition(-z, self.alpha - 1)[: self.alpha]
        floor = float(z[top].min()) - bound
        rows = np.flatnonzero(z + bound >= floor)
        if floor <= 0 or rows.shape[0] > min(_EXACT_ROWS_LIMIT * self.alpha, self.dimension // 2):
            return None
        fixed = reflections.fixed_rows(rows, float(_SCALE))
        if fixed is None:
            return None
        y = np.zeros(self.dimension)
        y[rows] = fixed @ p
        return y

    def angle_accepts(self, total: float, p: np.ndarray) -> bool:
        """``Σ_{supp} |y_i| ≥ τ·√α·2^14·‖p̂‖``, exactly (integers and the exact fraction ``τ``)."""
        if self._min_cos == 0:
            return True
        s = int(total)
        norm2 = sum(int(v) * int(v) for v in p.tolist())
        tau = self._min_cos
        return s * s * tau.denominator**2 >= tau.numerator**2 * self.alpha * _SCALE * _SCALE * norm2

    # -- accounting -----------------------------------------------------------------------------------
    def report(self) -> EntropyReport:
        bits = codebook_bits(self.dimension, self.alpha)
        a = self.alpha
        packing = 1.0 / math.sqrt(2 * a)
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=8.0 * self._compact_bytes,
            randomness_bits=bits,
            notes=(
                f"(a) codebook work from one helper without a matching sample: log2 |C_alpha| = {bits:.1f} bits, "
                "exact when the template is uniform on the sphere (then the helper is Haar on O(n) whatever the "
                "codeword); a concentrated template distribution lowers it (prior-guided ranking, measured in "
                "benchmarks/bench_angular.py)",
                "(b) information-theoretic: H~(c|R) >= log2|C| - D_inf(template density || uniform); no bound "
                "beyond this (vacuous for concentrated templates); the DORS sketch bound |S| - H(R) is vacuous",
                "(c) population attack (database and pepper held): about log2(1/FMR) argon2id evaluations, "
                "whatever the code",
                f"decodes iff min over the support of sign*y_i > max off the support |y_j|; guaranteed within "
                f"chord {packing:.3f} of the template",
            ),
            extra={
                "codebook_bits": bits,
                "helper_bytes": self._compact_bytes,
                "packing_chord": packing,
                "guaranteed_cos": 1.0 - packing * packing / 2.0,
                "min_cos": self.min_cos,
            },
        )

    # -- symbols (for mixing): the row signs, a subgroup of the code's automorphisms ---------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        """One bit per row: the sign of its first non-zero entry (1: negative).

        Flipping rows multiplies ``R`` by a diagonal ``±1`` matrix, which maps ``C_α`` onto itself:
        a pad on these bits turns a helper into another valid one (the codeword's signs change).
        """
        if len(payload) == self._compact_bytes:
            _, _, row_signs = self._unpacked(payload)
            return (row_signs < 0).astype(np.uint64), SymbolSpace("xor", bits=1)
        r = self._matrix(payload)
        first = np.argmax(r != 0, axis=1)
        lead = r[np.arange(self.dimension), first]
        if np.any(lead == 0):
            raise SketchFormatError("angular helper has a zero row")
        return (lead < 0).astype(np.uint64), SymbolSpace("xor", bits=1)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        current, _ = self.symbols(payload)
        return self._flip_rows(payload, current != symbols.astype(np.uint64))

    def _flip_rows(self, payload: bytes, flip: np.ndarray) -> bytes:
        """The payload of ``diag(±1)·R``, rows negated where ``flip`` is true (either stored form)."""
        if len(payload) == self._compact_bytes:
            _, _, row_signs = self._unpacked(payload)
            head = len(payload) - (self.dimension + 7) // 8
            return payload[:head] + np.packbits((row_signs < 0) != flip).tobytes()
        signs = np.where(flip, -1, 1).astype(np.int16)
        r = np.frombuffer(payload, dtype=">i2").reshape(self.dimension, self.dimension)
        return (r * signs[:, None]).astype(">i2").tobytes()

    def pad_group_bits(self, report: EntropyReport | None = None) -> float:
        """The row-sign group has ``2^n`` elements, of which the ``α`` support rows act on the codeword."""
        return float(self.alpha)
