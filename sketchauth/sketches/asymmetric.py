"""Asymmetric interval sketches: the template *and* its tolerance are secret (Fang's thesis §6.2).

Enrolment from several samples (:mod:`sketchauth.templates`) gives, per feature, a template
``b ∈ [0, n)`` and a tolerance ``v ∈ [1, q]``; a later sample ``d'`` is close iff
``|d' − b| < v``. The tolerance is identity-dependent auxiliary data, so the secret is the pair
``d = (b, v)`` and the loss is counted on both. Three schemes, per feature (s1 and s2 exactly as in
Fang's thesis, ch. 6.2; s3 is this library's repair of s2's parity leak):

**s1 (tolerance in clear)**: ``S = (v, b mod (2v − 1))``; decode returns the point of the lattice
``{c ≡ S mod (2v − 1)}`` nearest ``d'`` (Fang's thesis, ch. 6) together with ``v``. Deterministic.
*Counting*: ``v`` takes ``q`` values (``log q`` bits) and the residue lies in ``[0, 2q − 1) ⊂
[0, 2q)`` (``1 + log q`` bits), so ``|S| = 1 + 2·log q`` and ``H∞(R) = 0``. (The exact number of
distinct ``(v, residue)`` pairs, ``Σ_{v=1}^{q} min(2v − 1, n) ≤ q²``, is in ``report().extra``.)
But ``v`` is stored in clear: two sketches of one person link by it.

**s2 (non-uniform intervals)**: partition ``[0, n)`` into intervals of random even lengths, one of
which is exactly ``(b − v, b + v)``: start from ``G = {b − v, b + v}``, insert ``min(G) − 2r`` while
``min(G) > 0`` and ``max(G) + 2r`` while ``max(G) < n`` (each ``r`` uniform in ``[1, q]``, drawn
from :mod:`secrets`), sort ``G = g_1 < … < g_k`` and store ``S = (g_1, g_2 − g_1, …,
g_k − g_{k−1})``. Decode(``d'``): the interval ``(g_{i−1}, g_i)`` containing ``d'`` gives
``b = (g_{i−1} + g_i)/2`` and ``v = (g_i − g_{i−1})/2``; as Fang's thesis §6.2 takes "the first ``g_i > d'``",
every point belongs to the interval on its right, so ``d' = b − v`` also decodes (the accepted set
is ``[b − v, b + v)``, one value more than the tolerance). The true gap ``2v`` is drawn from the
same range ``{2, 4, …, 2q}`` as the random ones, so ``v`` hides among them.

*Counting for s2* (variable length). A sketch with ``J = k − 1`` gaps is described by ``g_1 ∈
(−2q, 0]`` (``2q`` values: ``1 + log q`` bits) and ``J`` gaps, each one of the ``q`` values
``2, 4, …, 2q`` (``log q`` bits each): ``|S_J| = 1 + log q + J·log q``. The randomness that made it
is the ``J − 1`` values ``r`` (every gap but the secret one), each uniform in ``[1, q]``, so
``H∞(R | J) = (J − 1)·log q`` and ``|S_J| − H∞(R | J) = 1 + 2·log q`` whatever ``J`` is. The bound
holds across lengths: ``Pr[d, S = s] = Pr[d]·q^{−(J(s) − 1)}``, and for each ``g_1`` the gap
sequences that stop at the first point ``≥ n`` carry total weight ``Σ q^{−J} ≤ 1`` (they are the
outcomes of a stopped random walk), so ``Σ_s max_d Pr[d, s] ≤ max_d Pr[d]·q·2q`` and the loss is
at most ``log(2q²) = 1 + 2·log q``. :meth:`AsymmetricIntervalSketch.report` states ``|S|`` and
``H∞(R)`` at the longest possible sketch, ``J_max = ⌊n/2⌋ + 1`` gaps (the shortest is
``J_min = ⌈n/(2q)⌉``); features add up.

**s3 (s2 with the parity hidden)**. Every s2 gap is even, so every boundary of an s2 sketch has
the parity of ``b − v``: two sketches of one ``(b, v)`` agree on that bit in every feature, two
people's agree half the time, and a parity adversary links identical re-enrolments of 8 features
with accuracy ≈ 0.998 (:mod:`sketchauth.evaluate.linkage`). s3 keeps s2's construction — ``G``
starts at ``{b − v, b + v}`` and decoy gaps are inserted outwards until ``[0, n)`` is covered, the
secret interval is still exactly ``(b − v, b + v)`` — but each decoy gap is drawn uniformly from
the ``q + 1`` lengths ``{2, 4, …, 2q, o}``, ``o = 2⌊q/2⌋ + 1`` the odd length in the middle of
the even ones (:func:`s3_odd_gap`; draw ``r ∈ [1, q + 1]``, gap ``2r`` for ``r ≤ q`` and ``o`` for
``r = q + 1``). Needs ``q ≥ 2`` (with ``q = 1`` no odd length fits in ``[2, 2q]``).

*Why this distribution.* (i) Each odd decoy flips the parity of every boundary beyond it, so a
boundary ``m`` decoys away from the secret interval agrees with ``b − v`` in parity with
probability ``(1 + ((q − 1)/(q + 1))^m)/2``: the parity is hidden beyond a few gaps. (ii) Every
even length, the secret ``2v`` included, has the same probability ``1/(q + 1)`` as a decoy, so
for a uniform ``v`` the secret interval is exactly as plausible as any even decoy; odd intervals
are known decoys (decode in one is a :class:`DecodeError`). (iii) A single odd length (rather
than all of ``3, 5, …, 2q − 1``) keeps the lengths few, so two unrelated partitions still share
many equal even intervals by chance — the background against which a linking adversary must spot
the one interval that recurs in two enrolments of a person. Measured at one feature, identical
re-enrolments, n = 1000, q = 5: 0.569 for the similar-interval adversary and 0.606 for the one
restricted to even intervals (20000 pairs); a prototype simulation matching equal intervals (800
pairs) gave 0.66 for the even-interval adversary when the decoys are uniform on all of ``[2, 2q]``
and 0.61 with the single odd length — more lengths mean fewer chance coincidences.
(iv) Uniform draws over ``q + 1`` values keep the accounting exact: ``|S| − H∞(R)`` is
constant in the number of gaps.

*Counting for s3.* A sketch with ``J`` gaps is ``g_1 ∈ (−2q, 0]`` (``1 + log q`` bits) and ``J``
gaps of ``q + 1`` values (``J·log(q + 1)`` bits); the randomness is the ``J − 1`` decoy draws,
``H∞(R | J) = (J − 1)·log(q + 1)``; so ``|S_J| − H∞(R | J) = 1 + log q + log(q + 1)`` for every
``J``. Directly: ``Pr[d, S = s] = Pr[d]·(q + 1)^{−(J(s) − 1)}``, and for each ``g_1`` the gap
sequences that stop at the first point ``≥ n`` carry total weight ``Σ (q + 1)^{−J} ≤ 1``, so
``Σ_s max_d Pr[d, s] ≤ max_d Pr[d]·2q·(q + 1)`` and the loss is at most ``log(2q(q + 1))`` — s2's
``1 + 2·log q`` plus ``log(1 + 1/q) ≤ log(3/2) ≈ 0.585`` bits per feature. (Exact enumeration on
tiny instances, e.g. ``n = 5, q = 2``, uniform prior: ``P_succ = 11/15``, loss ``log2(22/3) ≈
2.87`` bits against the bound ``log2 12 ≈ 3.58``.)

*What s3 does not hide.* The secret interval recurs, unchanged, in every enrolment of the same
``(b, v)``: an adversary who counts the intervals two helpers share still gains evidence from
each feature (identical re-enrolments, similar-interval adversary: 0.57 at one feature, ≈ 0.70
at 8), and ``k ≥ 2`` helpers of one person in one database pin most features' ``(b, v)`` as they
do for s2 (n = 64, q = 8, two noise-free enrolments: ≈ 74% of features for s3, 71% for s2).

*Valid s2 payloads* are exactly what the encoder can produce: every gap even in ``[2, 2q]``,
``g_1 ∈ (−2q, 0]``, ``g_1 ≤ 0 < g_2`` and ``g_{k−1} < n ≤ g_k`` (the gaps cover ``[0, n)`` with no
surplus point on either side) and at least one interval centred in ``[0, n)`` (a possible secret
interval); anything else is a :class:`SketchFormatError`. *Valid s3 payloads* are the same with
every gap in ``{2, 4, …, 2q, o}`` (gap code ``r − 1 ∈ [0, q]``, ``q`` the odd one) and the
possible secret interval of even length.

*Beyond the tolerance* s1 returns another lattice point (``DecodeError`` only when it falls
outside ``[0, n)``); s2 returns the ``(b, v)`` of whichever interval holds ``d'`` —
``DecodeError`` when ``d'`` lies outside ``[g_1, g_k)`` or that interval's centre is outside
``[0, n)``. The caller's hash check rejects a wrong ``(b, v)``.

*Symbols for mixing* (Fang's thesis, ch. 7: every symbol vector must be a valid sketch). s1: the residues
``b mod (2v − 1)`` in ``Z_{min(2v−1, n)}``; ``v`` is not a symbol (changing it would change the
modulus of the residue). s2: per feature the gap pairs ``(gap_{2m−1}, gap_{2m})`` (0-based,
``2m ≤ J − 2``) that touch neither the first nor the last gap; the pair keeps its sum ``σ``
(so every other point stays put) and its first gap ``a ∈ [max(2, σ − 2q), min(2q, σ − 2)]`` is
the symbol ``(a − lo)/2`` modulo the number of such ``a``. Moving those interior points keeps
``g_1``, ``g_2``, ``g_{k−1}``, ``g_k`` and every gap in range, so every symbol vector is a valid
sketch; ``g_1``, the end gaps and the gap sums are not mixed. s3: the same, restricted to pairs of
two even gaps (a pair holding the odd length has at most one split; and turning two even gaps
into two odd ones could remove the last possible secret interval — a symbol vector that is no
valid sketch). Which gaps are odd is public and never mixed. (A group acting on ``g_1`` and on
every gap separately would not do: changing one gap moves every later point, so some symbol
vectors would stop covering ``[0, n)`` or gain a surplus point — redundancy that leaks the key.)

*Levels and real values.* The secret ``(b, v)`` is always in levels: ``b ∈ [0, n)`` and ``v`` are
integers (:meth:`AsymmetricIntervalSketch.template` derives them from several real captures).
Samples are the caller's values: with a ``step`` (and an ``offset``, the real value of level 0,
for signed features; :meth:`AsymmetricIntervalSketch.for_range`) they are quantised by
:class:`~sketchauth.sketches.samples.Quantiser` — ``⌊(x − o)/δ + 1/2⌋``, the same rule the
template uses — and refused with :class:`SampleError` outside ``[o − δ/2, o + (n − ½)δ)``;
without either, integer samples are levels as they are and may lie anywhere (outside
``[0, n)`` they decode as described above). :class:`~sketchauth.sketches.samples.Levels` are never
quantised again, and decode returns ``b`` as :class:`~sketchauth.sketches.samples.Levels`.

Example::

    >>> sk = AsymmetricIntervalSketch(n=100, q=8, scheme="s2", features=2)
    >>> helper = sk.encode(([40, 7], [3, 5]))
    >>> [x.tolist() for x in sk.decode(helper, [42, 3])]
    [[40, 7], [3, 5]]
    >>> signed = AsymmetricIntervalSketch.for_range(-1.0, 1.0, step=0.1, q=4, scheme="s2", features=1)
    >>> secret = signed.template([[-0.42], [-0.31], [-0.47]])
    >>> [x.tolist() for x in secret]
    [[6], [3]]
    >>> [x.tolist() for x in signed.decode(signed.encode(secret), [-0.33])]
    [[6], [3]]
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches._lattice import lattice_offset, nearest_lattice_point
from sketchauth.sketches._prime_field import uniform_below
from sketchauth.sketches.base import EntropyReport, SchemeDescriptor, SecureSketch, SymbolSpace
from sketchauth.sketches.format import MAX_HELPER_BYTES, pack_uints, uint_width, unpack_uints
from sketchauth.sketches.interval_template import enrol_interval
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int
from sketchauth.sketches.samples import Levels, Quantiser, as_feature_vector
from sketchauth.sketches.types import FeatureVector, IntervalTemplate

__all__ = [
    "SCHEMES_AVAILABLE",
    "AsymmetricIntervalSketch",
    "S2Draws",
    "S2Randomness",
    "expected_draw_columns",
    "gap_draw_split",
    "gap_lengths",
    "gap_of_codes",
    "s2_draw_split",
    "s3_odd_gap",
    "secure_uniform",
]

#: The two constructions of Fang's thesis (s1, s2) and s3, s2 with the boundary parity hidden.
SCHEMES_AVAILABLE = ("s1", "s2", "s3")
#: Largest universe size (keeps feature-offset keys of the vectorised decoder inside int64).
MAX_N = 2**40
#: Largest number of features per sketch.
MAX_FEATURES = 2**16
#: ``randomness_space`` enumerates at most this many randomness values (exact evaluation only).
MAX_ENUMERATED_RANDOMNESS = 1 << 16

#: s2 randomness: per feature, the ``r`` inserted to the left of ``b − v`` (in insertion order,
#: i.e. from ``b − v`` outwards) and to the right of ``b + v``.
S2Randomness = tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]


def secure_uniform(q: int, shape: tuple[int, int]) -> np.ndarray:
    """Integers exactly uniform in ``[1, q]`` from :mod:`secrets` (``q ≤ 2^31``), as a ``shape`` array.

    :func:`~sketchauth.sketches._prime_field.uniform_below` (unbiased rejection sampling of
    32-bit words) shifted by one. An s2 sketch's ``q`` is far below the bound: its worst-case
    helper must fit :data:`MAX_HELPER_BYTES`, which caps ``n ≥ q`` near ``2^25``.
    """
    return (uniform_below(q, shape[0] * shape[1]) + 1).reshape(shape)


def s3_odd_gap(q: int) -> int:
    """The one odd decoy length of s3: ``o = 2·⌊q/2⌋ + 1`` (``q`` or ``q + 1``, whichever is odd).

    It sits at the middle of the even lengths ``2 … 2q`` (their mean is ``q + 1``), so the mean gap,
    and with it the number of intervals, stays that of s2.
    """
    return 2 * (q // 2) + 1


def gap_of_codes(codes: np.ndarray, q: int) -> np.ndarray:
    """Gap lengths of codes ``c = r − 1``: ``2(c + 1)`` for ``c < q``, s3's odd length for ``c = q``."""
    codes = np.asarray(codes, dtype=np.int64)
    return np.where(codes >= q, s3_odd_gap(q), 2 * (codes + 1))


def gap_lengths(scheme: str, q: int) -> np.ndarray:
    """Gap length of each draw value ``r`` at index ``r − 1``: ``2r`` for ``r ≤ q``; s3 adds ``r = q + 1 → o``.

    A gap's *code* in the helper is that index: ``r − 1`` (``v − 1`` for the secret gap).
    """
    even = 2 * np.arange(1, q + 1, dtype=np.int64)
    if scheme == "s3":
        return np.append(even, s3_odd_gap(q))
    return even


def gap_draw_split(
    b: np.ndarray, v: np.ndarray, n: int, gaps: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Which of each row's decoy gaps the s2/s3 encoder uses, for many rows at once.

    Row ``i`` consumes ``gaps[i]`` (lengths) in order: gap ``t`` goes left of ``b − v`` while the
    lowest point is still ``> 0`` (``Σ_{s<t} gap_s < b − v``), the following ones right of ``b + v``
    while the highest point is ``< n``. Returns ``(left, used, short, before)``: the number of left
    gaps, of gaps used in all, whether the row ran out of gaps before covering ``[0, n)`` (its
    counts are then meaningless), and the prefix sums ``before[:, t] = Σ_{s<t} gap_s``.
    """
    rows, width = gaps.shape
    before = np.zeros((rows, width + 1), dtype=gaps.dtype)
    np.cumsum(gaps, axis=1, out=before[:, 1:])
    need_left = (b - v)[:, None]
    need_right = (n - b - v)[:, None]
    left = (before[:, :width] < need_left).sum(axis=1)
    at_left = np.take_along_axis(before, left[:, None], axis=1)
    t = np.arange(width)[None, :]
    right = ((t >= left[:, None]) & (before[:, :width] - at_left < need_right)).sum(axis=1)
    used = left + right
    covered = np.take_along_axis(before, used[:, None], axis=1) - at_left
    short = (at_left[:, 0] < need_left[:, 0]) | (covered[:, 0] < need_right[:, 0])
    return left, used, short, before


def s2_draw_split(
    b: np.ndarray, v: np.ndarray, n: int, draws: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`gap_draw_split` for s2 draws ``r ∈ [1, q]`` (gap ``2r``); ``before`` in units of ``r``.

    Draw ``t`` goes left of ``b − v`` while ``2·Σ_{s<t} r_s < b − v``, then right of ``b + v``.
    """
    left, used, short, before = gap_draw_split(b, v, n, 2 * draws)
    return left, used, short, before // 2


def expected_draw_columns(n: int, q: int) -> int:
    """Draws per feature that cover ``[0, n)`` with overwhelming probability (mean + 8 sd + 4).

    A feature needs about ``n / (q + 1)`` draws (mean ``r`` is ``(q + 1)/2``, each covers ``2r``);
    rows that still run short get more draws appended, so this only sizes the first batch.
    """
    mean = (q + 1) / 2.0
    variance = (q * q - 1) / 12.0
    sd = math.sqrt(max(n / 2.0 * variance / mean**3, 1.0))
    return math.ceil(n / (2.0 * mean) + 8.0 * sd + 4.0)


def _stopping_sequences(need: int, lengths: Sequence[int], limit: int) -> list[tuple[int, ...]]:
    """Every sequence of draws ``r ∈ [1, len(lengths)]`` whose gaps ``lengths[r − 1]`` first reach
    a total ``≥ need`` at the last draw."""
    if need <= 0:
        return [()]
    found: list[tuple[int, ...]] = []
    stack: list[tuple[tuple[int, ...], int]] = [((), need)]
    while stack:
        prefix, remaining = stack.pop()
        for r, gap in enumerate(lengths, start=1):
            if gap >= remaining:
                found.append((*prefix, r))
                if len(found) > limit:
                    raise ParameterError(f"more than {limit} randomness values to enumerate: use smaller n or q")
            else:
                stack.append(((*prefix, r), remaining - gap))
    return found


@dataclass(frozen=True, slots=True, eq=False)
class S2Draws:
    """s2 randomness in matrix form (what :meth:`AsymmetricIntervalSketch.draw_randomness` returns).

    Row ``f`` holds feature ``f``'s draws in the order the encoder uses them: ``left[f]`` draws
    inserted left of ``b − v`` (from ``b − v`` outwards), then right of ``b + v``, ``used[f]`` in
    all; later columns are ignored. Carries the same information as :data:`S2Randomness`.
    """

    draws: np.ndarray
    left: np.ndarray
    used: np.ndarray

    def as_tuples(self) -> S2Randomness:
        """The same randomness as per-feature ``(left, right)`` tuples."""
        return tuple(
            (tuple(row[:lo]), tuple(row[lo:end]))
            for row, lo, end in zip(self.draws.tolist(), self.left.tolist(), self.used.tolist(), strict=False)
        )

    @classmethod
    def from_tuples(cls, randomness: Any, features: int) -> S2Draws:
        """Matrix form of :data:`S2Randomness` (``ParameterError`` if it is not shaped like one)."""
        if not isinstance(randomness, tuple) or len(randomness) != features:
            raise ParameterError(f"s2 randomness must be a tuple of {features} (left, right) pairs")
        rows: list[list[int]] = []
        left = []
        for f, pair in enumerate(randomness):
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(x, tuple) for x in pair)):
                raise ParameterError(f"s2 randomness of feature {f} must be a (left, right) pair of tuples")
            rows.append(list(pair[0]) + list(pair[1]))
            left.append(len(pair[0]))
        flat = [r for row in rows for r in row]
        # Python ints only (what randomness_space and as_tuples produce): no bools, no floats.
        if not set(map(type, flat)) <= {int}:
            raise ParameterError("s2 randomness must hold Python ints")
        used = np.array([len(row) for row in rows], dtype=np.int64)
        width = int(used.max()) if used.size else 0
        draws = np.zeros((features, width), dtype=np.int64)
        draws[np.arange(width)[None, :] < used[:, None]] = np.array(flat, dtype=np.int64)
        return cls(draws=draws, left=np.array(left, dtype=np.int64), used=used)


class _Partition:
    """A parsed s2 payload: per feature ``counts[f]`` gaps; ``points`` holds every feature's
    ``g_1 … g_k`` back to back, feature ``f`` at ``points[starts[f] : starts[f] + counts[f] + 1]``.

    A plain class, not a dataclass: it is never compared or shown, and a frozen dataclass costs
    about half a millisecond to create at import.
    """

    __slots__ = ("counts", "points", "starts")

    def __init__(self, *, counts: np.ndarray, starts: np.ndarray, points: np.ndarray) -> None:
        self.counts = counts
        self.starts = starts
        self.points = points

    @property
    def ends(self) -> np.ndarray:
        """Index of each feature's last point ``g_k``."""
        return cast("np.ndarray", self.starts + self.counts)

    def gaps(self) -> np.ndarray:
        """Every gap, feature after feature (``counts.sum()`` values)."""
        return np.delete(np.diff(self.points), self.ends[:-1])


#: The parameters and their limits (published as they are by the service).
PARAMETERS = ParameterSpec.of(
    Parameter("n", "int", "size of each feature's universe [0, n)", low=2, high=MAX_N),
    Parameter("q", "int", "largest per-feature tolerance v (1 <= q <= n)", low=1, high=MAX_N),
    Parameter(
        "scheme",
        "choice",
        "s1: tolerance in clear; s2: hidden among random even intervals "
        "(its boundaries keep the parity of b - v); "
        "s3: s2 with decoy parities, q >= 2 (s2/s3: features * (n // 2 + 1) <= 2^20)",
        choices=SCHEMES_AVAILABLE,
        default="s1",
    ),
    Parameter("features", "int", "vector length", low=1, high=MAX_FEATURES, default=1),
    Parameter(
        "step",
        "number",
        "quantisation step for real-valued captures (none: integer features)",
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

#: How the template measures each feature's spread: ``"range"`` (max − min of the captures) or
#: ``"std"`` (their sample standard deviation); :func:`sketchauth.templates.enrol_interval`'s rule.
Spread = Literal["range", "std"]

#: Options of the template (:func:`sketchauth.templates.asymmetric_template`).
TEMPLATE_OPTIONS = (
    Parameter(
        "spread",
        "choice",
        "enrolment option: spread measure for v",
        choices=("range", "std"),
        required=False,
        default="range",
    ),
    Parameter("margin", "int", "enrolment option: v = ceil(scale*spread) + margin", low=0, required=False, default=1),
)


def _default_sweep(params: Mapping[str, Any]) -> list[int]:
    """Enrolment margins (levels added to each measured spread), from none to generous."""
    return [0, 1, 2, 4, 8]


def _small_instance(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """n = 6, q = 2, one feature, in the configured variant (s1 by default): all 12 pairs (b, v)."""
    variant = str(params.get("scheme", "s1"))
    return {"n": 6, "q": 2, "scheme": variant, "features": 1}, [([b], [v]) for b in range(6) for v in (1, 2)]


class AsymmetricIntervalSketch(SecureSketch[IntervalTemplate, FeatureVector]):
    """Sketch of ``(b, v)`` feature vectors, ``b ∈ [0, n)``, ``v ∈ [1, q]`` (Fang's thesis §6.2).

    Parameters: ``n`` each feature's universe size; ``q`` the largest tolerance (``1 ≤ q ≤ n``);
    ``scheme`` ``"s1"`` (tolerance in clear) or ``"s2"`` (non-uniform intervals); ``features``
    the vector length; ``step`` a quantisation step applied to *samples* at decode (real-valued
    captures quantised as by :func:`sketchauth.templates.enrol_interval`); ``offset`` the real
    value of level 0 (signed features; an integer without a step). The secret is always the
    integer pair.

    ``encode((b, v))`` takes a pair of integer vectors (or a ``2 × features`` array);
    ``decode(helper, sample)`` returns ``(b, v)`` as two int64 arrays.
    """

    descriptor = SchemeDescriptor(
        name="asymmetric-interval",
        sample_kind="vector",
        summary="asymmetric interval sketch: several captures give a template b and per-feature tolerances v "
        "(sketchauth.templates.enrol_interval), both sketched; close iff |d'_i - b_i| < v_i",
        parameters=PARAMETERS,
        length_parameters=("features",),
        template="sketchauth.templates:asymmetric_template",
        template_options=TEMPLATE_OPTIONS,
        min_captures=2,
        max_captures=None,
        sweep="margin",
        sweep_at_enrolment=True,
        default_sweep=_default_sweep,
        small_instance=_small_instance,
        variant="scheme",
        linkage_attacks={
            "asymmetric-interval/s1": "s1-tolerances",
            "asymmetric-interval/s2": "s2-similar-intervals",
            "asymmetric-interval/s3": "s3-similar-intervals",
        },
        repeated_attacks={
            "asymmetric-interval/s1": "crt-clear-tolerances",
            "asymmetric-interval/s2": "partition-intersection",
            "asymmetric-interval/s3": "partition-intersection",
        },
        example=(
            {"n": 256, "q": 16, "scheme": "s2", "features": 4},
            [[120, 33, 200, 71], [122, 35, 198, 70], [119, 31, 203, 73]],
            [122, 35, 203, 73],
        ),
    )

    def __init__(
        self,
        n: int,
        q: int,
        scheme: str = "s1",
        features: int = 1,
        step: float | None = None,
        offset: float | int | None = None,
    ) -> None:
        self.n = check_int("n", n, 2, MAX_N)
        self.q = check_int("q", q, 1, self.n)
        if scheme not in SCHEMES_AVAILABLE:
            raise ParameterError(f"scheme must be one of {SCHEMES_AVAILABLE}, got {scheme!r}")
        if scheme == "s3" and self.q < 2:
            raise ParameterError(
                "s3 needs q >= 2: with q = 1 every gap is 2 and no odd gap is available to hide "
                "the parity of b - v; raise q or use s2"
            )
        self.scheme = scheme
        #: s2/s3: draws are uniform in ``[1, draw_values]`` (``q`` for s2, ``q + 1`` for s3).
        self.draw_values = self.q + 1 if scheme == "s3" else self.q
        self.features = check_int("features", features, 1, MAX_FEATURES)
        #: Real sample values → levels (validates step and offset).
        self.quantiser = Quantiser(self.n, step, offset)
        self.step = self.quantiser.step
        self.offset = self.quantiser.offset
        #: fewest / most gaps an s2 sketch of one feature can have.
        self.gaps_min = -(-self.n // (2 * self.q))
        self.gaps_max = self.n // 2 + 1
        self._b_width = uint_width(self.n - 1)
        self._v_width = uint_width(self.q)
        self._code_width = uint_width(self.q - 1)
        self._offset_width = uint_width(min(2 * self.q - 1, self.n) - 1)
        self._count_width = uint_width(self.gaps_max)
        self._gap_width = uint_width(2 * self.q - 1)
        if scheme in ("s2", "s3"):
            worst = self.features * (self._count_width + (1 + self.gaps_max) * self._gap_width)
            if worst > MAX_HELPER_BYTES:
                raise ParameterError(
                    f"an {scheme} sketch of {self.features} features over n={self.n} can reach {worst} "
                    f"bytes, more than the {MAX_HELPER_BYTES} a helper record may hold"
                )

    # -- parameters -------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "n": self.n,
            "q": self.q,
            "scheme": self.scheme,
            "features": self.features,
            "step": self.step,
        }
        if self.offset is not None:
            out["offset"] = self.offset
        return out

    @classmethod
    def for_range(
        cls, low: float, high: float, *, step: float, q: int, scheme: str = "s1", features: int = 1
    ) -> AsymmetricIntervalSketch:
        """The sketch whose levels of width ``step`` cover at least ``[low, high]`` (signed values).

        ``offset = low``, ``n = ⌊(high − low)/step + 1/2⌋ + 1``
        (:meth:`~sketchauth.sketches.samples.Quantiser.covering`).
        """
        quantiser = Quantiser.covering(low, high, step)
        return cls(quantiser.n, q, scheme=scheme, features=features, step=quantiser.step, offset=quantiser.offset)

    def quantise(self, values: Any) -> Levels:
        """The levels of one sample (``SampleError`` outside the range of a quantising sketch)."""
        return self.quantiser.levels(values, self.features, name="sample")

    def template(
        self, samples: Any, *, spread: Spread = "range", scale: float | None = None, margin: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """The secret ``(b, v)`` from ``k ≥ 2`` captures, quantised as this sketch quantises samples.

        :func:`sketchauth.templates.enrol_interval` with this sketch's ``n``, ``q``, ``step`` and
        ``offset`` (its rule: rounded mean, tolerance from the spread).
        """
        if not isinstance(samples, np.ndarray):
            samples = [list(capture) if isinstance(capture, Iterable) else capture for capture in samples]
            lengths = {len(capture) if isinstance(capture, list) else -1 for capture in samples}
            if len(lengths) > 1 or -1 in lengths:
                raise SampleError(f"every capture must be a sequence of {self.features} features")
        if np.ndim(samples) == 2 and np.shape(samples)[1] != self.features:
            raise SampleError(f"captures must have {self.features} features, got {np.shape(samples)[1]}")
        return enrol_interval(
            samples,
            self.n,
            self.q,
            step=self.step,
            offset=self.offset,
            spread=spread,
            scale=scale,
            margin=margin,
        )

    # -- secrets and randomness -------------------------------------------------------------------
    def check_secret(self, secret: Any) -> tuple[np.ndarray, np.ndarray]:
        """``(b, v)`` as int64 vectors (``b`` as :class:`Levels`); ``SampleError`` unless
        ``b ∈ [0, n)``, ``v ∈ [1, q]``. The pair is in levels already: it is never quantised."""
        if (isinstance(secret, np.ndarray) and secret.ndim == 2 and secret.shape[0] == 2) or (
            isinstance(secret, (tuple, list)) and len(secret) == 2
        ):
            parts = (secret[0], secret[1])
        else:
            raise SampleError("secret must be a pair (b, v) of feature vectors")
        b = as_feature_vector(parts[0], self.features, name="template b")
        v = as_feature_vector(parts[1], self.features, name="tolerance v")
        bad = np.flatnonzero((b < 0) | (b >= self.n))
        if bad.size:
            raise SampleError(f"template feature {int(bad[0])} is outside [0, {self.n})")
        bad = np.flatnonzero((v < 1) | (v > self.q))
        if bad.size:
            raise SampleError(f"tolerance of feature {int(bad[0])} is outside [1, {self.q}]")
        return b.view(Levels), v.view(np.ndarray)

    def secret_bytes(self, secret: Any) -> bytes:
        b, v = self.check_secret(secret)
        return pack_uints(b, self._b_width) + pack_uints(v, self._v_width)

    def draw_randomness(self, secret: Any) -> S2Draws | None:
        """s1: ``None``. s2/s3: fresh draws from :mod:`secrets`, in matrix form (:class:`S2Draws`)."""
        if self.scheme == "s1":
            return None
        b, v = self.check_secret(secret)
        k = self.draw_values
        draws = secure_uniform(k, (self.features, expected_draw_columns(self.n, self.q)))
        left, used, short, _ = gap_draw_split(b, v, self.n, gap_of_codes(draws - 1, self.q))
        while np.any(short):
            # Append fresh draws to the rows that ran out (never re-draw a row: that would bias).
            draws = np.concatenate((draws, secure_uniform(k, draws.shape)), axis=1)
            left, used, short, _ = gap_draw_split(b, v, self.n, gap_of_codes(draws - 1, self.q))
        return S2Draws(draws=draws, left=left, used=used)

    def randomness_space(self, secret: Any) -> Iterable[tuple[Any, float]]:
        """Every s2/s3 randomness value with its probability ``k^(−number of draws)`` (``k`` = ``q``
        for s2, ``q + 1`` for s3)."""
        if self.scheme == "s1":
            return [(None, 1.0)]
        b, v = self.check_secret(secret)
        if self.draw_values > MAX_ENUMERATED_RANDOMNESS:
            raise ParameterError(f"more than {MAX_ENUMERATED_RANDOMNESS} randomness values to enumerate")
        lengths = gap_lengths(self.scheme, self.q).tolist()
        per_feature = []
        total = 1
        for lo, hi in zip((b - v).tolist(), (self.n - b - v).tolist(), strict=False):
            lefts = _stopping_sequences(lo, lengths, MAX_ENUMERATED_RANDOMNESS)
            rights = _stopping_sequences(hi, lengths, MAX_ENUMERATED_RANDOMNESS)
            total *= len(lefts) * len(rights)
            if total > MAX_ENUMERATED_RANDOMNESS:
                raise ParameterError(f"more than {MAX_ENUMERATED_RANDOMNESS} randomness values to enumerate")
            per_feature.append(list(itertools.product(lefts, rights)))
        return (
            (combo, float(self.draw_values ** -sum(len(x) + len(y) for x, y in combo)))
            for combo in itertools.product(*per_feature)
        )

    # -- encode -----------------------------------------------------------------------------------
    def _encode_payload(self, secret: tuple[np.ndarray, np.ndarray], randomness: Any) -> bytes:
        b, v = secret
        if self.scheme == "s1":
            return pack_uints(v - 1, self._code_width) + pack_uints(lattice_offset(b, v), self._offset_width)
        draws = randomness if isinstance(randomness, S2Draws) else S2Draws.from_tuples(randomness, self.features)
        return self._encode_s2(b, v, draws)

    def _encode_s2(self, b: np.ndarray, v: np.ndarray, randomness: S2Draws) -> bytes:
        rows = self.features
        draws = np.asarray(randomness.draws)
        shapes = (np.shape(randomness.left), np.shape(randomness.used))
        if draws.ndim != 2 or draws.shape[0] != rows or draws.dtype.kind not in "iu" or shapes != ((rows,), (rows,)):
            raise ParameterError(f"s2 randomness must be integer draws for {rows} features")
        draws = draws.astype(np.int64)
        width = draws.shape[1]
        t = np.arange(width)[None, :]
        real = t < np.asarray(randomness.used, dtype=np.int64)[:, None]
        if np.any(real & ((draws < 1) | (draws > self.draw_values))):
            raise ParameterError(f"{self.scheme} randomness is not a sequence of draws in [1, {self.draw_values}]")
        gaps = gap_of_codes(np.clip(draws, 1, self.draw_values) - 1, self.q)
        left, used, short, before = gap_draw_split(b, v, self.n, gaps)
        if np.any(short) or not np.array_equal(left, randomness.left) or not np.array_equal(used, randomness.used):
            raise ParameterError(f"{self.scheme} randomness is not a sequence of draws the encoder would use")
        g1 = b - v - before[np.arange(rows), left]
        # Row layout: −g_1, then the gap codes r − 1 left draws outermost first, v − 1, right draws.
        symbols = np.empty((rows, width + 2), dtype=np.int64)
        symbols[:, 0] = -g1
        position = np.where(t < left[:, None], left[:, None] - t, t + 2)
        np.put_along_axis(symbols, position, draws - 1, axis=1)
        symbols[np.arange(rows), left + 1] = v - 1
        keep = np.arange(width + 2)[None, :] < (used + 2)[:, None]
        return pack_uints(used + 1, self._count_width) + pack_uints(symbols[keep], self._gap_width)

    # -- parsing ----------------------------------------------------------------------------------
    def _parse_s1(self, payload: bytes) -> tuple[np.ndarray, np.ndarray]:
        split = self.features * self._code_width
        if len(payload) != split + self.features * self._offset_width:
            raise SketchFormatError(
                f"s1 payload must be {split + self.features * self._offset_width} bytes, got {len(payload)}"
            )
        v = unpack_uints(payload[:split], self._code_width, self.features).astype(np.int64) + 1
        offsets = unpack_uints(payload[split:], self._offset_width, self.features).astype(np.int64)
        if np.any(v > self.q):
            raise SketchFormatError(f"s1 tolerance outside [1, {self.q}]")
        if np.any(offsets >= np.minimum(2 * v - 1, self.n)):
            raise SketchFormatError("s1 residue out of range for its tolerance")
        return v, offsets

    def _parse_s2(self, payload: bytes) -> _Partition:
        head = self.features * self._count_width
        if len(payload) < head:
            raise SketchFormatError(f"{self.scheme} payload truncated: {len(payload)} bytes, header needs {head}")
        counts = unpack_uints(payload[:head], self._count_width, self.features).astype(np.int64)
        if np.any(counts < self.gaps_min) or np.any(counts > self.gaps_max):
            raise SketchFormatError(
                f"{self.scheme} gap count outside [{self.gaps_min}, {self.gaps_max}] for n={self.n}, q={self.q}"
            )
        symbols = unpack_uints(payload[head:], self._gap_width, int(counts.sum()) + self.features)
        symbols = symbols.astype(np.int64)
        starts = np.concatenate(([0], np.cumsum(counts + 1)[:-1]))
        is_start = np.zeros(symbols.size, dtype=bool)
        is_start[starts] = True
        if np.any(symbols[starts] >= 2 * self.q):
            raise SketchFormatError(f"{self.scheme} first point outside (-{2 * self.q}, 0]")
        if np.any(symbols[~is_start] >= self.draw_values):
            allowed = f"the even values of [2, {2 * self.q}]"
            if self.scheme == "s3":
                allowed += f" and {s3_odd_gap(self.q)}"
            raise SketchFormatError(f"{self.scheme} gap outside {allowed}")
        steps = np.where(is_start, -symbols, gap_of_codes(symbols, self.q))
        running = np.cumsum(steps)
        before = running[starts] - steps[starts]
        points = running - np.repeat(before, counts + 1)
        partition = _Partition(counts=counts, starts=starts, points=points)
        self._check_cover(partition)
        return partition

    def _check_cover(self, part: _Partition) -> None:
        points, starts, ends = part.points, part.starts, part.ends
        if np.any(points[starts + 1] <= 0):
            raise SketchFormatError(f"{self.scheme} sketch has a surplus point at or below 0")
        if np.any(points[ends - 1] >= self.n) or np.any(points[ends] < self.n):
            raise SketchFormatError(f"{self.scheme} gaps do not cover [0, {self.n}) exactly")
        lower = np.delete(points, ends)
        upper = np.delete(points, starts)
        # A possible secret interval: even length (2v; every s2 gap is even) and centre in [0, n).
        possible = ((lower + upper) >= 0) & ((lower + upper) < 2 * self.n) & ((upper - lower) % 2 == 0)
        # Interval i of feature f sits at flat index starts[f] − f + i once the ends are dropped.
        first = starts - np.arange(self.features)
        if np.any(np.add.reduceat(possible.astype(np.int64), first) == 0):
            raise SketchFormatError(f"{self.scheme} sketch has no interval centred in [0, {self.n}) of even length")

    def _check_payload(self, payload: bytes) -> None:
        if self.scheme == "s1":
            self._parse_s1(payload)
        else:
            self._parse_s2(payload)

    # -- decode -----------------------------------------------------------------------------------
    def _decode_payload(self, payload: bytes, sample: Any) -> tuple[np.ndarray, np.ndarray]:
        d = self.quantiser.levels(sample, self.features, name="sample").view(np.ndarray)
        if self.scheme == "s1":
            v, offsets = self._parse_s1(payload)
            b = nearest_lattice_point(d, offsets, v)
        else:
            b, v = self._decode_s2(self._parse_s2(payload), d)
        if np.any((b < 0) | (b >= self.n)):
            raise DecodeError("sample is beyond the tolerance of at least one feature")
        return b.view(Levels), v

    def _decode_s2(self, part: _Partition, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # One sorted key array for all features: feature f's points live in [f·K, (f+1)·K).
        span = self.n + 4 * self.q + 1
        base = np.arange(self.features, dtype=np.int64) * span
        keys = part.points + 2 * self.q + np.repeat(base, part.counts + 1)
        probe = np.clip(d + 2 * self.q, 0, span - 1) + base
        above = np.searchsorted(keys, probe, side="right")  # index of the first g_i > d'
        if np.any(above <= part.starts) or np.any(above > part.ends):
            raise DecodeError("sample lies outside the partition of at least one feature")
        lower, upper = part.points[above - 1], part.points[above]
        if np.any((upper - lower) % 2):
            # Only s3 has odd gaps, and an odd interval is never the secret one (its length is 2v).
            raise DecodeError("sample lies in a decoy interval of at least one feature")
        return (lower + upper) // 2, (upper - lower) // 2

    # -- public views of the helper (what a linking adversary sees) -------------------------------
    def published_tolerances(self, helper: bytes) -> np.ndarray:
        """s1 only: the tolerances ``v`` stored in clear (the s1 linkage adversary's input)."""
        if self.scheme != "s1":
            raise ParameterError("only s1 publishes its tolerances")
        return self._parse_s1(self.payload(helper))[0]

    def partition(self, helper: bytes) -> list[np.ndarray]:
        """s2/s3: per feature the points ``g_1 < … < g_k`` of the published partition."""
        if self.scheme == "s1":
            raise ParameterError("only s2 and s3 publish a partition")
        part = self._parse_s2(self.payload(helper))
        return np.split(part.points, part.starts[1:])

    # -- accounting -------------------------------------------------------------------------------
    def report(self) -> EntropyReport:
        log_q = math.log2(self.q)
        bound = self.features * (1.0 + 2.0 * log_q)
        if self.scheme == "s1":
            # Σ_{v=1}^{q} min(2v − 1, n) in closed form (a loop over q = 2^40 never ends): the
            # first k = min(q, ⌊(n + 1)/2⌋) terms are odd numbers summing to k², the rest are n.
            k = min(self.q, (self.n + 1) // 2)
            exact_values = k * k + (self.q - k) * self.n
            return EntropyReport.from_bits(
                self.scheme_name,
                sketch_bits=bound,
                randomness_bits=0.0,
                notes=(
                    "s1: v in clear (log q bits) and b mod (2v-1) < 2q (1 + log q bits) per feature",
                    "deterministic: loss <= features * (1 + 2 log2 q) on (b, v)",
                    "v is stored in clear: two sketches of one person link by v",
                ),
                extra={
                    "scheme": "s1",
                    "exact_sketch_bits": self.features * math.log2(exact_values),
                    "loss_bound_bits_per_feature": 1.0 + 2.0 * log_q,
                },
            )
        if self.scheme == "s3":
            return self._report_s3()
        sketch_bits = self.features * (1.0 + log_q + self.gaps_max * log_q)
        randomness_bits = self.features * (self.gaps_max - 1) * log_q
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=sketch_bits,
            randomness_bits=randomness_bits,
            notes=(
                "s2: a sketch with J gaps is g_1 in (-2q, 0] (1 + log q bits) and J gaps of q values "
                "(J log q bits); its randomness is J - 1 uniform draws ((J - 1) log q bits)",
                "|S_J| - H(R|J) = 1 + 2 log2 q per feature for every J; stated at J = J_max",
                "v is hidden among random gaps of the same range",
            ),
            extra={
                "scheme": "s2",
                "gaps_min": self.gaps_min,
                "gaps_max": self.gaps_max,
                "sketch_bits_at_gaps_min": self.features * (1.0 + log_q + self.gaps_min * log_q),
                "randomness_bits_at_gaps_min": self.features * (self.gaps_min - 1) * log_q,
                "loss_bound_bits_per_feature": 1.0 + 2.0 * log_q,
            },
        )

    def _report_s3(self) -> EntropyReport:
        """s3: each gap is one of ``q + 1`` lengths, each decoy draw uniform over them (module doc)."""
        log_q, log_k = math.log2(self.q), math.log2(self.q + 1)
        per_feature = 1.0 + log_q + log_k
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=self.features * (1.0 + log_q + self.gaps_max * log_k),
            randomness_bits=self.features * (self.gaps_max - 1) * log_k,
            notes=(
                "s3: a sketch with J gaps is g_1 in (-2q, 0] (1 + log q bits) and J gaps of q + 1 values "
                "(J log(q+1) bits); its randomness is J - 1 uniform draws ((J - 1) log(q+1) bits)",
                "|S_J| - H(R|J) = 1 + log2 q + log2(q+1) per feature for every J; stated at J = J_max",
                f"decoy gaps uniform on 2, 4, ..., 2q and the odd {s3_odd_gap(self.q)}: the boundaries' "
                "parity no longer follows b - v; v is hidden among the even intervals",
                "loss bound exceeds s2's 1 + 2 log2 q by log2(1 + 1/q) <= log2(3/2) bits per feature",
            ),
            extra={
                "scheme": "s3",
                "odd_gap": s3_odd_gap(self.q),
                "gaps_min": self.gaps_min,
                "gaps_max": self.gaps_max,
                "sketch_bits_at_gaps_min": self.features * (1.0 + log_q + self.gaps_min * log_k),
                "randomness_bits_at_gaps_min": self.features * (self.gaps_min - 1) * log_k,
                "loss_bound_bits_per_feature": per_feature,
                "loss_bound_excess_over_s2_bits_per_feature": per_feature - (1.0 + 2.0 * log_q),
            },
        )

    # -- symbols (for mixing) ---------------------------------------------------------------------
    def pad_group_bits(self, report: EntropyReport | None = None) -> float:
        """0 in the worst case, for every scheme: a pad cannot be relied on to move anything.

        s1 mixes only ``b mod (2v − 1)``, whose group is trivial when every ``v`` is 1 (and ``v``
        itself stays in clear); s2 mixes only the split points inside pairs of interior gaps, and a
        partition made of gap pairs summing to 4 (or of fewer than four gaps) leaves no freedom;
        s3 moves only pairs of two even gaps, so a partition whose pairs all hold its odd length
        leaves none either.
        So the mixing accounting assumes every key may be consistent with ``(S, Q)`` (``β`` equal
        to the key's length) and claims no diverted loss for these sketches.
        """
        return 0.0

    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        if self.scheme == "s1":
            v, offsets = self._parse_s1(payload)
            moduli = np.minimum(2 * v - 1, self.n).astype(np.uint64)
            return offsets.astype(np.uint64), SymbolSpace("mod", moduli=moduli)
        gaps, first, low, modulus = self._movable_pairs(self._parse_s2(payload))
        return ((gaps[first] - low) // 2).astype(np.uint64), SymbolSpace("mod", moduli=modulus.astype(np.uint64))

    def _movable_pairs(self, part: _Partition) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Gaps, the index of each movable pair's first gap, its lowest value and the modulus."""
        gaps = part.gaps()
        gap_starts = np.concatenate(([0], np.cumsum(part.counts)[:-1]))
        local = np.arange(gaps.size) - np.repeat(gap_starts, part.counts)
        count = np.repeat(part.counts, part.counts)
        movable = (local % 2 == 1) & (local + 1 <= count - 2)
        if self.scheme == "s3":
            # Only pairs of two even gaps move (as in s2): a pair holding the odd length has one
            # split at most, and turning two even gaps into two odd ones could remove the last
            # even interval (the possible secret one) - a symbol vector that is no valid sketch.
            even = gaps % 2 == 0
            movable &= even & np.concatenate((even[1:], [False]))
        first = np.flatnonzero(movable)
        total = gaps[first] + gaps[first + 1]
        low = np.maximum(2, total - 2 * self.q)
        high = np.minimum(2 * self.q, total - 2)
        return gaps, first, low, (high - low) // 2 + 1

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        if self.scheme == "s1":
            v, _ = self._parse_s1(payload)
            return pack_uints(v - 1, self._code_width) + pack_uints(symbols, self._offset_width)
        part = self._parse_s2(payload)
        gaps, first, low, _ = self._movable_pairs(part)
        total = gaps[first] + gaps[first + 1]
        gaps = gaps.copy()
        gaps[first] = low + 2 * symbols.astype(np.int64)
        gaps[first + 1] = total - gaps[first]
        starts_in_gaps = part.starts - np.arange(self.features)
        gap_codes = np.where(gaps % 2 == 1, self.draw_values - 1, gaps // 2 - 1)  # s3's odd gap: code q
        codes = np.insert(gap_codes, starts_in_gaps, -part.points[part.starts])
        return pack_uints(part.counts, self._count_width) + pack_uints(codes, self._gap_width)
