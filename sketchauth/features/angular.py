"""The angular pipeline: a transform fitted on background people, then the angular sketch (IronMask).

For float embeddings compared by cosine — what face and voice models output. The transform is
usually ``FeatureTransform.fit(background, projection="centre", normalise=True)``: each vector is
normalised, the background people's mean is subtracted, and the sketch compares the direction that
is left. Centring is not cosmetic. Raw embeddings of a deep model share a large common direction
(every template lies in one cone); the helper ``R`` maps the template onto the codeword
(``R t = c``), so ``R`` applied to the population's mean direction lands next to ``c`` and an
attacker holding the helper reads the codeword off with a handful of guesses, no sample of the
person needed (measured in ``benchmarks/bench_angular.py``, "prior-guided rank"). About the
population's centre the directions are spread over the sphere and the codebook's work is back.
Any other transform (``whiten``, ``lda``) works too: the sketch then compares angles in that space.

Choices made on the background only (:meth:`AngularPipeline.for_target_fmr`):

* ``alpha`` — the smallest codeword weight whose codebook ``log2 |C_α|`` reaches
  ``security_bits`` (default 64): the work to find the secret from one helper without a matching
  sample, by counting (Kim et al., CVPR 2021, §5). A population model can shorten it: see
  ``docs/schemes/angular.md`` for the figures that bind against each attacker.
* ``min_cos`` — the cosine threshold, chosen by identity-disjoint cross-validation over every
  background person with a one-sided Clopper–Pearson bound on the FMR
  (:func:`~sketchauth.features.calibration.calibrate`). The calibration's decision rule is the
  cosine between the probe and the enrolled direction; the sketch accepts a subset of those probes
  (it must also decode), so the FMR bound holds for the sketch too, up to the helper's fixed-point
  rounding (``≈ 10^−3`` in the cosine). Decoding failures add to the FNMR: they are measured with
  real encode → decode on background people (:attr:`AngularPipeline.decode_failures`).
"""

from __future__ import annotations

import hmac
import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any, cast

import argon2
import numpy as np

from sketchauth.enrolment import Enrolment, verify
from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.deciders import decide_exact
from sketchauth.evaluate.trials import Enrolled, ProjectedTrials, projected_trials
from sketchauth.features.base import Pipeline, _one_sample, _with_calibration
from sketchauth.features.calibration import Decider, calibrate
from sketchauth.features.defaults import DEFAULTS
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.angular import AngularRandomness, AngularSketch, Codeword, codebook_bits
from sketchauth.sketches.angular_polar import MIN_POLAR_DIMENSION, PolarAngularSketch
from sketchauth.sketches.base import EntropyReport

__all__ = [
    "CODES",
    "COSINE_GRID",
    "MAX_VERIFY_CAPTURES",
    "AngularPipeline",
    "angular_decider",
    "decode_failures",
    "matched_bits",
    "smallest_alpha",
]

#: The codes on the sphere: ``"polar"`` (:class:`~sketchauth.sketches.angular_polar.PolarAngularSketch`,
#: the default: it decodes at far wider angles for the same bits) and ``"sparse"`` (IronMask's
#: ``α``-sparse code, :class:`~sketchauth.sketches.angular.AngularSketch`).
CODES = ("polar", "sparse")

#: Candidate ``min_cos`` values of the calibration, strictest first (as ``−cos`` ascending).
COSINE_GRID = np.round(np.arange(1000, -1, -1) / 1000.0, 3)
#: How far below the cosine rule's threshold the decoding-aware calibration looks (the code's
#: refusals can let a looser cosine threshold keep the FMR bound).
DECODE_FLOOR = 0.3
#: :func:`matched_bits` sizes the polar code for probes this far below the cosine threshold: the
#: list decoder (list 8) decodes 90% of probes about 0.05–0.075 above the capacity cosine.
MATCH_MARGIN = 0.08


def matched_bits(dimension: int, min_cos: float, floor_bits: int) -> int:
    """Polar information bits for a cosine threshold: ``⌊(n/2)·log2(1/(1 − s²))⌋`` with
    ``s = min_cos − MATCH_MARGIN`` (the capacity of ``n`` coordinates at signal-to-noise ratio
    ``s²/(1 − s²)``), never below ``floor_bits`` nor above ``n − 1``.

    >>> matched_bits(512, 0.65, 64), matched_bits(256, 0.47, 64), matched_bits(512, 0.2, 64)
    (145, 64, 64)
    """
    s = max(0.0, min_cos - MATCH_MARGIN)
    capacity = math.floor(dimension / 2.0 * math.log2(1.0 / (1.0 - s * s))) if 0.0 < s < 1.0 else 0
    return max(floor_bits, min(dimension - 1, capacity))


#: Genuine pairs :func:`decode_failures` decodes for real (one helper per enrolled person).
DECODE_CHECK_PAIRS = 400


def smallest_alpha(dimension: int, security_bits: float) -> int:
    """The smallest ``α`` with ``log2 |C_α| ≥ security_bits`` in ``dimension`` dimensions.

    >>> smallest_alpha(512, 64), smallest_alpha(128, 64), smallest_alpha(192, 64)
    (8, 12, 11)
    """
    _check_security_bits(security_bits)
    if dimension < 2:
        raise ParameterError(f"the angular sketch needs at least 2 dimensions, got {dimension}")
    for alpha in range(1, dimension):
        if codebook_bits(dimension, alpha) >= security_bits:
            return alpha
    most = max(codebook_bits(dimension, a) for a in range(1, dimension))
    raise ParameterError(
        f"{dimension} dimensions hold at most {most:.1f} bits of codebook; ask for fewer security_bits"
    )


def _check_security_bits(security_bits: Any) -> None:
    """A positive finite real number (numpy scalars too; ``True`` is not a number of bits)."""
    real = isinstance(security_bits, numbers.Real) and not isinstance(security_bits, (bool, np.bool_))
    if not (real and math.isfinite(security_bits) and security_bits > 0):
        raise ParameterError(f"security_bits must be a positive number, got {security_bits!r}")


def _polar_bits(dimension: int, security_bits: float) -> int:
    """``⌈security_bits⌉`` information bits, if the dimension holds them (``bits < dimension``).

    >>> _polar_bits(128, 64), _polar_bits(34, 23.2)
    (64, 24)
    """
    _check_security_bits(security_bits)
    if dimension < MIN_POLAR_DIMENSION:
        raise ParameterError(
            f"the polar code needs at least {MIN_POLAR_DIMENSION} dimensions, got {dimension}; "
            "keep more dimensions or use the sparse code"
        )
    bits = math.ceil(security_bits)
    if bits >= dimension:
        raise ParameterError(
            f"a polar code of {bits} bits needs more than {dimension} dimensions: "
            f"ask for fewer security_bits (at most {dimension - 1}) or keep more dimensions"
        )
    return bits


def _unit(x: np.ndarray) -> np.ndarray:
    """Rows divided by their norm, taken after scaling by the largest coordinate (a norm of huge
    or tiny coordinates would overflow to ``inf`` or underflow to 0; the direction is well defined)."""
    peak = np.max(np.abs(x), axis=-1, keepdims=True)
    if np.any(peak == 0):
        raise SampleError("a projected embedding is the zero vector: it has no direction")
    scaled = x / peak
    return scaled / np.linalg.norm(scaled, axis=-1, keepdims=True)


#: A mean of unit vectors shorter than this is rounding noise (each coordinate carries ~1e-16), not a direction.
MIN_MEAN_NORM = 1e-9


#: Most captures one verification attempt may average (:meth:`AngularPipeline.captures_transform`).
MAX_VERIFY_CAPTURES = 3


def _numeric_rows(samples: Any) -> bool:
    """A real-number array (no strings, objects or booleans), before any conversion."""
    try:
        arr = np.asarray(samples)
    except (TypeError, ValueError):
        return False
    return arr.dtype.kind in "iuf"


def _mean_direction(units: np.ndarray) -> np.ndarray:
    """The normalised mean of unit rows along the second-last axis; refused when they cancel out."""
    mean = units.mean(axis=-2)
    if np.any(np.linalg.norm(mean, axis=-1) < MIN_MEAN_NORM):
        raise SampleError(
            "the captures' directions cancel out (their mean is the zero vector): enrol from other captures"
        )
    return _unit(mean)


def _directions(
    transform: FeatureTransform, dims: np.ndarray, trials: ProjectedTrials
) -> tuple[np.ndarray, np.ndarray]:
    """Enrolment templates (mean of the normalised projected captures, normalised) and unit probes."""
    j, m, d = trials.enrolment.shape
    captures = _unit(transform.project(trials.enrolment.reshape(j * m, d))[:, dims]).reshape(j, m, dims.size)
    templates = _mean_direction(captures)
    return templates, _unit(transform.project(trials.probes)[:, dims])


class AngularPipeline(Pipeline):
    """A fitted transform → :class:`~sketchauth.sketches.angular.AngularSketch` (module docstring).

    Every kept dimension of the transform is used (the sketch is rotation-invariant, so dropping
    axes would only throw information away). The enrolled template is the mean of the normalised
    projected captures; the probe is the projected capture.
    """

    kind = "angular"

    def __init__(
        self,
        transform: FeatureTransform,
        dims: Any,
        *,
        min_cos: float,
        bits: int | None = None,
        list_size: int = 8,
        alpha: int | None = None,
    ) -> None:
        super().__init__(transform, dims)
        if self.dims.size < 2:
            raise ParameterError("the angular pipeline needs at least 2 dimensions")
        if (bits is None) == (alpha is None):
            raise ParameterError("give bits (the polar code) or alpha (IronMask's sparse code), not both")
        n = int(self.dims.size)
        self._sketch: AngularSketch = (
            PolarAngularSketch(dimension=n, bits=bits, list_size=list_size, min_cos=min_cos)
            if bits is not None
            else AngularSketch(dimension=n, alpha=alpha, min_cos=min_cos)  # type: ignore[arg-type]
        )
        #: Share of background genuine trials within ``min_cos`` that real decoding refused, and
        #: how many were decoded (``for_target_fmr`` measures it; ``None`` otherwise).
        self.decode_failures: dict[str, Any] | None = None

    @classmethod
    def for_target_fmr(
        cls,
        transform: FeatureTransform,
        heldout: LabelledVectors,
        *,
        target_fmr: float = DEFAULTS.target_fmr,
        enrol_samples: int = DEFAULTS.enrol_samples,
        security_bits: float = DEFAULTS.angular_security_bits,
        code: str = DEFAULTS.angular_code,
        list_size: int = DEFAULTS.angular_list_size,
        folds: int = DEFAULTS.folds,
        confidence: float = DEFAULTS.confidence,
        refit: bool = False,
        match_threshold: bool = DEFAULTS.angular_match_threshold,
    ) -> AngularPipeline:
        """The code for ``security_bits``, ``min_cos`` for ``target_fmr`` (module docstring).

        ``match_threshold`` (polar code): where the cosine threshold lies above what 64 bits need,
        the code takes more bits (:func:`matched_bits`) — its cells shrink to the threshold, so an
        attacker who decodes a stolen helper offline (skipping the ``min_cos`` check) gains no wider
        region than the verifier accepts, and the codebook work grows.

        ``code``: ``"polar"`` (``bits = ⌈security_bits⌉``, decoded with ``list_size`` paths) or
        ``"sparse"`` (IronMask, the smallest ``α`` reaching ``security_bits``).
        ``folds``, ``confidence``, ``refit``: see :class:`~sketchauth.features.base.Pipeline`.
        """
        if code not in CODES:
            raise ParameterError(f"code must be one of {', '.join(CODES)}, got {code!r}")
        dims = np.arange(transform.dimensions)
        if dims.size < 2:
            raise ParameterError("the angular pipeline needs at least 2 dimensions")
        if code == "polar":
            shape: dict[str, Any] = {"bits": _polar_bits(int(dims.size), security_bits), "list_size": list_size}
        else:
            shape = {"alpha": smallest_alpha(int(dims.size), security_bits)}
        options: dict[str, Any] = {
            "target_fmr": target_fmr,
            "enrol_samples": enrol_samples,
            "folds": folds,
            "confidence": confidence,
        }
        # First the cosine rule alone (cheap); the code only refuses more, so the decoding-aware
        # threshold lies at or below it: decode the pairs down to DECODE_FLOOR below.
        cosine = calibrate(angular_decider(transform, dims, refit=refit), heldout, **options)
        if code == "polar" and match_threshold:
            shape["bits"] = matched_bits(int(dims.size), float(-cosine.point), shape["bits"])
        unchecked = cls(transform, dims, min_cos=0.0, **shape).sketch
        floor = max(0.0, float(-cosine.point) - DECODE_FLOOR)
        decider = angular_decider(transform, dims, refit=refit, sketch=unchecked, floor=floor)
        choice = calibrate(decider, heldout, **options)
        pipeline = _with_calibration(cls(transform, dims, min_cos=float(-choice.point), **shape), choice)
        pipeline.decode_failures = decode_failures(pipeline, heldout, enrol_samples=enrol_samples)
        return pipeline

    @property
    def sketch(self) -> AngularSketch:
        return self._sketch

    def _template(self, samples: Any) -> np.ndarray:
        captures = self._enrolment_matrix(samples)
        return _mean_direction(_unit(captures))

    def secret_from_samples(self, samples: Any) -> Any:
        return self._sketch.check_secret(self._template(samples))

    def sample_transform(self, sample: Any) -> np.ndarray:
        y = self.transform.project(_one_sample(sample, self.transform.features))[self.dims]
        if not np.any(y):
            raise SampleError("the sample projects onto the background's centre: it has no direction")
        return y

    def captures_transform(self, samples: Any) -> np.ndarray:
        """One probe from one attempt's 1 to :data:`MAX_VERIFY_CAPTURES` raw captures (frames or utterances).

        **Decision rule: average, then decode once.** Each capture is projected and normalised, and
        the probe is the normalised mean of those directions — the template's own construction at
        enrolment (:func:`_mean_direction`). Within-attempt noise averages out, so genuine probes
        come closer to the template; an impostor's captures average to the impostor's own
        direction, no closer to the template. One decode and one argon2id evaluation whatever the
        number of captures, so an attempt is still *one* try: the rule "accept if any capture
        decodes" would give an impostor ``k`` tries per attempt (FMR up to ``k``-fold at the same
        threshold) and cost ``k`` hash evaluations. Measured against one capture at the same FMR
        in ``benchmarks/bench_angular_captures.py``.
        """
        x = np.asarray(samples, dtype=np.float64) if _numeric_rows(samples) else None
        if x is None or x.ndim != 2 or not 1 <= x.shape[0] <= MAX_VERIFY_CAPTURES:
            raise SampleError(
                f"a verification takes 1 to {MAX_VERIFY_CAPTURES} captures, each of {self.transform.features} features"
            )
        return _mean_direction(_unit(np.stack([self.sample_transform(row) for row in x])))

    def verify_captures(
        self, enrolment: Enrolment, samples: Any, *, password_hasher: argon2.PasswordHasher | None = None
    ) -> bool:
        """:meth:`verify` with 1 to :data:`MAX_VERIFY_CAPTURES` captures of one attempt (:meth:`captures_transform`)."""
        return verify(self.sketch, enrolment, self.captures_transform(samples), password_hasher=password_hasher)

    @property
    def secret_bits(self) -> float:
        return float(self._sketch.report().extra["codebook_bits"])

    def report(self) -> EntropyReport:
        """The sketch's report plus the angular pipeline's context: the code and its codebook bits,
        the transform the directions are taken in, and the decode failures if measured.

        Not the quantising pipelines' notes: nothing here is whitened or cut into levels; the secret
        is the codeword, whose codebook size is the figure (the sketch's notes say what lowers it).
        """
        base = self._sketch.report()
        sketch = self._sketch
        if isinstance(sketch, PolarAngularSketch):
            code = f"a polar code of {sketch.bits} information bits (list decoder, {sketch.list_size} paths)"
        else:
            code = f"IronMask's sparse code of weight alpha = {sketch.alpha}"
        transform = self.transform
        if transform.projection_kind == "centre":
            space = "centre transform (the background mean subtracted" + (
                ", every vector normalised first)" if transform.normalises else ")"
            )
        else:
            space = f"'{transform.projection_kind}' transform" + (
                " (vectors normalised first)" if transform.normalises else ""
            )
        failures = self.decode_failures
        if failures is None:
            decoded = (
                "decode failures not measured here (AngularPipeline.for_target_fmr measures them on background people)"
            )
        else:
            decoded = (
                f"decode failures: real decoding refused {failures['refused']} of {failures['checked']} background "
                f"genuine trials within min_cos ({failures['share']:.1%}), on top of the cosine rule's FNMR"
            )
        notes = (
            *base.notes,
            f"pipeline angular: the direction of {self.dims.size} dimensions of a {space} fitted on background data, "
            f"accepted iff the code decodes and cos(probe, template) >= {sketch.min_cos:g}",
            f"secret: the codeword of {code}, {self.secret_bits:.1f} bits of codebook",
            decoded,
        )
        extra: dict[str, Any] = {
            **dict(base.extra),
            "pipeline": self.kind,
            "secret_bits": self.secret_bits,
            "transform": transform.fingerprint,
        }
        if failures is not None:
            extra["decode_failures"] = dict(failures)
        return EntropyReport.from_bits(base.scheme, base.sketch_bits, base.randomness_bits, notes=notes, extra=extra)

    def _settings(self) -> dict[str, Any]:
        return {}

    @classmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> AngularPipeline:
        params = raw["params"]
        min_cos = params.get("min_cos", 0.0)
        scheme = raw.get("scheme")
        if scheme == PolarAngularSketch.descriptor.name:
            pipeline = cls(transform, dims, min_cos=min_cos, bits=params["bits"], list_size=params["list_size"])
        elif scheme == AngularSketch.descriptor.name:
            pipeline = cls(transform, dims, min_cos=min_cos, alpha=params["alpha"])
        else:
            raise ParameterError("pipeline scheme does not match its kind")
        if pipeline.sketch.params() != dict(params):
            raise ParameterError("pipeline parameters do not match its dims")
        return pipeline


def angular_decider(
    transform: FeatureTransform,
    dims: np.ndarray,
    *,
    refit: bool,
    sketch: AngularSketch | None = None,
    floor: float = 0.0,
    seed: int = 0,
) -> Decider:
    """The cosine threshold as a :class:`~sketchauth.features.calibration.Decider`: accept iff
    ``cos(probe, template) ≥ min_cos`` for every ``min_cos ≥ floor`` of :data:`COSINE_GRID` (as
    ``−cos ≤ −min_cos``) — and, with ``sketch``, iff the code also decodes the probe.

    With ``sketch`` every enrolled template gets a real helper of that sketch (``min_cos`` 0),
    made by its own encoder from *seeded* randomness (a simulation of enrolment on background
    people: the calibration is reproducible), and every pair whose cosine reaches ``floor`` is
    decoded by the scheme's exact decider; a pair the code refuses is accepted at no threshold.
    With ``refit`` each fold's model is the transform refitted without the fold's people.
    """
    helpers: dict[bytes, tuple[bytes, Any]] = {}
    rng = np.random.default_rng(seed)

    def fit(train: LabelledVectors) -> FeatureTransform:
        return transform.refit(train)

    def features(model: FeatureTransform | None, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
        return _directions(transform if model is None else model, dims, trials)

    def score(model: Any, templates: np.ndarray, probes: np.ndarray) -> np.ndarray:
        cos = np.einsum("ij,ij->i", templates, probes)
        out = -cos
        if sketch is None:
            return out
        candidates = np.flatnonzero(cos >= floor)
        if candidates.size == 0:
            return out
        unique, inverse = np.unique(templates[candidates], axis=0, return_inverse=True)
        for u, template in enumerate(unique):
            rows = candidates[inverse.reshape(-1) == u]
            key = template.tobytes()
            if key not in helpers:
                secret = _seeded_secret(sketch, template, rng)
                helpers[key] = (sketch.encode_with(secret, _seeded_randomness(secret, sketch.dimension, rng)), secret)
            helper, secret = helpers[key]
            out[rows[~_decodes(sketch, helper, secret, probes[rows])]] = np.inf
        return out

    grid = COSINE_GRID[floor - 1e-12 <= COSINE_GRID]
    return Decider(
        grid=-grid,
        score=score,
        fit=fit if refit else None,
        features=features,
        ties="strictest" if sketch is None else "loosest",
    )


def _seeded_secret(sketch: AngularSketch, template: np.ndarray, rng: np.random.Generator) -> Codeword:
    """A codeword drawn from ``rng`` and bound to ``template`` (simulated enrolment)."""
    secret = sketch.random_codeword(rng).view(Codeword)
    secret.template = template / np.linalg.norm(template)
    return secret


def _seeded_randomness(secret: Codeword, n: int, rng: np.random.Generator) -> AngularRandomness:
    """The encoder's randomness from ``rng`` (:meth:`AngularSketch.simulated_randomness`)."""
    return AngularSketch(n, 1).simulated_randomness(secret, rng)


def _decodes(sketch: AngularSketch, helper: bytes, secret: Any, probes: np.ndarray) -> np.ndarray:
    """Which probes the scheme's exact decider decodes to ``secret`` under ``helper`` (``min_cos`` 0)."""
    enrolled = Enrolled((helper,), (sketch.secret_bytes(secret),), (secret,))
    pairs = np.arange(probes.shape[0])
    rows = cast("Sequence[Any]", probes)  # the deciders take any indexable rows; an array is one
    accepted, _ = decide_exact(sketch, enrolled, rows, np.zeros_like(pairs), pairs)
    return accepted


def decode_failures(pipeline: AngularPipeline, people: LabelledVectors, *, enrol_samples: int) -> dict[str, Any]:
    """Real encode → decode of genuine trials of ``people`` whose cosine passes ``min_cos``.

    One helper per person (the first :data:`DECODE_CHECK_PAIRS` such trials): the share the code
    refuses although the cosine rule accepts them — what the sketch adds to the cosine matcher's
    FNMR at this threshold.
    """
    trials = projected_trials(lambda x: x, people, enrol_samples)
    templates, probes = _directions(pipeline.transform, pipeline.dims, trials)
    sketch = pipeline.sketch
    cos = np.einsum("ij,ij->i", templates[trials.owner], probes)
    candidates = np.flatnonzero(cos >= sketch.min_cos)[:DECODE_CHECK_PAIRS]
    refused = 0
    helpers: dict[int, tuple[bytes, bytes]] = {}
    for k in candidates.tolist():
        owner = int(trials.owner[k])
        if owner not in helpers:
            secret = sketch.check_secret(templates[owner])
            helpers[owner] = (sketch.encode(secret), sketch.secret_bytes(secret))
        helper, expected = helpers[owner]
        try:
            ok = hmac.compare_digest(sketch.secret_bytes(sketch.decode(helper, probes[k])), expected)
        except DecodeError:
            ok = False
        refused += int(not ok)
    checked = int(candidates.size)
    return {"checked": checked, "refused": refused, "share": refused / checked if checked else 0.0}
