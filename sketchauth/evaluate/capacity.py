"""The angular pipeline's code size against the sphere's capacity: what each codebook size costs.

A code of ``2^k`` codewords on the unit sphere ``S^(n−1)`` splits it into ``2^k`` decoding cells of
average area ``2^−k``. For genuine probes spread isotropically about the template with a density
that falls with the angle (the helper's Haar rotation makes the code's orientation uniform), the
cell of a given area that holds the most of them is the spherical cap about the template
(Hardy–Littlewood rearrangement). So no ``k``-bit code, however decoded, accepts a genuine probe
beyond the *capacity angle* ``θ_k``, the angle of the cap of area ``2^−k``, more than a cap would:

    floor FNMR(k) = share of genuine pairs with cos(template, probe) < cos θ_k.

The cap area is a regularised incomplete beta function (Li 2011, "Concise formulas for the area
and volume of a hyperspherical cap", eq. 1): for ``0 ≤ θ ≤ π/2``

    A_n(θ) / A_n(π) = ½ · I_{sin²θ}((n − 1)/2, ½),

computed here in log space by its continued fraction (:func:`log_betainc`, relative error below
:data:`CAP_TOLERANCE` down to areas of ``2^−1000``), and ``cos θ_k`` by bisection to
:data:`COS_TOLERANCE`. The tests compare it with an independent quadrature of
``∫_0^θ sin^(n−2)φ dφ / ∫_0^π sin^(n−2)φ dφ`` and with scipy's ``betainc``.

**The curve.** Per code size (:data:`CODE_SIZES`, those below the dimension), a
:class:`CodeSizePoint` holds the capacity cosine and floor FNMR, the pipeline's FNMR at the target
FMR and its ratio to the floor, the FMR it realises, the unprotected centred-cosine matcher's FNMR
at the target FMR, and the **population-attack cost**: an attacker holding the database and the
pepper runs every public embedding (a scraped photo, a recording) through every helper, decoding
offline *without* the verifier's angle check, and tests each decoded codeword on the argon2id hash.
Success per try is the share of other people's embeddings the code decodes to the helper's
codeword, so the first success costs ``tries / successes`` argon2id evaluations — ``log2`` of it
in bits. A code whose cells are wider than the threshold decodes far more of them than the
verifier accepts (the attack is cheap); once the cells match the threshold the cost levels off near
``log2(1/FMR)`` and more bits add nothing to it (the codebook bits price only the search *without*
a matching sample). Measured on a seeded
sample of at most :data:`ATTACK_PAIRS` impostor pairs (:func:`background_curve`, which ``features
fit`` runs for every size: :data:`CURVE_ATTACK_PAIRS` pairs of :data:`CURVE_ATTACK_TEMPLATES`
seeded templates, said in its ``source``); with no success the figure is the lower bound
``log2(tries)``.

:func:`background_curve` measures the curve on the background (identity-disjoint
cross-validation, what ``features fit`` sees); :func:`measured_curve` measures pipelines on people
outside the background with the scheme's exact decider, cross-checked by real decodes.
:func:`choose_code_size` is the default rule (:data:`FNMR_FACTOR`, :data:`FNMR_SLACK`,
:data:`FLOOR_BITS`, :data:`UNUSABLE_FNMR`; why these, in ``docs/embeddings.md``).
"""

from __future__ import annotations

import hmac
import math
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import numpy as np

from sketchauth.errors import DecodeError, ParameterError, SketchAuthError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.deciders import decide_exact, polar_accepts
from sketchauth.evaluate.fitting.angular import (
    SharedFolds,
    blas_one_thread,
    for_target_fmr_shared,
    projected_directions,
)
from sketchauth.evaluate.fitting.common import calibration_of
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.rates import det_from_scores, fnmr_at_fmr_on_det
from sketchauth.evaluate.trials import Enrolled, projected_trials
from sketchauth.sketches.angular import probe_matrix
from sketchauth.sketches.angular_polar import MIN_POLAR_DIMENSION, PolarAngularSketch
from sketchauth.sketches.polar import correlation, decode_batch, signs

__all__ = [
    "ATTACK_PAIRS",
    "CAP_TOLERANCE",
    "CODE_SIZES",
    "COS_TOLERANCE",
    "CURVE_ATTACK_PAIRS",
    "CURVE_ATTACK_TEMPLATES",
    "FLOOR_BITS",
    "FNMR_FACTOR",
    "FNMR_SLACK",
    "UNUSABLE_FNMR",
    "CodeSizeChoice",
    "CodeSizeCurve",
    "CodeSizePoint",
    "CrossCheckError",
    "accepted_pairs",
    "cap_fraction",
    "capacity_cos",
    "capacity_floor",
    "choose_code_size",
    "code_fnmr",
    "code_limits",
    "code_sizes",
    "grouped_probes",
    "log2_cap_fraction",
    "log_betainc",
    "measured_captures",
    "measured_curve",
    "pair_scores",
    "population_attack",
    "random_code_fnmr",
    "rethresholded",
    "threshold_at_fmr",
]

#: Code sizes (information bits) the curve measures, where the dimension holds them.
CODE_SIZES = (32, 48, 64, 96, 128)
#: The default rule: a code may reject at most this factor of the cosine matcher's FNMR ...
FNMR_FACTOR = 1.5
#: ... or this much above it (absolute), whichever is looser (a strong model's cosine FNMR is ~0).
FNMR_SLACK = 0.01
#: ... and is never smaller than this many bits (``2^32`` argon2id evaluations to search one helper's
#: codebook without a sample, against ``log2(1/FMR)`` ≈ 10–17 bits for the population attack).
FLOOR_BITS = 32
#: A pipeline that rejects more genuine attempts than this is not usable: never offered silently.
UNUSABLE_FNMR = 0.5
#: Relative error of :func:`log_betainc`'s continued fraction (its stopping rule).
CAP_TOLERANCE = 1e-13
#: Absolute error of :func:`capacity_cos` (bisection).
COS_TOLERANCE = 1e-12
#: Pairs whose cosine is this far below ``min_cos`` cannot be accepted (the helper's fixed-point
#: rounding moves the sketch's angle check by about 10^−3): they are rejected without decoding.
PREFILTER = 0.02
#: :func:`threshold_at_fmr` keeps ``min_cos`` at least this far above the score it refuses (the exact
#: angle check resolves far finer; float scores agree with it to ~10^−15).
SCORE_GAP = 1e-9
#: Pairs re-decided by real ``decode`` per code size in :func:`measured_curve`.
CROSSCHECK_PAIRS = 200
#: Impostor pairs decoded offline per code size for the population attack (a seeded sample).
ATTACK_PAIRS = 20_000
#: :func:`background_curve`'s attack (``features fit`` runs it for every size before choosing one):
#: this many templates, a seeded sample, enrolled for real ...
CURVE_ATTACK_TEMPLATES = 100
#: ... and this many of their impostor pairs decoded per code size (a seeded sample).
CURVE_ATTACK_PAIRS = 5_000


class CrossCheckError(SketchAuthError):
    """The fast decider and real ``decode`` disagreed on a checked pair: the figures are not the scheme's."""


def log_betainc(a: float, b: float, x: float) -> float:
    """``ln I_x(a, b)``, the regularised incomplete beta function, for ``a, b > 0`` and ``0 ≤ x ≤ 1``.

    The continued fraction of Numerical Recipes §6.4 (modified Lentz), evaluated where it
    converges fast (``x < (a + 1)/(a + b + 2)``) and by ``I_x(a, b) = 1 − I_{1−x}(b, a)``
    elsewhere; the prefactor ``x^a (1−x)^b / (a·B(a, b))`` in logs, so areas far below the
    smallest float keep their relative accuracy (:data:`CAP_TOLERANCE`).

    >>> round(math.exp(log_betainc(2.0, 3.0, 0.4)), 12)  # Σ_{j=2..4} C(4, j) 0.4^j 0.6^(4−j)
    0.5248
    """
    if not (a > 0 and b > 0 and 0.0 <= x <= 1.0):
        raise ParameterError(f"log_betainc needs a, b > 0 and 0 <= x <= 1, got {a!r}, {b!r}, {x!r}")
    if x == 0.0:
        return -math.inf
    if x == 1.0:
        return 0.0
    if x > (a + 1.0) / (a + b + 2.0):
        rest = math.exp(_log_direct(b, a, 1.0 - x))  # 1 − x < (b + 1)/(a + b + 2): the fast side
        return math.log1p(-rest) if rest < 1.0 else -math.inf
    return _log_direct(a, b, x)


def _log_direct(a: float, b: float, x: float) -> float:
    """``ln I_x(a, b)`` by the continued fraction itself (``0 < x < 1``)."""
    front = a * math.log(x) + b * math.log1p(-x) + math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) - math.log(a)
    return front + math.log(_beta_fraction(a, b, x))


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (modified Lentz; Numerical Recipes ``betacf``)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < CAP_TOLERANCE:
            return h
    raise ParameterError(f"the incomplete beta fraction did not converge for a={a}, b={b}, x={x}")


def log2_cap_fraction(dimension: int, cos: float) -> float:
    """``log2`` of the share of ``S^(n−1)`` within the cap ``{x : ⟨x, e⟩ ≥ cos}`` (module docstring).

    >>> log2_cap_fraction(3, 0.0), round(log2_cap_fraction(3, 0.5), 12)  # S²: the cap's share is (1 − cos)/2
    (-1.0, -2.0)
    """
    if dimension < 2:
        raise ParameterError(f"a cap needs a sphere of at least 2 dimensions, got {dimension}")
    c = max(-1.0, min(1.0, float(cos)))
    half = log_betainc((dimension - 1) / 2.0, 0.5, 1.0 - c * c) / math.log(2.0) - 1.0
    if c >= 0.0:
        return half
    return math.log2(-math.expm1(half * math.log(2.0)))  # the complement of the opposite cap


def cap_fraction(dimension: int, cos: float) -> float:
    """The share of ``S^(n−1)`` within the cap ``{x : ⟨x, e⟩ ≥ cos}`` (``2^log2_cap_fraction``)."""
    return float(2.0 ** log2_cap_fraction(dimension, cos))


def capacity_cos(dimension: int, bits: float) -> float:
    """``cos θ_k``: the cap of this cosine holds ``2^−bits`` of the sphere (bisection, :data:`COS_TOLERANCE`).

    >>> round(capacity_cos(192, 64), 3), round(capacity_cos(512, 64), 3)
    (0.593, 0.386)
    """
    if not (bits >= 1 and math.isfinite(bits)):
        raise ParameterError(f"a code holds at least 1 bit, got {bits!r}")
    lo, hi = 0.0, 1.0  # the cap shrinks as the cosine grows; at cos 0 it is half the sphere
    while hi - lo > COS_TOLERANCE:
        mid = (lo + hi) / 2.0
        if log2_cap_fraction(dimension, mid) > -bits:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def capacity_floor(genuine_cos: Any, dimension: int, bits: float) -> float:
    """The least FNMR any ``bits``-bit code on ``S^(n−1)`` can have on these genuine cosines."""
    cos = np.asarray(genuine_cos, dtype=np.float64)
    if cos.size == 0:
        raise ParameterError("the capacity floor needs genuine pairs")
    return float(np.count_nonzero(cos < capacity_cos(dimension, bits)) / cos.size)


def random_code_fnmr(genuine_cos: Any, dimension: int, bits: float) -> float:
    """The FNMR of a *random* ``bits``-bit code on ``S^(n−1)`` decoded to the nearest codeword, on
    these genuine cosines: the ensemble average over codes of ``2^bits`` independent uniform points.

    A genuine probe at angle ``θ`` from its codeword decodes wrongly iff another codeword lies
    closer to it, i.e. inside the cap of angle ``θ`` about the probe; each of the ``M − 1`` others
    does so independently with probability ``Ω(θ)`` (:func:`cap_fraction`), so the failure
    probability is ``1 − (1 − Ω(θ))^(M−1)``, exactly (Shannon 1959, "Probability of error for
    optimal codes in a Gaussian channel", the random-code bound). Some code of the ensemble does at
    least this well, so the best ``bits``-bit code lies between :func:`capacity_floor` and this
    figure: what is *achievable* at this size, against the floor no code reaches.
    """
    cos = np.asarray(genuine_cos, dtype=np.float64).reshape(-1)
    if cos.size == 0:
        raise ParameterError("the random-code FNMR needs genuine pairs")
    log2_share = np.array([log2_cap_fraction(dimension, float(c)) for c in cos])
    share = np.exp2(log2_share)
    others = 2.0**bits - 1.0
    # log1p keeps (1 − Ω)^(M−1) exact for the tiny shares of large codes; Ω = 1 (cos −1) fails surely.
    exponent = others * np.log1p(-np.minimum(share, 1.0 - 2.0**-53))
    return float(np.mean(np.where(share >= 1.0, 1.0, -np.expm1(exponent))))


def code_sizes(dimension: int, sizes: Sequence[int] = CODE_SIZES) -> tuple[int, ...]:
    """The sizes a polar code of ``dimension`` coordinates can have (``bits < dimension``)."""
    if dimension < MIN_POLAR_DIMENSION:
        return ()
    return tuple(int(k) for k in sizes if 0 < k < dimension)


@dataclass(frozen=True, slots=True)
class CodeSizePoint:
    """One code size on the curve (module docstring); rates are shares of trials."""

    bits: int
    capacity_cos: float
    floor_fnmr: float
    fnmr: float
    fmr: float
    false_matches: int
    impostor_trials: int
    genuine_trials: int
    cosine_fnmr: float
    min_cos: float
    #: The population attack: impostor pairs decoded offline (no angle check) and how many decoded right.
    attack_tries: int = 0
    attack_successes: int = 0

    @property
    def ratio(self) -> float:
        """FNMR over the capacity floor (1 when both are 0)."""
        if self.floor_fnmr == 0:
            return 1.0 if self.fnmr == 0 else math.inf
        return self.fnmr / self.floor_fnmr

    @property
    def attack_bits(self) -> float | None:
        """The population attack in bits, ``log2(tries / successes)``.

        ``log2(tries)`` (a lower bound) with no success; ``None`` when it was not run.
        """
        if self.attack_tries == 0:
            return None
        return math.log2(self.attack_tries / max(1, self.attack_successes))

    def to_dict(self) -> dict[str, Any]:
        return {
            "bits": self.bits,
            "capacity_cos": self.capacity_cos,
            "floor_fnmr": self.floor_fnmr,
            "fnmr": self.fnmr,
            "fnmr_over_floor": self.ratio,
            "fmr": self.fmr,
            "false_matches": self.false_matches,
            "impostor_trials": self.impostor_trials,
            "genuine_trials": self.genuine_trials,
            "cosine_fnmr": self.cosine_fnmr,
            "min_cos": self.min_cos,
            "attack_tries": self.attack_tries,
            "attack_successes": self.attack_successes,
            "attack_bits": self.attack_bits,
            "attack_bits_is_lower_bound": self.attack_successes == 0,
        }


@dataclass(frozen=True, slots=True)
class CodeSizeChoice:
    """The default rule's verdict: the chosen size (``None``: no size is acceptable) and why."""

    bits: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"bits": self.bits, "reason": self.reason}


def _allowed(cosine_fnmr: float, factor: float, slack: float) -> float:
    return min(UNUSABLE_FNMR, max(factor * cosine_fnmr, cosine_fnmr + slack))


def choose_code_size(
    points: Sequence[CodeSizePoint],
    *,
    factor: float = FNMR_FACTOR,
    slack: float = FNMR_SLACK,
    floor_bits: int = FLOOR_BITS,
) -> CodeSizeChoice:
    """The largest code of at least ``floor_bits`` whose FNMR is within ``max(factor·cos, cos + slack)``
    of the cosine matcher's (and at most :data:`UNUSABLE_FNMR`); ``bits=None`` with the reason otherwise.

    >>> p = lambda k, f: CodeSizePoint(k, 0.5, 0.0, f, 0.0, 0, 100, 100, 0.1, 0.5)
    >>> choose_code_size([p(32, 0.11), p(64, 0.14), p(128, 0.3)]).bits
    64
    >>> choose_code_size([p(32, 0.6)]).bits is None
    True
    """
    eligible = [p for p in points if p.bits >= floor_bits]
    if not eligible:
        return CodeSizeChoice(None, f"no code of at least {floor_bits} bits fits these dimensions")
    good = [p for p in eligible if p.fnmr <= _allowed(p.cosine_fnmr, factor, slack)]
    if good:
        best = max(good, key=lambda p: p.bits)
        return CodeSizeChoice(
            best.bits,
            f"the largest code with FNMR {best.fnmr:.4f} within max({factor:g} x cosine's {best.cosine_fnmr:.4f}, "
            f"cosine + {slack:g}) and at least {floor_bits} bits",
        )
    smallest = min(eligible, key=lambda p: p.bits)
    return CodeSizeChoice(
        None,
        f"no code size is acceptable: even {smallest.bits} bits reject {smallest.fnmr:.1%} of genuine attempts "
        f"(capacity floor {smallest.floor_fnmr:.1%}) against {smallest.cosine_fnmr:.1%} for unprotected cosine "
        f"(allowed: {_allowed(smallest.cosine_fnmr, factor, slack):.1%}); the embeddings are too noisy for "
        f"{floor_bits}-bit codes: enrol from more captures, use a stronger model, or accept fewer bits explicitly",
    )


@dataclass(frozen=True, slots=True)
class CodeSizeCurve:
    """The curve at one target FMR on one population (``source`` says which)."""

    dimension: int
    target_fmr: float
    source: str
    points: tuple[CodeSizePoint, ...]
    #: Whether the default rule reads this curve (the background's); a curve measured on new people
    #: shows the figures of sizes chosen elsewhere, and its cosine threshold is read on those people.
    chooses: bool = True
    #: The background curve's fold transforms and cosine calibrations
    #: (:class:`~sketchauth.evaluate.fitting.angular.SharedFolds`), for further calibrations of the
    #: size kept on the same background (its thresholds for several captures); not part of the curve.
    shared: Any = field(default=None, compare=False, repr=False)

    def choice(self, **rule: Any) -> CodeSizeChoice:
        return choose_code_size(self.points, **rule)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "target_fmr": self.target_fmr,
            "source": self.source,
            "points": [p.to_dict() for p in self.points],
            **({"choice": self.choice().to_dict()} if self.chooses else {}),
        }

    def table(self) -> str:
        """The curve as a Markdown table with the default rule's choice under it."""
        lines = [
            f"Code size at FMR {self.target_fmr:g} ({self.source}, {self.dimension} dimensions):",
            "",
            "| code bits | capacity cos | floor FNMR | FNMR | FNMR / floor | realised FMR | cosine FNMR "
            "| population attack (argon2, bits) |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for p in self.points:
            bits = p.attack_bits
            attack = "—" if bits is None else ("≥ " if p.attack_successes == 0 else "") + f"{bits:.1f}"
            lines.append(
                f"| {p.bits} | {p.capacity_cos:.3f} | {p.floor_fnmr:.4f} | {p.fnmr:.4f} | {p.ratio:.2f} | "
                f"{p.fmr:.2e} ({p.false_matches}/{p.impostor_trials}) | {p.cosine_fnmr:.4f} | {attack} |"
            )
        if not self.chooses:
            return "\n".join(lines) + "\n"
        choice = self.choice()
        verdict = f"{choice.bits} bits" if choice.bits is not None else "none"
        return "\n".join(lines) + f"\n\nDefault code size: {verdict} — {choice.reason}.\n"


def _cosines(transform: Any, dims: np.ndarray, people: LabelledVectors, enrol_samples: int) -> Any:
    """Templates, probes (unit directions), owners and the genuine/impostor cosine matrix of ``people``."""
    trials = projected_trials(lambda x: x, people, enrol_samples)
    templates, probes = projected_directions(transform, dims, trials)
    return trials, templates, probes, templates @ probes.T


def _cosine_fnmr(cos: np.ndarray, owner: np.ndarray, target_fmr: float) -> float:
    """The unprotected centred-cosine matcher's FNMR at ``target_fmr`` (threshold read on these people)."""
    genuine_mask = owner[None, :] == np.arange(cos.shape[0])[:, None]
    fmr, fnmr, thresholds = det_from_scores(-cos[genuine_mask], -cos[~genuine_mask])
    return fnmr_at_fmr_on_det(fmr, fnmr, thresholds, target_fmr, genuine_trials=int(genuine_mask.sum()))[0]


def background_curve(
    transform: Any,
    background: LabelledVectors,
    *,
    target_fmr: float,
    enrol_samples: int,
    sizes: Sequence[int] = CODE_SIZES,
    **calibration: Any,
) -> tuple[CodeSizeCurve, dict[int, Any]]:
    """The curve on the background and the calibrated pipeline of each size (what ``features fit`` chooses from).

    Each size is :func:`~sketchauth.evaluate.fitting.angular.for_target_fmr` with that many
    polar bits (no threshold matching); its FNMR and FMR are the calibration's pooled
    cross-validated ones (decoding included), the cosine FNMR the cosine rule's calibration at the
    same target, the floor from the background's genuine cosines. ``calibration``: ``refit``,
    ``folds``, ``confidence``, ``list_size``. The pipelines' ``decode_failures`` are not measured
    (a third of the time over five sizes), nor their thresholds for several captures: both for the
    size kept (:func:`~sketchauth.evaluate.fitting.angular.decode_failures`,
    :func:`~sketchauth.evaluate.fitting.angular.calibrate_captures`). The sizes share one
    :class:`~sketchauth.evaluate.fitting.angular.SharedFolds`: each fold's transform is refitted
    and the cosine rule calibrated once, not once per size (the same figures).
    """
    dims = np.arange(transform.dimensions)
    trials, templates, probes, cos = _cosines(transform, dims, background, enrol_samples)
    genuine = cos[trials.owner, np.arange(trials.owner.size)]
    impostor = trials.owner[None, :] != np.arange(cos.shape[0])[:, None]
    base = CalibrationOptions(
        target_fmr=target_fmr,
        enrol_samples=enrol_samples,
        code="polar",
        match_threshold=False,
        measure_decode_failures=False,
        calibrate_captures=False,
        **calibration,
    )
    # Every size's calibration refits the same fold transforms and calibrates the same cosine rule:
    # once each, shared (the figures are those of fitting afresh per size).
    shared = SharedFolds(transform, background)
    cosine = shared.cosine(dims, base)
    chosen_rows, attack_impostor = _attack_sample(impostor, np.random.default_rng(0))
    attack_templates = templates[chosen_rows]
    points = []
    pipelines, attacks = _calibrated_sizes(
        shared,
        base,
        code_sizes(int(dims.size), sizes),
        partial(_curve_attack, templates=attack_templates, probes=probes, impostor=attack_impostor),
    )
    for bits, pipeline in pipelines.items():
        chosen = calibration_of(pipeline)
        tries, successes = attacks[bits]
        points.append(
            CodeSizePoint(
                bits=bits,
                capacity_cos=capacity_cos(int(dims.size), bits),
                floor_fnmr=capacity_floor(genuine, int(dims.size), bits),
                fnmr=float(chosen.fnmr),
                fmr=float(chosen.fmr),
                false_matches=int(chosen.false_matches[chosen.index]),
                impostor_trials=int(chosen.impostor_trials),
                genuine_trials=int(chosen.genuine_trials),
                cosine_fnmr=float(cosine.fnmr),
                min_cos=float(pipeline.sketch.min_cos),
                attack_tries=tries,
                attack_successes=successes,
            )
        )
    source = (
        "background people, identity-disjoint cross-validation; floor on the background's genuine cosines; "
        f"population attack on {chosen_rows.size} enrolled templates (seeded sample) x at most "
        f"{CURVE_ATTACK_PAIRS} of their impostor pairs"
    )
    return CodeSizeCurve(int(dims.size), float(target_fmr), source, tuple(points), shared=shared), pipelines


def _calibrated_sizes(
    shared: SharedFolds, base: CalibrationOptions, sizes: Sequence[int], attack: Callable[..., tuple[int, int]]
) -> tuple[dict[int, Any], dict[int, tuple[int, int]]]:
    """Each size's calibrated pipeline and its population attack ``(tries, successes)``.

    Two sizes are calibrated at a time (each decodes on threads of its own: the list decoder and the
    rotations' expansion release the GIL, so one size's Python work runs beside the other's
    decoding), and each size's attack runs on a thread once its calibration is done. Every size
    has its own seeded draws, so the order they run in changes no figure.
    """
    with blas_one_thread(), ThreadPoolExecutor(2) as calibrating, ThreadPoolExecutor(2) as attacking:
        running = {
            bits: calibrating.submit(for_target_fmr_shared, base.but(security_bits=bits), shared) for bits in sizes
        }
        pipelines: dict[int, Any] = {}
        attacks: dict[int, Future[tuple[int, int]]] = {}
        for bits, future in running.items():
            pipelines[bits] = future.result()
            attacks[bits] = attacking.submit(attack, pipelines[bits].sketch, bits=bits)
        return pipelines, {bits: future.result() for bits, future in attacks.items()}


def _attack_sample(impostor: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The background curve's attack sample: :data:`CURVE_ATTACK_TEMPLATES` template rows (seeded,
    in order) and their rows of the impostor mask; only these are enrolled."""
    count = min(impostor.shape[0], CURVE_ATTACK_TEMPLATES)
    rows = np.sort(rng.choice(impostor.shape[0], size=count, replace=False))
    return rows, impostor[rows]


def _curve_attack(
    sketch: Any, *, templates: np.ndarray, probes: np.ndarray, impostor: np.ndarray, bits: int
) -> tuple[int, int]:
    """One size's population attack on the curve's sample (its templates enrolled now)."""
    enrolled = _enrol(sketch, templates)
    return population_attack(sketch, enrolled, probes, impostor, np.random.default_rng(bits), pairs=CURVE_ATTACK_PAIRS)


def grouped_probes(probes: np.ndarray, owner: np.ndarray, captures: int) -> tuple[np.ndarray, np.ndarray]:
    """Attempts of ``captures`` captures: each person's probes (unit directions, in order) in
    consecutive disjoint groups of ``captures`` (a remainder is dropped), each the normalised mean
    of its directions — :meth:`~sketchauth.features.angular.AngularPipeline.captures_transform`'s
    rule. Returns the attempts' directions and owners.

    >>> p, o = grouped_probes(np.eye(3)[[0, 0, 1, 1, 2]], np.array([0, 0, 0, 1, 1]), 2)
    >>> p.round(3).tolist(), o.tolist()
    ([[1.0, 0.0, 0.0], [0.0, 0.707, 0.707]], [0, 1])
    """
    if captures == 1:
        return probes, owner
    rows: list[np.ndarray] = []
    owners: list[int] = []
    for person in np.unique(owner).tolist():
        mine = np.flatnonzero(owner == person)
        for start in range(0, mine.size - captures + 1, captures):
            mean = probes[mine[start : start + captures]].mean(axis=0)
            rows.append(mean / np.linalg.norm(mean))
            owners.append(int(person))
    if not rows:
        raise ParameterError(f"no person has {captures} probes beyond the enrolment")
    return np.stack(rows), np.array(owners)


def measured_curve(
    pipelines: Mapping[int, Any],
    people: LabelledVectors,
    *,
    enrol_samples: int,
    target_fmr: float,
    seed: int = 0,
    probe_captures: int = 1,
) -> CodeSizeCurve:
    """The curve of calibrated pipelines (by code bits) on ``people`` outside the background.

    Every person is enrolled for real (``encode``) from their first ``enrol_samples`` captures;
    every genuine and impostor pair is decided by the scheme's exact decider (pairs more than
    :data:`PREFILTER` below ``min_cos`` cannot pass the sketch's angle check and are rejected
    without decoding), and :data:`CROSSCHECK_PAIRS` of them per size are re-decided by real
    ``decode``: one disagreement raises :class:`CrossCheckError`. With ``probe_captures`` > 1
    every attempt is that many of the person's other captures (:func:`grouped_probes`).
    """
    curves = measured_captures(
        pipelines, people, enrol_samples=enrol_samples, target_fmr=target_fmr, seed=seed, captures=(probe_captures,)
    )
    return curves[probe_captures]


def measured_captures(
    pipelines: Mapping[int, Any],
    people: LabelledVectors,
    *,
    enrol_samples: int,
    target_fmr: float,
    seed: int = 0,
    captures: Sequence[int] = (1, 2, 3),
) -> dict[int, CodeSizeCurve]:
    """:func:`measured_curve` with attempts of each number of ``captures``, like for like.

    The same ``people``, each enrolled **once** per code size (the same helpers for every number
    of captures), the same pipelines (thresholds), and attempts drawn from the same captures: each
    person's captures beyond the enrolment, in consecutive disjoint groups of ``k``
    (:func:`grouped_probes`; a remainder is dropped, so ``k = 1`` uses every one of them). Each
    curve reports the FMR it realises on its own impostor attempts (other people's groups of
    ``k``). Pass only people with ``enrol_samples + max(captures)`` captures or more.
    """
    if not pipelines:
        raise ParameterError("no pipeline to measure")
    first = next(iter(pipelines.values()))
    trials, templates, single, _ = _cosines(first.transform, first.dims, people, enrol_samples)
    enrolled = {bits: _enrol(pipeline.sketch, templates) for bits, pipeline in pipelines.items()}
    curves = {}
    for k in captures:
        probes, owner = grouped_probes(single, trials.owner, k)
        points = [
            _measured_point(pipelines[bits], enrolled[bits], templates, probes, owner, target_fmr, seed)
            for bits in sorted(pipelines)
        ]
        source = (
            f"{templates.shape[0]} people outside the background, {enrol_samples} capture(s) to enrol, "
            f"{k} per attempt; cosine FNMR at a threshold read on these people"
        )
        curves[k] = CodeSizeCurve(int(first.dims.size), float(target_fmr), source, tuple(points), chooses=False)
    return curves


def _measured_point(
    pipeline: Any,
    enrolled: Enrolled,
    templates: np.ndarray,
    probes: np.ndarray,
    owner: np.ndarray,
    target_fmr: float,
    seed: int,
) -> CodeSizePoint:
    """One calibrated pipeline on enrolled ``templates`` and attempts ``probes`` of ``owner``."""
    bits = int(pipeline.sketch.bits)
    dimension = int(pipeline.dims.size)
    cos = templates @ probes.T
    genuine_mask = owner[None, :] == np.arange(cos.shape[0])[:, None]
    genuine = cos[genuine_mask]
    accepted = accepted_pairs(pipeline.sketch, enrolled, probes, cos, seed)
    false_matches = int(np.count_nonzero(accepted & ~genuine_mask))
    impostors = int((~genuine_mask).sum())
    tries, successes = population_attack(
        pipeline.sketch, enrolled, probes, ~genuine_mask, np.random.default_rng([seed, bits])
    )
    return CodeSizePoint(
        bits=bits,
        capacity_cos=capacity_cos(dimension, bits),
        floor_fnmr=capacity_floor(genuine, dimension, bits),
        fnmr=float(1.0 - np.count_nonzero(accepted & genuine_mask) / genuine.size),
        fmr=false_matches / impostors,
        false_matches=false_matches,
        impostor_trials=impostors,
        genuine_trials=int(genuine.size),
        cosine_fnmr=_cosine_fnmr(cos, owner, target_fmr),
        min_cos=float(pipeline.sketch.min_cos),
        attack_tries=tries,
        attack_successes=successes,
    )


def code_fnmr(
    pipeline: Any, people: LabelledVectors, *, enrol_samples: int, probe_captures: int = 1
) -> tuple[float, float]:
    """``(code FNMR, floor FNMR)``: the share of genuine attempts of ``people`` the pipeline's *code
    alone* fails to decode, and :func:`capacity_floor` on the same attempts.

    The decoder's own loss, without the angle check (``min_cos`` 0): what a better code or decoder
    can win back against the floor (the pipeline's FNMR adds the threshold's rejections). Needs no
    calibration, so decoders compare on the same attempts. Every person enrolled for real, every
    genuine attempt decoded by the exact decider.
    """
    sketch = pipeline.sketch
    templates, probes, owner = _code_attempts(pipeline, people, enrol_samples, probe_captures)
    genuine = np.einsum("ij,ij->i", templates[owner], probes)
    unchecked = PolarAngularSketch(sketch.dimension, sketch.bits, sketch.list_size, crc=sketch.crc)
    enrolled = _enrol(unchecked, templates)
    quantised, refused = probe_matrix(probes, sketch.dimension)
    decoded = 0
    for j in np.unique(owner).tolist():
        rows = np.flatnonzero(owner == j)
        hits = polar_accepts(unchecked, unchecked.matrix(enrolled.helpers[j]), enrolled.secrets[j], quantised[rows])
        decoded += int(np.count_nonzero(hits & ~refused[rows]))
    return 1.0 - decoded / owner.size, capacity_floor(genuine, sketch.dimension, sketch.bits)


def _code_attempts(
    pipeline: Any, people: LabelledVectors, enrol_samples: int, probe_captures: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Templates, genuine attempts (unit directions) and their owners, as :func:`code_fnmr` makes them."""
    trials, templates, probes, _ = _cosines(pipeline.transform, pipeline.dims, people, enrol_samples)
    probes, owner = grouped_probes(probes, trials.owner, probe_captures)
    return templates, probes, owner


def code_limits(
    pipeline: Any, people: LabelledVectors, *, enrol_samples: int, probe_captures: int = 1
) -> tuple[float, float]:
    """``(floor FNMR, random-code FNMR)`` on the genuine attempts :func:`code_fnmr` decodes: what no
    code of the pipeline's size beats, and what a random code of that size decoded to the nearest
    word achieves (:func:`random_code_fnmr`) — the two ends between which the best code lies."""
    templates, probes, owner = _code_attempts(pipeline, people, enrol_samples, probe_captures)
    genuine = np.einsum("ij,ij->i", templates[owner], probes)
    n, bits = pipeline.sketch.dimension, pipeline.sketch.bits
    return capacity_floor(genuine, n, bits), random_code_fnmr(genuine, n, bits)


def _enrol(sketch: Any, templates: np.ndarray) -> Enrolled:
    """Every template enrolled for real (the sketch's own encoder and randomness)."""
    secrets = [sketch.check_secret(t) for t in templates]
    return Enrolled(
        tuple(sketch.encode(s) for s in secrets), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets)
    )


def population_attack(
    sketch: Any,
    enrolled: Enrolled,
    probes: np.ndarray,
    impostor: np.ndarray,
    rng: np.random.Generator,
    *,
    pairs: int = ATTACK_PAIRS,
) -> tuple[int, int]:
    """``(tries, successes)``: a seeded sample of at most ``pairs`` of the ``impostor`` (template, probe)
    pairs decoded offline.

    The thief decodes with the helper alone — the polar list decoder, no angle check — and one
    argon2id evaluation tests the codeword: a success is a decoded codeword equal to the secret.
    """
    e, p = np.nonzero(impostor)
    pick = np.sort(rng.choice(e.size, size=min(e.size, pairs), replace=False))
    e, p = e[pick], p[pick]
    unchecked = PolarAngularSketch(sketch.dimension, sketch.bits, sketch.list_size, crc=sketch.crc)
    quantised, refused = probe_matrix(probes, sketch.dimension)
    successes = 0
    for j in np.unique(e).tolist():
        rows = p[e == j]
        hits = polar_accepts(unchecked, sketch.matrix(enrolled.helpers[j]), enrolled.secrets[j], quantised[rows])
        successes += int(np.count_nonzero(hits & ~refused[rows]))
    return int(e.size), successes


def accepted_pairs(sketch: Any, enrolled: Enrolled, probes: np.ndarray, cos: np.ndarray, seed: int) -> np.ndarray:
    """Accepted (template, probe) pairs of one polar sketch (its ``min_cos``): the exact decider on every
    pair within :data:`PREFILTER` of the threshold, :data:`CROSSCHECK_PAIRS` of them re-decided by
    real ``decode`` (a disagreement raises :class:`CrossCheckError`)."""
    e, p = np.nonzero(cos >= sketch.decision_cos - PREFILTER)
    accepted = np.zeros(cos.shape, dtype=bool)
    rows = cast("Sequence[Any]", probes)  # the deciders take any indexable rows; an array is one
    decided, _ = decide_exact(sketch, enrolled, rows, e.astype(np.int64), p.astype(np.int64))
    accepted[e[decided], p[decided]] = True
    rng = np.random.default_rng(seed)
    # Real decodes: half among the decoded pairs (where a wrong rule would show), half anywhere.
    near = rng.choice(e.size, size=min(e.size, CROSSCHECK_PAIRS // 2), replace=False)
    pairs = [(int(e[k]), int(p[k])) for k in near.tolist()]
    pairs += [(int(rng.integers(cos.shape[0])), int(rng.integers(cos.shape[1]))) for _ in range(CROSSCHECK_PAIRS // 2)]
    for j, q in pairs:
        try:
            found = sketch.decode(enrolled.helpers[j], probes[q])
            real = hmac.compare_digest(sketch.secret_bytes(found), enrolled.canonical[j])
        except DecodeError:
            real = False
        if real != bool(accepted[j, q]):
            raise CrossCheckError(
                f"{sketch.bits}-bit code: the exact decider says {bool(accepted[j, q])} and real decode says {real} "
                f"for enrolled person {j}, probe {q}: the measured rates are not the scheme's"
            )
    return accepted


def pair_scores(
    sketch: Any, enrolled: Enrolled, probes: np.ndarray, e: np.ndarray, p: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(decoded, score)`` of the (enrolled ``e``, probe ``p``) pairs under a polar sketch's helpers.

    ``decoded``: the list decoder (no angle check) returns the enrolled secret for the quantised
    probe. ``score``: the cosine the sketch's angle check compares with ``min_cos`` —
    ``Σ_supp sign·y / (√n · 2^14 · ‖p̂‖)`` for the decoded codeword (:func:`polar_accepts`' rule),
    so with ``min_cos = τ`` the sketch accepts exactly the decoded pairs scoring ``≥ τ`` (ties at
    ``τ`` to rounding aside: choose ``τ`` between scores, as :func:`threshold_at_fmr` does).
    """
    decoded = np.zeros(e.size, dtype=bool)
    score = np.zeros(e.size)
    quantised, refused = probe_matrix(probes, sketch.dimension)
    for j in np.unique(e).tolist():
        at = np.flatnonzero(e == j)
        q = quantised[p[at]]
        y = q @ sketch.matrix(enrolled.helpers[j]).T
        coded = np.concatenate(
            [decode_batch(y[s : s + 512], sketch.code, sketch.list_size) for s in range(0, len(y), 512)]
        )
        same = np.all(signs(coded) == np.asarray(enrolled.secrets[j], dtype=np.int8)[None, :], axis=1)
        norm = np.sqrt(sketch.dimension * float(1 << 28) * np.einsum("ij,ij->i", q, q))
        decoded[at] = same & ~refused[p[at]]
        score[at] = correlation(coded, y) / np.where(norm > 0, norm, 1.0)
    return decoded, score


def rethresholded(
    sketch: PolarAngularSketch, enrolled: Enrolled, min_cos: float
) -> tuple[PolarAngularSketch, Enrolled]:
    """``sketch`` with ``min_cos`` and the same enrolments under it: each helper's payload (its rotation,
    hence its secret) re-wrapped with the new parameters — what ``encode_with`` of the new sketch
    gives for the same randomness — so thresholds compare on the same helpers."""
    at = PolarAngularSketch(sketch.dimension, sketch.bits, sketch.list_size, min_cos=min_cos, crc=sketch.crc)
    helpers = tuple(at._wrap(sketch.payload(h)) for h in enrolled.helpers)
    return at, Enrolled(helpers, enrolled.canonical, enrolled.secrets)


def threshold_at_fmr(impostor_scores: np.ndarray, trials: int, fmr: float, floor: float) -> float:
    """The lowest ``min_cos`` (at least ``floor``) at which at most ``⌊fmr · trials⌋`` of the
    ``impostor_scores`` (the scores of the impostor pairs the code decodes, :func:`pair_scores`;
    ``trials`` impostor attempts in all) reach it: :data:`SCORE_GAP` above the highest score it
    refuses, so no score lies on the threshold.

    >>> round(threshold_at_fmr(np.array([0.9, 0.5, 0.7]), 1000, 1e-3, 0.0), 6)
    0.7
    >>> threshold_at_fmr(np.array([0.9, 0.5, 0.7]), 1000, 0.0, 0.0) > 0.9
    True
    >>> threshold_at_fmr(np.array([0.9, 0.5]), 1000, 2e-3, 0.1)
    0.1
    """
    if trials <= 0 or not 0.0 <= fmr <= 1.0:
        raise ParameterError(f"need impostor trials and an FMR in [0, 1], got {trials}, {fmr}")
    allowed = math.floor(fmr * trials + 1e-9)
    ranked = np.sort(np.asarray(impostor_scores, dtype=np.float64))[::-1]
    ranked = ranked[ranked >= floor]
    if allowed >= ranked.size:
        return float(floor)
    # Just above the highest score that must be refused (no score lies on the threshold).
    return min(1.0, max(float(floor), float(ranked[allowed]) + SCORE_GAP))
