"""Pipelines: a fitted :class:`FeatureTransform` chained with a secure sketch.

A pipeline is what the CLI and the service enrol and verify with. It is *configuration*: the
frozen transform (population statistics only) plus a scheme and its parameters, stored once,
never per user. Per user only the sketch's helper data and the argon2id hash are stored
(:class:`sketchauth.enrolment.Enrolment`), exactly as for a bare sketch.

Design (decided here): a :class:`Pipeline` is *not* a :class:`SecureSketch` subclass — helper
records stay plain records of the underlying scheme (``load_sketch`` still works on them) — but
it is used like one: ``enrol(samples)`` turns raw enrolment vectors into the sketch's secret
(:meth:`Pipeline.secret_from_samples`) and enrols it; ``verify(record, sample)`` turns one raw
sample into the sketch's sample (:meth:`Pipeline.sample_transform`) and verifies it. Configuration
JSON (:meth:`Pipeline.to_json`, :func:`load_pipeline`) embeds the transform and its SHA-256
fingerprint, so a service registers a pipeline by name from one file.

Pipelines (``y`` are the transform's whitened features, ``ℓ`` their levels in ``[0, L)``):

* :class:`IntervalPipeline` — secret ``b = ℓ(mean of the enrolment samples' y)`` on a subset of
  dimensions; :class:`~sketchauth.sketches.interval.IntervalSketch` with ``n = L`` and a tolerance
  ``v_j`` per dimension: a sample is accepted iff ``|ℓ_j − b_j| < v_j`` for every kept ``j``.
  Tolerances come from a :class:`TolerancePath` measured on held-out background data.
  Loss ``≤ Σ log2(2v_j − 1)`` of the ``Σ log2 L`` bits the levels carry under the background.
* :class:`AsymmetricIntervalPipeline` — several enrolment samples: per dimension the template
  and an *identity-dependent* tolerance from the spread of the person's levels
  (:func:`sketchauth.templates.enrol_interval`, ``v_j = clip(⌈scale·s_j⌉ + margin, 1, q)``),
  sketched by :class:`~sketchauth.sketches.asymmetric.AsymmetricIntervalSketch` (``s2``: ``v`` hidden).
  Loss ``≤ k·(1 + 2 log2 q)``.
* :class:`CodeOffsetPipeline` — secret: Gray-coded ``bits``-bit levels of the top dimensions,
  packed into ``n`` bytes (every byte fully used, so the bytes are uniform under the background);
  :class:`~sketchauth.sketches.code_offset.CodeOffsetSketch` correcting ``t`` byte errors, with
  ``t`` chosen by :func:`choose_error_tolerance` from a target FNMR on held-out background data.
  Loss ``≤ 16t`` of ``8n`` bits.
* :class:`ThermometerPipeline` — Fisher-weighted uniform levels written as thermometer codes,
  the secret being the set of their one-positions; :class:`~sketchauth.sketches.pinsketch.PinSketch`
  with budget ``t`` then accepts exactly an **L1 ball** in weighted level units, the closest of
  these acceptance regions to the unprotected matcher's ellipsoid. Loss ``≤ t·m``.

The tolerance path (interval pipelines). With ``p_j(v) = P(|Δℓ_j| < v)`` for genuine and
``q_j(v)`` for impostor comparisons (measured per dimension on held-out identities) a box
accepts a genuine sample with probability ≈ ``Π p_j(v_j)`` and an impostor with ≈
``Π q_j(v_j)`` (dimensions of the whitened space are independent for Gaussian data). Starting
from ``v = 1`` everywhere, each step widens the one dimension with the largest gain
``Δ log p_j / Δ log q_j`` (genuine acceptance bought per unit of impostor acceptance): a greedy
walk along the Lagrangian frontier of ``max Σ log p_j`` s.t. ``Σ log q_j ≤ log FMR``. The boxes
are nested, so each comparison has a *score*: the first step whose box accepts it — that gives
DET curves and the exact joint FMR of every step on held-out data, from which the step for a
target FMR is chosen. Dimensions whose tolerance covers all ``L`` levels check nothing and are
dropped from the sketch (they would only leak).

Example::

    >>> from sketchauth.evaluate.embeddings import EmbeddingPopulation
    >>> from sketchauth.enrolment import hasher
    >>> population = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.5, seed=2)
    >>> transform = FeatureTransform.fit(population.draw(150, 4, seed=1), levels=16)
    >>> pipeline = IntervalPipeline.for_target_fmr(transform, population.draw(80, 4, seed=2), target_fmr=0.01)
    >>> person = population.draw(1, 3, seed=0).samples
    >>> record = pipeline.enrol(person[:1], password_hasher=hasher("test"))
    >>> pipeline.verify(record, person[1], password_hasher=hasher("test"))
    True
    >>> pipeline.verify(record, population.draw(1, 1, seed=100).samples[0], password_hasher=hasher("test"))
    False
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar

import argon2
import numpy as np

from sketchauth.enrolment import Enrolment, enrol, verify
from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.trials import ProjectedTrials, pair_scores, projected_trials
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch, Spread
from sketchauth.sketches.base import EntropyReport, SecureSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.params import check_int, check_positive_float
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.templates import enrol_interval

__all__ = [
    "PIPELINE_FORMAT",
    "AsymmetricIntervalPipeline",
    "CodeOffsetPipeline",
    "IntervalPipeline",
    "Pipeline",
    "ThermometerPipeline",
    "ToleranceChoice",
    "TolerancePath",
    "choose_error_tolerance",
    "fisher_weights",
    "load_pipeline",
    "load_pipelines",
    "tolerance_path",
]

PIPELINE_FORMAT = "sketchauth-pipeline/v1"


def _dims(dims: Any, transform: FeatureTransform) -> np.ndarray:
    try:
        arr = np.asarray(dims)
    except (TypeError, ValueError):
        raise ParameterError("dims must be a list of dimension indices") from None
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise ParameterError("dims must be a non-empty list of integer dimension indices")
    arr = arr.astype(np.int64)
    if np.any(arr < 0) or np.any(arr >= transform.dimensions) or np.unique(arr).size != arr.size:
        raise ParameterError(f"dims must be distinct indices in [0, {transform.dimensions})")
    return arr


class Pipeline(ABC):
    """A transform chained with a sketch on a subset ``dims`` of the transform's dimensions."""

    kind: ClassVar[str]

    def __init__(self, transform: FeatureTransform, dims: Any) -> None:
        if not isinstance(transform, FeatureTransform):
            raise ParameterError("transform must be a FeatureTransform")
        self.transform = transform
        self.dims = _dims(dims, transform)

    # -- the sketch and the two conversions ---------------------------------------------------
    @property
    @abstractmethod
    def sketch(self) -> SecureSketch:
        """The sketch every user of this pipeline is enrolled with."""

    def _enrolment_matrix(self, samples: Any) -> np.ndarray:
        x = np.asarray(samples, dtype=np.float64) if _numeric(samples) else None
        if x is None:
            raise SampleError("enrolment samples must be numbers")
        if x.ndim == 1:
            x = x[None, :]
        if x.ndim != 2 or x.shape[0] < 1:
            raise SampleError(f"enrolment samples must be an m × {self.transform.features} array")
        return self.transform.project(x)[:, self.dims]

    def _levels(self, y: np.ndarray) -> np.ndarray:
        """Equal-probability levels of projected values on ``dims`` (``k`` or ``N × k``, ``k = dims.size``).

        The transform quantises full-width vectors; each dimension is quantised on its own, so the
        other dimensions are padded with zeros and dropped again.
        """
        full = np.zeros((*y.shape[:-1], self.transform.dimensions))
        full[..., self.dims] = y
        return self.transform.quantise(full)[..., self.dims]

    @abstractmethod
    def secret_from_samples(self, samples: Any) -> Any:
        """The sketch's secret from raw enrolment vectors (one ``d``-vector or ``m × d``)."""

    @abstractmethod
    def sample_transform(self, sample: Any) -> Any:
        """The sketch's sample from one raw ``d``-vector."""

    # -- enrol / verify -----------------------------------------------------------------------
    def enrol(self, samples: Any, *, password_hasher: argon2.PasswordHasher | None = None) -> Enrolment:
        """Enrol raw samples: helper data and argon2id hash only (the samples are not kept)."""
        return enrol(self.sketch, self.secret_from_samples(samples), password_hasher=password_hasher)

    def verify(
        self, enrolment: Enrolment, sample: Any, *, password_hasher: argon2.PasswordHasher | None = None
    ) -> bool:
        """True iff the raw ``sample`` recovers the enrolled secret (one outcome for every failure)."""
        return verify(self.sketch, enrolment, self.sample_transform(sample), password_hasher=password_hasher)

    def accepts(self, samples: Any, sample: Any) -> bool:
        """Decode without hashing: does ``sample`` recover the secret enrolled from ``samples``?

        Evaluation helper (encode → decode → compare, the hash check without argon2's cost).
        """
        sketch = self.sketch
        secret = sketch.check_secret(self.secret_from_samples(samples))
        helper = sketch.encode(secret)
        try:
            recovered = sketch.decode(helper, self.sample_transform(sample))
        except DecodeError:
            return False
        return hmac.compare_digest(sketch.secret_bytes(recovered), sketch.secret_bytes(secret))

    # -- accounting ---------------------------------------------------------------------------
    @property
    @abstractmethod
    def secret_bits(self) -> float:
        """Bits the secret carries if its levels are uniform (the background's equal-probability design)."""

    def report(self) -> EntropyReport:
        """The sketch's report plus the pipeline's context (secret bits, transform fingerprint)."""
        base = self.sketch.report()
        remaining = max(0.0, self.secret_bits - base.loss_bound_bits)
        return EntropyReport.from_bits(
            base.scheme,
            base.sketch_bits,
            base.randomness_bits,
            notes=(
                *base.notes,
                f"pipeline {self.kind}: {self.dims.size} whitened dimensions of a transform fitted on background data",
                f"secret carries at most {self.secret_bits:.1f} bits under the background (uniform levels); "
                f"at least {remaining:.1f} remain after the loss bound if the levels are independent and uniform",
            ),
            extra={
                **dict(base.extra),
                "pipeline": self.kind,
                "secret_bits": self.secret_bits,
                "remaining_bits_if_uniform": remaining,
                "transform": self.transform.fingerprint,
            },
        )

    # -- configuration ------------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready configuration: transform, dims, scheme and parameters."""
        return {
            "format": PIPELINE_FORMAT,
            "kind": self.kind,
            "transform": self.transform.to_dict(),
            "transform_sha256": self.transform.fingerprint,
            "dims": self.dims.tolist(),
            "scheme": self.sketch.scheme_name,
            "params": self.sketch.params(),
            "settings": self._settings(),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the canonical configuration JSON (transform, dims, scheme, parameters, settings).

        Names this exact pipeline: a service stores it with every enrolment, so a pipeline file
        changed since (re-fitted transform, re-calibrated tolerance) is detected, not silently
        decoded with the wrong configuration. Stable across :func:`load_pipeline` round trips.
        """
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @classmethod
    @abstractmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> Pipeline: ...

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pipeline) and other.to_dict() == self.to_dict()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dims={self.dims.size}, sketch={self.sketch!r})"


def _numeric(value: Any) -> bool:
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        return False
    return arr.dtype.kind in "iuf"


# -- interval ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TolerancePath:
    """Nested boxes of per-dimension tolerances (``steps × k``), strictest first.

    ``fmr``/``fnmr`` are the joint error rates of every step measured on the held-out
    comparisons it was built from (``genuine_trials``/``impostor_trials`` of them).
    """

    tolerances: np.ndarray
    fmr: np.ndarray
    fnmr: np.ndarray
    genuine_trials: int
    impostor_trials: int

    def step_for_fmr(self, target_fmr: float) -> int:
        """The most permissive step whose measured FMR does not exceed ``target_fmr``."""
        ok = np.flatnonzero(self.fmr <= target_fmr)
        if ok.size == 0:
            raise ParameterError(f"no tolerance reaches FMR <= {target_fmr} on the held-out data")
        return int(ok[-1])

    def steps_needed(self, deltas: np.ndarray) -> np.ndarray:
        """For level differences ``|Δℓ|`` (``… × k``): the first step whose box accepts each."""
        k = self.tolerances.shape[1]
        levels = int(self.tolerances.max())
        need = np.empty((k, levels), dtype=np.int64)
        for j in range(k):
            # First step with tolerance > δ, for every δ in [0, L).
            need[j] = np.searchsorted(self.tolerances[:, j], np.arange(levels), side="right")
        return need[np.arange(k), np.minimum(deltas, levels - 1)].max(axis=-1)


def _level_trials(
    transform: FeatureTransform, data: LabelledVectors, enrol_samples: int
) -> tuple[ProjectedTrials, np.ndarray, np.ndarray]:
    trials = projected_trials(transform.project, data, enrol_samples)
    return trials, transform.quantise(trials.templates), transform.quantise(trials.probes)


def _abs_delta(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(np.int16) - b.astype(np.int16))


def _acceptance_tables(
    templates: np.ndarray, probes: np.ndarray, owner: np.ndarray, levels: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per dimension ``log P(|Δℓ| < v)`` for ``v = 1 … L``: genuine and impostor (``k × L``)."""
    k = templates.shape[1]
    genuine = np.zeros((k, levels))
    impostor = np.zeros((k, levels))
    offsets = np.arange(k) * levels
    gen = _abs_delta(templates[owner], probes)
    genuine += np.bincount((gen + offsets).ravel(), minlength=k * levels).reshape(k, levels)
    chunk = max(1, 2_000_000 // max(1, probes.size))
    for start in range(0, templates.shape[0], chunk):
        rows = np.arange(start, min(start + chunk, templates.shape[0]))
        block = _abs_delta(templates[rows][:, None], probes[None])[owner[None, :] != rows[:, None]]
        impostor += np.bincount((block + offsets).ravel(), minlength=k * levels).reshape(k, levels)
    # Half a pseudo-count keeps every logarithm finite without moving well-measured rates.
    p = (np.cumsum(genuine, axis=1) + 0.5) / (genuine.sum(axis=1, keepdims=True) + 1.0)
    q = (np.cumsum(impostor, axis=1) + 0.5) / (impostor.sum(axis=1, keepdims=True) + 1.0)
    return np.log(p), np.log(q)


def _greedy_path(log_p: np.ndarray, log_q: np.ndarray) -> np.ndarray:
    k, levels = log_p.shape
    v = np.ones(k, dtype=np.int64)
    path = [v.copy()]
    rows = np.arange(k)
    while np.any(v < levels):
        open_ = v < levels
        nxt = np.minimum(v, levels - 1)  # index of P(|Δ| < v + 1)
        gain_p = log_p[rows, nxt] - log_p[rows, v - 1]
        cost_q = np.maximum(log_q[rows, nxt] - log_q[rows, v - 1], 1e-12)
        gain = np.where(open_, gain_p / cost_q, -np.inf)
        if gain.max() > 0:
            v[int(np.argmax(gain))] += 1
        else:
            # No measurable genuine gain left anywhere: widen where impostors gain least.
            v[int(np.argmin(np.where(open_, cost_q, np.inf)))] += 1
        path.append(v.copy())
    return np.array(path, dtype=np.int64)


def tolerance_path(transform: FeatureTransform, heldout: LabelledVectors, *, enrol_samples: int = 1) -> TolerancePath:
    """Build the greedy :class:`TolerancePath` on held-out background identities (see the module docstring)."""
    trials, t_levels, p_levels = _level_trials(transform, heldout, enrol_samples)
    log_p, log_q = _acceptance_tables(t_levels, p_levels, trials.owner, transform.levels)
    path = _greedy_path(log_p, log_q)
    draft = TolerancePath(path, np.zeros(len(path)), np.zeros(len(path)), 0, 0)
    genuine, impostor = pair_scores(t_levels, p_levels, trials.owner, lambda a, b: draft.steps_needed(_abs_delta(a, b)))
    steps = np.arange(len(path))
    fmr = np.searchsorted(np.sort(impostor), steps, side="right") / impostor.size
    fnmr = 1.0 - np.searchsorted(np.sort(genuine), steps, side="right") / genuine.size
    return TolerancePath(path, fmr, fnmr, int(genuine.size), int(impostor.size))


class IntervalPipeline(Pipeline):
    """Quantised whitened features → :class:`IntervalSketch` with per-dimension tolerances."""

    kind = "interval"

    def __init__(self, transform: FeatureTransform, dims: Any, tolerances: Any) -> None:
        super().__init__(transform, dims)
        self._sketch = IntervalSketch(n=transform.levels, v=[int(v) for v in np.asarray(tolerances).ravel()])
        if self._sketch.features != self.dims.size:
            raise ParameterError(f"{self.dims.size} dims but {self._sketch.features} tolerances")

    @classmethod
    def from_path(cls, transform: FeatureTransform, path: TolerancePath, step: int) -> IntervalPipeline:
        """The pipeline of one step of a path (dimensions accepting every level are dropped)."""
        v = path.tolerances[step]
        dims = np.flatnonzero(v < transform.levels)
        if dims.size == 0:
            raise ParameterError("this step accepts every level of every dimension; it checks nothing")
        return cls(transform, dims, v[dims])

    @classmethod
    def for_target_fmr(
        cls, transform: FeatureTransform, heldout: LabelledVectors, *, target_fmr: float = 1e-2, enrol_samples: int = 1
    ) -> IntervalPipeline:
        """Tolerances for ``target_fmr`` measured on held-out background identities."""
        path = tolerance_path(transform, heldout, enrol_samples=enrol_samples)
        return cls.from_path(transform, path, path.step_for_fmr(target_fmr))

    @property
    def sketch(self) -> IntervalSketch:
        return self._sketch

    @property
    def tolerances(self) -> np.ndarray:
        return self._sketch.v.copy()

    def secret_from_samples(self, samples: Any) -> np.ndarray:
        y = self._enrolment_matrix(samples).mean(axis=0)
        return self._levels(y)

    def sample_transform(self, sample: Any) -> np.ndarray:
        return self._levels(self.transform.project(_one_sample(sample, self.transform.features))[self.dims])

    @property
    def secret_bits(self) -> float:
        return float(self.dims.size * self.transform.level_bits)

    @classmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> IntervalPipeline:
        params = raw["params"]
        v = params["v"]
        tolerances = [v] * dims.size if isinstance(v, int) else v
        pipeline = cls(transform, dims, tolerances)
        if pipeline.sketch.params() != dict(params):
            raise ParameterError("pipeline parameters do not match its transform (levels) or dims")
        return pipeline


def _one_sample(sample: Any, features: int) -> np.ndarray:
    if not _numeric(sample):
        raise SampleError("a sample must be numbers")
    x = np.asarray(sample, dtype=np.float64)
    if x.shape != (features,):
        raise SampleError(f"a sample must be a vector of {features} features, got shape {x.shape}")
    return x


# -- asymmetric interval -------------------------------------------------------------------------
class AsymmetricIntervalPipeline(Pipeline):
    """Several enrolment samples → template and hidden per-dimension tolerances (Fang's thesis §6.2, s2).

    ``scale``/``margin``/``spread`` are those of :func:`sketchauth.templates.enrol_interval`,
    applied to the levels of the enrolment samples; ``q`` caps the tolerance.
    """

    kind = "asymmetric-interval"

    def __init__(
        self,
        transform: FeatureTransform,
        dims: Any,
        *,
        q: int,
        scale: float = 3.0,
        margin: int = 1,
        spread: Spread = "std",
        scheme: str = "s2",
    ) -> None:
        super().__init__(transform, dims)
        self._sketch = AsymmetricIntervalSketch(n=transform.levels, q=q, scheme=scheme, features=int(self.dims.size))
        if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale >= 0):
            raise ParameterError(f"scale must be a finite non-negative number, got {scale!r}")
        if spread not in ("range", "std"):
            raise ParameterError(f"spread must be 'range' or 'std', got {spread!r}")
        self.scale = float(scale)
        self.margin = check_int("margin", margin, 0, q)
        self.spread: Spread = spread

    @classmethod
    def for_target_fmr(
        cls,
        transform: FeatureTransform,
        heldout: LabelledVectors,
        *,
        target_fmr: float = 1e-2,
        enrol_samples: int = 3,
        q: int | None = None,
        margin: int = 1,
    ) -> AsymmetricIntervalPipeline:
        """The largest ``scale`` whose FMR on held-out identities is at most ``target_fmr`` (s2, spread ``std``).

        Each held-out comparison has the smallest scale accepting it
        (:func:`asymmetric_scale_scores`); with ``k = ⌊target·I⌋`` of the ``I`` impostor trials
        allowed, the scale is the ``(k+1)``-th smallest impostor score, which accepts only trials
        scoring strictly below it: at most ``k`` (counted in integers).
        """
        if enrol_samples < 2:
            raise ParameterError("the asymmetric-interval pipeline enrols from at least 2 samples (enrol_samples)")
        allowed = _allowed_false_matches(target_fmr, heldout, transform, enrol_samples)
        q = transform.levels if q is None else q
        trials = projected_trials(transform.project, heldout, enrol_samples)
        _, impostor = asymmetric_scale_scores(transform, trials, q=q, margin=margin)
        ordered = np.sort(impostor)
        scale = float(ordered[allowed]) if allowed < ordered.size else float(ordered[-1]) + 1.0
        return cls(transform, np.arange(transform.dimensions), q=q, scale=max(0.0, scale), margin=margin, spread="std")

    @property
    def sketch(self) -> AsymmetricIntervalSketch:
        return self._sketch

    def secret_from_samples(self, samples: Any) -> tuple[np.ndarray, np.ndarray]:
        levels = self.capture_levels(samples)
        return enrol_interval(
            levels, n=self.transform.levels, q=self._sketch.q, spread=self.spread, scale=self.scale, margin=self.margin
        )

    def sample_transform(self, sample: Any) -> np.ndarray:
        y = self.transform.project(_one_sample(sample, self.transform.features))
        return self.transform.quantise(y)[self.dims]

    def capture_levels(self, samples: Any) -> np.ndarray:
        """Every enrolment capture's levels on ``dims`` (``m × k``): the input of :meth:`secret_from_samples`.

        A party that derives ``(b, v)`` itself from the captures (:func:`~sketchauth.templates.enrol_interval`
        with this pipeline's ``spread``, ``scale`` and ``margin``) needs exactly these.
        """
        return self._levels(self._enrolment_matrix(samples))

    @property
    def secret_bits(self) -> float:
        # The template's levels; the tolerances add identity-dependent bits we do not credit.
        return float(self.dims.size * self.transform.level_bits)

    def _settings(self) -> dict[str, Any]:
        return {"scale": self.scale, "margin": self.margin, "spread": self.spread}

    @classmethod
    def _from_config(
        cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]
    ) -> AsymmetricIntervalPipeline:
        params, settings = raw["params"], raw.get("settings", {})
        pipeline = cls(
            transform,
            dims,
            q=params["q"],
            scale=settings.get("scale", 3.0),
            margin=settings.get("margin", 1),
            spread=settings.get("spread", "std"),
            scheme=params["scheme"],
        )
        if pipeline.sketch.params() != dict(params):
            raise ParameterError("pipeline parameters do not match its transform (levels) or dims")
        return pipeline


def _allowed_false_matches(
    target_fmr: Any, heldout: LabelledVectors, transform: FeatureTransform, enrol_samples: int
) -> int:
    """``⌊target · I⌋`` for the ``I`` impostor trials of ``heldout``, in exact arithmetic."""
    if isinstance(target_fmr, bool) or not isinstance(target_fmr, (int, float, Fraction)) or not 0 < target_fmr < 1:
        raise ParameterError(f"target_fmr must be in (0, 1), got {target_fmr!r}")
    trials = projected_trials(transform.project, heldout, enrol_samples)
    return int(Fraction(target_fmr) * trials.impostor_trials)


def asymmetric_scale_scores(
    transform: FeatureTransform, trials: ProjectedTrials, *, q: int, margin: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per trial the smallest ``scale`` at which the s2 pipeline (spread ``std``) accepts it.

    Template ``b`` = rounded mean of the enrolment levels, ``s`` = their standard deviation
    (``ddof = 1``), ``v_j(c) = min(q, max(1, ⌈c·s_j⌉ + margin))``. The s2 decoder accepts
    ``−v ≤ Δ < v`` (``Δ = d' − b``; the left end ``b − v`` belongs to the secret interval), i.e.
    ``v > w`` with ``w = Δ`` for ``Δ ≥ 0`` and ``w = −Δ − 1`` for ``Δ < 0``; so a trial is accepted
    at scale ``c`` iff every ``w_j < q`` and ``c·s_j > w_j − margin`` (or ``w_j < max(1, margin)``
    when ``s_j = 0``). Scores are clipped to ``[0, 10^9]``.
    """
    m = trials.enrolment.shape[1]
    levels = transform.quantise(trials.enrolment)
    b = (2 * levels.sum(axis=1) + m) // (2 * m)  # enrol_interval's rounded mean
    spread = levels.astype(np.float64).std(axis=1, ddof=1)
    probes = transform.quantise(trials.probes)

    def score(template: np.ndarray, probe: np.ndarray) -> np.ndarray:
        bj, sj = template[..., 0, :], template[..., 1, :]
        signed = probe - bj
        w = np.where(signed < 0, -signed - 1, signed)
        need = np.where(sj > 0, (w - margin) / np.where(sj > 0, sj, 1.0), np.where(w < max(1, margin), -np.inf, np.inf))
        need = np.where(w >= q, np.inf, need)
        return np.max(need, axis=-1).clip(0.0, 1e9)

    packed = np.stack([b, spread], axis=1).astype(np.float64)
    return pair_scores(packed, probes, trials.owner, score)


# -- code-offset ---------------------------------------------------------------------------------
def _code_dims(transform: FeatureTransform, bits: int, dimensions: int | None) -> np.ndarray:
    per_byte = 8 // math.gcd(8, bits)  # dimensions needed for a whole number of bytes
    count = transform.dimensions if dimensions is None else min(int(dimensions), transform.dimensions)
    count = min(count, 255 * 8 // bits)
    count -= count % per_byte
    if count * bits < 16:
        raise ParameterError(
            f"{transform.dimensions} dimensions × {bits} bits give fewer than 2 whole bytes; "
            "use more bits or dimensions"
        )
    return np.arange(count)


class CodeOffsetPipeline(Pipeline):
    """Gray-coded binarised features → :class:`CodeOffsetSketch` correcting ``t`` byte errors."""

    kind = "code-offset"

    def __init__(self, transform: FeatureTransform, dims: Any, *, bits: int, t: int) -> None:
        super().__init__(transform, dims)
        self.bits = check_int("bits", bits, 1, transform.level_bits)
        if (self.dims.size * self.bits) % 8:
            raise ParameterError(f"{self.dims.size} dims × {self.bits} bits is not a whole number of bytes")
        self._sketch = CodeOffsetSketch(n=self.dims.size * self.bits // 8, t=t)

    @classmethod
    def for_target_fnmr(
        cls,
        transform: FeatureTransform,
        heldout: LabelledVectors,
        *,
        bits: int = 2,
        target_fnmr: float = 0.05,
        enrol_samples: int = 1,
        dimensions: int | None = None,
    ) -> CodeOffsetPipeline:
        """The smallest ``t`` reaching ``target_fnmr`` on held-out data (:func:`choose_error_tolerance`)."""
        choice = choose_error_tolerance(
            transform, heldout, bits=bits, target_fnmr=target_fnmr, enrol_samples=enrol_samples, dimensions=dimensions
        )
        return cls(transform, choice.dims, bits=bits, t=choice.t)

    @classmethod
    def for_target_fmr(
        cls,
        transform: FeatureTransform,
        heldout: LabelledVectors,
        *,
        target_fmr: float = 1e-2,
        bits: int = 2,
        enrol_samples: int = 1,
        dimensions: int | None = None,
    ) -> CodeOffsetPipeline:
        """The largest ``t`` (``1 ≤ t``, ``2t < n``) whose held-out FMR is at most ``target_fmr``.

        A comparison is accepted iff at most ``t`` bytes differ (Reed–Solomon corrects exactly
        that many). Counts are compared as integers: ``#{impostor errors ≤ t} ≤ ⌊target·I⌋``.
        ``ParameterError`` if even ``t = 1`` exceeds the target.
        """
        allowed = _allowed_false_matches(target_fmr, heldout, transform, enrol_samples)
        dims = _code_dims(transform, bits, dimensions)
        trials = projected_trials(transform.project, heldout, enrol_samples)
        _, impostor = byte_error_scores(transform, trials, bits, dims)
        n = dims.size * bits // 8
        t_max = (n - 1) // 2
        accepted = np.searchsorted(np.sort(impostor), np.arange(t_max + 1), side="right")
        ok = np.flatnonzero(accepted[1:] <= allowed)
        if t_max < 1 or ok.size == 0:
            raise ParameterError(
                f"no byte-error tolerance 1 <= t <= {max(t_max, 0)} reaches FMR {target_fmr} on {n} bytes; "
                "use more bits or dimensions"
            )
        return cls(transform, dims, bits=bits, t=int(ok[-1]) + 1)

    @property
    def sketch(self) -> CodeOffsetSketch:
        return self._sketch

    def _bytes(self, y: np.ndarray) -> bytes:
        full = np.zeros(self.transform.dimensions)
        full[self.dims] = y
        return self.transform.binarise_array(self.transform.quantise(full), self.bits, self.dims).tobytes()

    def secret_from_samples(self, samples: Any) -> bytes:
        return self._bytes(self._enrolment_matrix(samples).mean(axis=0))

    def sample_transform(self, sample: Any) -> bytes:
        return self._bytes(self.transform.project(_one_sample(sample, self.transform.features))[self.dims])

    @property
    def secret_bits(self) -> float:
        return float(8 * self._sketch.n)

    def _settings(self) -> dict[str, Any]:
        return {"bits": self.bits}

    @classmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> CodeOffsetPipeline:
        pipeline = cls(transform, dims, bits=raw.get("settings", {}).get("bits", 0), t=raw["params"]["t"])
        if pipeline.sketch.params() != dict(raw["params"]):
            raise ParameterError("pipeline parameters do not match its dims and bits")
        return pipeline


@dataclass(frozen=True, slots=True)
class ToleranceChoice:
    """The chosen byte-error tolerance ``t`` and its measured held-out rates."""

    t: int
    dims: np.ndarray
    fnmr: float
    fmr: float
    genuine_trials: int
    impostor_trials: int


def byte_error_scores(
    transform: FeatureTransform, trials: ProjectedTrials, bits: int, dims: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Genuine and impostor byte-error counts of the binarised templates and probes."""
    t_bytes = transform.binarise_array(transform.quantise(trials.templates), bits, dims)
    p_bytes = transform.binarise_array(transform.quantise(trials.probes), bits, dims)
    return pair_scores(t_bytes, p_bytes, trials.owner, lambda a, b: np.count_nonzero(a != b, axis=-1))


def choose_error_tolerance(
    transform: FeatureTransform,
    heldout: LabelledVectors,
    *,
    bits: int = 2,
    target_fnmr: float = 0.05,
    enrol_samples: int = 1,
    dimensions: int | None = None,
) -> ToleranceChoice:
    """The smallest ``t`` (``2t < n``) whose FNMR on held-out data is at most ``target_fnmr``.

    A genuine comparison is accepted iff at most ``t`` bytes differ (the Reed–Solomon decoder's
    guarantee; beyond ``t`` it fails or lands on another codeword, which the hash check rejects).
    ``ParameterError`` if no admissible ``t`` reaches the target (the message gives the best FNMR).
    """
    if not (isinstance(target_fnmr, (int, float)) and 0.0 < target_fnmr < 1.0):
        raise ParameterError(f"target_fnmr must be in (0, 1), got {target_fnmr!r}")
    dims = _code_dims(transform, bits, dimensions)
    trials = projected_trials(transform.project, heldout, enrol_samples)
    genuine, impostor = byte_error_scores(transform, trials, bits, dims)
    n = dims.size * bits // 8
    t_max = (n - 1) // 2
    if t_max < 1:
        raise ParameterError(
            f"{dims.size} dimensions × {bits} bits give {n} bytes; a code-offset sketch needs at least 3 bytes "
            "to correct one byte error: use more bits per dimension or keep more dimensions"
        )
    # Integer counts, compared exactly: rejected/G ≤ target ⇔ rejected ≤ ⌊target·G⌋ (as a Fraction,
    # so 5 of 100 rejected meets target 0.05 — a float 1 − accepted/G would give 0.05000000000000004).
    rejected = genuine.size - np.searchsorted(np.sort(genuine), np.arange(t_max + 1), side="right")
    fnmr = rejected / genuine.size
    ok = np.flatnonzero(rejected[1:] <= int(Fraction(str(target_fnmr)) * genuine.size))
    if ok.size == 0:
        raise ParameterError(
            f"no t <= {t_max} reaches FNMR {target_fnmr} with {dims.size} dimensions × {bits} bits "
            f"(best {fnmr[t_max]:.3f} at t={t_max}); use fewer bits or dimensions"
        )
    t = int(ok[0]) + 1
    fmr = float(np.count_nonzero(impostor <= t)) / impostor.size
    return ToleranceChoice(t, dims, float(fnmr[t]), fmr, int(genuine.size), int(impostor.size))


# -- thermometer codes and PinSketch (an L1 acceptance region) ------------------------------------
#: Range of each dimension's uniform quantiser, in standard deviations of the background.
THERMOMETER_RANGE = 3.5
#: Largest thermometer universe (bits over all dimensions); keeps PinSketch's field at m ≤ 16.
MAX_THERMOMETER_BITS = 2**16 - 1


def fisher_weights(fisher_ratios: np.ndarray, enrol_samples: int) -> np.ndarray:
    """Per-dimension weights ``√w_j`` with ``w_j = λ_j / (s²(s² + λ_j))``, ``s² = 1 + 1/m``.

    For Gaussian data the log-likelihood ratio of "same person" is, up to constants,
    ``−Σ w_j Δ_j²`` (genuine differences have variance ``s²``, impostor ones ``s² + λ_j``);
    ``√w_j`` scales the whitened axes so that distances weigh each dimension by its evidence.
    """
    s2 = 1.0 + 1.0 / enrol_samples
    lam = np.clip(np.asarray(fisher_ratios, dtype=np.float64), 1e-9, None)
    return np.sqrt(lam / (s2 * (s2 + lam)))


class ThermometerPipeline(Pipeline):
    """Uniformly quantised, Fisher-weighted features as thermometer codes → :class:`PinSketch`.

    Dimension ``j`` is quantised with a uniform step ``δ_j = resolution / √w_j`` (whitened units,
    :func:`fisher_weights`) over ``±THERMOMETER_RANGE`` background standard deviations into
    ``c_j`` levels; level ``ℓ`` is written as the thermometer code ``1^ℓ 0^(c_j − 1 − ℓ)``, and the
    secret is the *set* of positions of the ones over all dimensions (universe ``1 … Σ(c_j − 1)``,
    PinSketch's non-zero elements of GF(2^m)). The symmetric difference of two such sets is
    ``Σ_j |ℓ_j − ℓ'_j|``: PinSketch with error budget ``t`` accepts exactly the **L1 ball** of
    radius ``t`` in weighted level units — a far better match for the unprotected matcher's
    ellipsoid than the box of an interval sketch. Equal-probability levels are *not* used here
    on purpose: an L1 metric needs level differences proportional to distances.
    Loss ``≤ t·m`` (PinSketch's report; often above the secret's bits — the bound then says
    nothing is guaranteed to remain, which at FMR 1% is close to the truth anyway).
    """

    kind = "thermometer"

    def __init__(self, transform: FeatureTransform, dims: Any, *, steps: Any, t: int) -> None:
        super().__init__(transform, dims)
        step = np.asarray(steps, dtype=np.float64)
        if step.shape != (self.dims.size,) or not np.all(np.isfinite(step)) or np.any(step <= 0):
            raise ParameterError(f"steps must be {self.dims.size} positive finite numbers")
        self.steps = step
        spread = np.sqrt(1.0 + np.clip(transform.fisher_ratios[self.dims], 0.0, None))
        self.low = -THERMOMETER_RANGE * spread
        self.counts = np.ceil(2.0 * THERMOMETER_RANGE * spread / step).astype(np.int64) + 1
        self.offsets = np.concatenate([[0], np.cumsum(self.counts - 1)[:-1]])
        universe = int(np.sum(self.counts - 1))
        if universe > MAX_THERMOMETER_BITS:
            raise ParameterError(
                f"thermometer codes of {universe} bits exceed {MAX_THERMOMETER_BITS}; use a coarser resolution"
            )
        m = max(8, universe.bit_length())
        self._sketch = PinSketch(m=m, t=t)

    @classmethod
    def for_target_fmr(
        cls,
        transform: FeatureTransform,
        heldout: LabelledVectors,
        *,
        target_fmr: float = 1e-2,
        enrol_samples: int = 1,
        resolution: float = 0.2,
    ) -> ThermometerPipeline:
        """All kept dimensions, steps from :func:`fisher_weights`, ``t`` for ``target_fmr`` on held-out data."""
        draft = cls.with_resolution(transform, enrol_samples=enrol_samples, resolution=resolution, t=1)
        _genuine, impostor = draft.level_distances(heldout, enrol_samples=enrol_samples)
        ok = np.sort(impostor)
        # Largest t with #{impostor distance ≤ t} ≤ target · trials.
        allowed = math.floor(target_fmr * impostor.size + 1e-9)
        t = int(ok[allowed]) - 1 if allowed < ok.size else int(ok[-1])
        if t < 1:
            raise ParameterError(f"no error budget t >= 1 reaches FMR {target_fmr} on the held-out data")
        return cls(transform, draft.dims, steps=draft.steps, t=t)

    @classmethod
    def with_resolution(
        cls, transform: FeatureTransform, *, enrol_samples: int, resolution: float, t: int
    ) -> ThermometerPipeline:
        resolution = check_positive_float("resolution", resolution)
        dims = np.arange(transform.dimensions)
        steps = resolution / fisher_weights(transform.fisher_ratios, enrol_samples)
        return cls(transform, dims, steps=steps, t=t)

    def level_distances(self, data: LabelledVectors, *, enrol_samples: int) -> tuple[np.ndarray, np.ndarray]:
        """Genuine and impostor L1 distances in levels (= set differences) on labelled data."""
        return self.trial_distances(projected_trials(self.transform.project, data, enrol_samples))

    def trial_distances(self, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`level_distances` of already projected trials (templates and probes)."""
        t_levels = self.levels(trials.templates[:, self.dims])
        p_levels = self.levels(trials.probes[:, self.dims])
        return pair_scores(t_levels, p_levels, trials.owner, lambda a, b: np.abs(a - b).sum(axis=-1))

    def levels(self, y: np.ndarray) -> np.ndarray:
        """Uniform levels in ``[0, c_j)`` of whitened features restricted to ``dims``."""
        return np.clip(np.floor((y - self.low) / self.steps), 0, self.counts - 1).astype(np.int64)

    def _set(self, y: np.ndarray) -> np.ndarray:
        levels = self.levels(y)
        # Positions offset_j + 1 … offset_j + ℓ_j: the ones of each thermometer code.
        runs = [np.arange(o + 1, o + 1 + ell) for o, ell in zip(self.offsets.tolist(), levels.tolist(), strict=False)]
        return np.concatenate(runs).astype(np.int64)

    @property
    def sketch(self) -> PinSketch:
        return self._sketch

    def secret_from_samples(self, samples: Any) -> np.ndarray:
        return self._set(self._enrolment_matrix(samples).mean(axis=0))

    def sample_transform(self, sample: Any) -> np.ndarray:
        return self._set(self.transform.project(_one_sample(sample, self.transform.features))[self.dims])

    @property
    def secret_bits(self) -> float:
        return float(np.log2(self.counts).sum())

    def _settings(self) -> dict[str, Any]:
        return {"steps": self.steps.tolist()}

    @classmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> ThermometerPipeline:
        pipeline = cls(transform, dims, steps=raw["settings"]["steps"], t=raw["params"]["t"])
        if pipeline.sketch.params() != dict(raw["params"]):
            raise ParameterError("pipeline parameters do not match its dims and steps")
        return pipeline


# -- loading -------------------------------------------------------------------------------------
_KINDS: dict[str, type[Pipeline]] = {
    IntervalPipeline.kind: IntervalPipeline,
    AsymmetricIntervalPipeline.kind: AsymmetricIntervalPipeline,
    CodeOffsetPipeline.kind: CodeOffsetPipeline,
    ThermometerPipeline.kind: ThermometerPipeline,
}


def load_pipeline(config: str | bytes | Mapping[str, Any]) -> Pipeline:
    """A pipeline from its JSON configuration (``ParameterError`` for anything malformed).

    The embedded transform must match its recorded SHA-256 fingerprint.
    """
    if isinstance(config, (str, bytes)):
        try:
            config = json.loads(config)
        except (ValueError, TypeError):
            raise ParameterError("pipeline configuration is not valid JSON") from None
    if not isinstance(config, Mapping) or config.get("format") != PIPELINE_FORMAT:
        raise ParameterError(f"not a pipeline configuration (expected format {PIPELINE_FORMAT!r})")
    cls = _KINDS.get(config.get("kind"))  # type: ignore[arg-type]
    if cls is None:
        raise ParameterError(f"unknown pipeline kind {config.get('kind')!r}; known: {', '.join(_KINDS)}")
    transform = FeatureTransform.from_dict(config.get("transform"))  # type: ignore[arg-type]
    if config.get("transform_sha256") != transform.fingerprint:
        raise ParameterError("pipeline transform does not match its recorded fingerprint")
    if not isinstance(config.get("params"), Mapping) or not isinstance(config.get("settings", {}), Mapping):
        raise ParameterError("pipeline params and settings must be objects")
    try:
        pipeline = cls._from_config(transform, _dims(config.get("dims"), transform), config)
    except (KeyError, TypeError):
        raise ParameterError("pipeline configuration lacks a required field") from None
    if pipeline.sketch.scheme_name != config.get("scheme"):
        raise ParameterError("pipeline scheme does not match its kind")
    return pipeline


#: Pipeline names a deployment may register: file stems of ``<name>.json``.
_PIPELINE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: A pipeline file larger than this is not a configuration (a 512×4096 projection is ~40 MB).
MAX_PIPELINE_BYTES = 64 * 1024 * 1024


def load_pipelines(directory: str | Path) -> dict[str, Pipeline]:
    """Every ``<name>.json`` pipeline configuration in ``directory``, by name (e.g. ``SKETCHAUTH_PIPELINES``).

    This is how a service registers pipelines by name: configuration stored once, beside the
    scheme settings. Names are the file stems (letters, digits, ``._-``; at most 64 characters);
    anything else in the directory is ignored. ``ParameterError`` names the first bad file.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ParameterError(f"pipeline directory {root} does not exist")
    found: dict[str, Pipeline] = {}
    for path in sorted(root.glob("*.json")):
        if not _PIPELINE_NAME.match(path.stem):
            continue
        if path.stat().st_size > MAX_PIPELINE_BYTES:
            raise ParameterError(f"{path.name} is larger than {MAX_PIPELINE_BYTES} bytes")
        try:
            found[path.stem] = load_pipeline(path.read_text(encoding="utf-8"))
        except ParameterError as exc:
            raise ParameterError(f"{path.name}: {exc}") from None
    return found
