"""Fitting the angular pipeline (:class:`~sketchauth.features.angular.AngularPipeline`) on a background.

Choices made on the background only (:func:`for_target_fmr`):

* ``alpha`` — the smallest codeword weight whose codebook ``log2 |C_α|`` reaches
  ``security_bits`` (default 64): the work to find the secret from one helper without a matching
  sample, by counting (Kim et al., CVPR 2021, §5). A population model can shorten it: see
  ``docs/schemes/angular.md`` for the figures that bind against each attacker.
* ``min_cos`` — the cosine threshold, chosen by identity-disjoint cross-validation over every
  background person with a one-sided Clopper–Pearson bound on the FMR
  (:func:`~sketchauth.evaluate.fitting.calibration.calibrate`). The calibration's decision rule is the
  cosine between the probe and the enrolled direction; the sketch accepts a subset of those probes
  (it must also decode), so the FMR bound holds for the sketch too, up to the helper's fixed-point
  rounding (``≈ 10^−3`` in the cosine). Decoding failures add to the FNMR: they are measured with
  real encode → decode on background people (:func:`decode_failures`, recorded in
  :attr:`AngularPipeline.decode_failures`).
"""

from __future__ import annotations

import hashlib
import hmac
import math
import numbers
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace
from functools import lru_cache, partial
from typing import Any, cast

import numpy as np
from threadpoolctl import ThreadpoolController

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.calibration import Calibration, Decider, Features, _subset
from sketchauth.evaluate.fitting.common import calibrate_with, with_calibration
from sketchauth.evaluate.fitting.options import DEFAULT_OPTIONS, CalibrationOptions
from sketchauth.evaluate.fitting.transform import refit_transform
from sketchauth.evaluate.trials import ProjectedTrials, plan_trials, projected_trials
from sketchauth.features.angular import MAX_VERIFY_CAPTURES, AngularPipeline, mean_direction, unit
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.angular import AngularSketch, Codeword, codebook_bits, decoding_margin, probe_matrix
from sketchauth.sketches.angular_polar import MIN_POLAR_DIMENSION, PolarAngularSketch
from sketchauth.sketches.polar import decode_batch, signs

__all__ = [
    "CODES",
    "COSINE_GRID",
    "KIND",
    "SharedFolds",
    "angular_decider",
    "attempt_directions",
    "blas_one_thread",
    "calibrate_captures",
    "decode_failures",
    "for_target_fmr",
    "for_target_fmr_shared",
    "kept_columns",
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

#: The pipeline kind this module fits (its entry in :data:`sketchauth.evaluate.fitting.FITTERS`).
KIND = AngularPipeline.kind


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


def projected_directions(
    transform: FeatureTransform, dims: np.ndarray, trials: ProjectedTrials
) -> tuple[np.ndarray, np.ndarray]:
    """Enrolment templates (mean of the normalised projected captures, normalised) and unit probes.

    ``transform`` may keep fewer dimensions than ``dims`` asks: a cross-validation fold's LDA,
    refitted on fewer people, has at most ``people − 1`` directions. The directions it lacks are
    zero (:func:`kept_columns`): angles are unchanged and every vector keeps ``dims.size`` coordinates,
    the sketch's dimension.
    """
    j, m, d = trials.enrolment.shape
    enrolment = kept_columns(transform.project(trials.enrolment.reshape(j * m, d)), dims)
    templates = mean_direction(unit(enrolment).reshape(j, m, dims.size))
    return templates, unit(kept_columns(transform.project(trials.probes), dims))


def kept_columns(projected: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """``projected[:, dims]``, with zeros for the columns of ``dims`` the projection does not have.

    >>> kept_columns(np.array([[1.0, 2.0]]), np.arange(3))
    array([[1., 2., 0.]])
    """
    if dims.size == 0 or int(dims.max()) < projected.shape[1]:
        return projected[:, dims]
    out = np.zeros((projected.shape[0], dims.size), dtype=projected.dtype)
    present = dims < projected.shape[1]
    out[:, present] = projected[:, dims[present]]
    return out


class SharedFolds:
    """What every angular calibration of one transform on one background shares: each fold's
    refitted transform and the cosine rule's calibration per set of options.

    Cross-validation refits the transform without a fold's people (5 folds and the 10 pairs of
    folds: 15 fits per calibration), and those training sets depend on the background and the
    folds only, not on the code; the cosine rule's calibration does not depend on the code either.
    :func:`for_target_fmr` calibrates twice (the cosine rule, then the decoding-aware rule), and the
    code-size curve (:func:`sketchauth.evaluate.capacity.background_curve`) once per size: with one
    of these they fit each training set once and calibrate the cosine rule once. The results are
    those of fitting afresh (a fit is a deterministic function of its training people). Thread-safe.
    """

    def __init__(self, transform: FeatureTransform, background: LabelledVectors) -> None:
        self.transform = transform
        self.background = background
        self._models: dict[bytes, FeatureTransform] = {}
        self._cosine: dict[tuple[Any, ...], Calibration] = {}
        self._directions: dict[tuple[int, bytes, bytes], tuple[np.ndarray, np.ndarray]] = {}
        self._products: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._keep: list[FeatureTransform] = []
        self._lock = threading.Lock()

    def fit(self, train: LabelledVectors) -> FeatureTransform:
        """The transform refitted on ``train`` (:func:`refit_transform`), fitted once per training set."""
        key = _digest(train)
        with self._lock:  # held while fitting: a second thread asking for the same set waits for it
            model = self._models.get(key)
            if model is None:
                model = self._models[key] = refit_transform(self.transform, train)
            return model

    def cosine(self, dims: np.ndarray, options: CalibrationOptions) -> Calibration:
        """The cosine rule's calibration (no code) on the background with ``options``, once per setting."""
        key = (
            dims.tobytes(),
            options.target_fmr,
            options.enrol_samples,
            options.folds,
            options.confidence,
            options.refit,
        )
        with self._lock:
            found = self._cosine.get(key)
        if found is None:
            decider = angular_decider(self.transform, dims, refit=options.refit, shared=self)
            found = calibrate_with(decider, self.background, options)
            with self._lock:
                found = self._cosine.setdefault(key, found)
        return found

    def directions(
        self, model: FeatureTransform | None, dims: np.ndarray, trials: ProjectedTrials
    ) -> tuple[np.ndarray, np.ndarray]:
        """:func:`projected_directions` of ``trials`` under ``model`` (``None``: the transform), once per
        model and trials: every calibration's pools and pairs of folds are the same people."""
        model = self.transform if model is None else model
        h = hashlib.blake2b(digest_size=32)
        for part in (trials.enrolment, trials.probes, trials.owner):
            array = np.ascontiguousarray(part)
            h.update(f"{array.dtype.str}{array.shape}".encode())
            h.update(array.data)
        key = (id(model), dims.tobytes(), h.digest())
        with self._lock:
            found = self._directions.get(key)
            if found is None:
                found = self._directions[key] = projected_directions(model, dims, trials)
                self._keep.append(model)  # the key holds its id: the model outlives the entry
            return found

    def cosines(self, templates: np.ndarray, probes: np.ndarray) -> np.ndarray:
        """``templates @ probes.T``, once per pair of arrays :meth:`directions` returned."""
        key = (id(templates), id(probes))
        with self._lock:
            found = self._products.get(key)
            if found is None or found[0] is not templates or found[1] is not probes:
                found = self._products[key] = (templates, probes, templates @ probes.T)
            return found[2]


def _digest(data: LabelledVectors) -> bytes:
    """A digest of labelled rows (identities, samples, split): equal for equal training sets."""
    h = hashlib.blake2b(digest_size=32)
    for part in (data.identities, data.samples, data.split):
        if part is None:
            h.update(b"-")
            continue
        array = np.ascontiguousarray(part)
        h.update(f"{array.dtype.str}{array.shape}".encode())
        h.update(array.data if array.dtype != object else repr(array.tolist()).encode())
    return h.digest()


def for_target_fmr(
    transform: FeatureTransform, heldout: LabelledVectors, options: CalibrationOptions = DEFAULT_OPTIONS
) -> AngularPipeline:
    """The code for ``options.security_bits``, ``min_cos`` for ``options.target_fmr`` (module docstring).

    ``match_threshold`` (polar code): where the cosine threshold lies above what 64 bits need,
    the code takes more bits (:func:`matched_bits`) — its cells shrink to the threshold, so an
    attacker who decodes a stolen helper offline (skipping the ``min_cos`` check) gains no wider
    region than the verifier accepts, and the codebook work grows.

    ``options.code``: ``"polar"`` (``bits = ⌈security_bits⌉``, decoded with ``list_size`` paths) or
    ``"sparse"`` (IronMask, the smallest ``α`` reaching ``security_bits``).
    ``options`` (:class:`~sketchauth.evaluate.fitting.options.CalibrationOptions`): the target, the
    cross-validation and this kind's settings; the prediction is in
    :attr:`~sketchauth.features.base.Pipeline.calibration`.
    """
    return for_target_fmr_shared(options, SharedFolds(transform, heldout))


def for_target_fmr_shared(options: CalibrationOptions, shared: SharedFolds) -> AngularPipeline:
    """:func:`for_target_fmr` of ``shared``'s transform on its background, with the fold transforms
    and the cosine calibration ``shared`` holds (fitted or calibrated now if not yet: :class:`SharedFolds`)."""
    transform, heldout = shared.transform, shared.background
    code, security_bits = options.code, options.security_bits
    if code not in CODES:
        raise ParameterError(f"code must be one of {', '.join(CODES)}, got {code!r}")
    dims = np.arange(transform.dimensions)
    if dims.size < 2:
        raise ParameterError("the angular pipeline needs at least 2 dimensions")
    if code == "polar":
        shape: dict[str, Any] = {"bits": _polar_bits(int(dims.size), security_bits), "list_size": options.list_size}
    else:
        shape = {"alpha": smallest_alpha(int(dims.size), security_bits)}
    # First the cosine rule alone (cheap); the code only refuses more, so the decoding-aware
    # threshold lies at or below it: decode the pairs down to DECODE_FLOOR below.
    cosine = shared.cosine(dims, options)
    if code == "polar" and options.match_threshold:
        shape["bits"] = matched_bits(int(dims.size), float(-cosine.point), shape["bits"])
    if code == "polar":  # the CRC where the dimension holds it beside the bits (else the plain code)
        shape["crc"] = options.crc if shape["bits"] + options.crc < dims.size else 0
    unchecked = AngularPipeline(transform, dims, min_cos=0.0, **shape).sketch
    floor = max(0.0, float(-cosine.point) - DECODE_FLOOR)
    decider = angular_decider(transform, dims, refit=options.refit, sketch=unchecked, floor=floor, shared=shared)
    choice = calibrate_with(decider, heldout, options)
    pipeline = with_calibration(AngularPipeline(transform, dims, min_cos=float(-choice.point), **shape), choice)
    if options.measure_decode_failures:
        pipeline.decode_failures = decode_failures(pipeline, heldout, enrol_samples=options.enrol_samples)
    if options.calibrate_captures:
        calibrate_captures(pipeline, heldout, options, shared=shared)
    return pipeline


def calibrate_captures(
    pipeline: AngularPipeline,
    background: LabelledVectors,
    options: CalibrationOptions = DEFAULT_OPTIONS,
    *,
    shared: SharedFolds | None = None,
) -> AngularPipeline:
    """``pipeline``'s ``min_cos`` for attempts of ``k`` = 2 to :data:`MAX_VERIFY_CAPTURES` captures
    (:attr:`AngularPipeline.captures_min_cos`), each calibrated like the one-capture threshold.

    An attempt of ``k`` captures is decided on the normalised mean of their directions
    (:meth:`AngularPipeline.captures_transform`), which moves genuine and impostor cosines alike
    (averaging removes capture noise from both), so one capture's threshold neither keeps the
    target FMR nor spends it for ``k`` captures. Here each ``k`` gets its own: the same
    decoding-aware decider, the same identity-disjoint cross-validation and Clopper–Pearson bound
    at ``options.target_fmr``, over the background's own ``k``-capture attempts — every probe of a
    person with at least ``enrol_samples + k`` captures starts one, with the next ``k − 1`` of that
    person's probes (cyclically: each capture is in ``k`` attempts, which the per-person design
    effect of the bound accounts for). A ``k`` the background cannot calibrate (too few such
    people or trials) keeps ``min_cos``, and :attr:`AngularPipeline.captures_calibration` says why.
    """
    sketch = pipeline.sketch
    unchecked = sketch.deciding_at(0.0)
    shared = shared if shared is not None else SharedFolds(pipeline.transform, background)
    transform, dims, refit = pipeline.transform, pipeline.dims, options.refit
    for k in range(2, MAX_VERIFY_CAPTURES + 1):
        people = _with_probes(background, options.enrol_samples, k)
        try:
            if people is None:
                raise ParameterError(
                    f"no background person has {options.enrol_samples + k} captures ({options.enrol_samples} to "
                    f"enrol, {k} for an attempt)"
                )
            # As for one capture: the cosine rule first (no decoding), then the code decodes the pairs
            # down to DECODE_FLOOR below its threshold only.
            cosine = angular_decider(transform, dims, refit=refit, shared=shared)
            floor = max(0.0, float(-calibrate_with(_attempts_of(cosine, k), people, options).point) - DECODE_FLOOR)
            decider = angular_decider(transform, dims, refit=refit, sketch=unchecked, floor=floor, shared=shared)
            choice = calibrate_with(_attempts_of(decider, k), people, options)
        except ParameterError as exc:
            pipeline.captures_min_cos.pop(k, None)
            pipeline.captures_calibration[k] = f"{k} captures keep the one-capture threshold: {exc}"
            continue
        pipeline.captures_min_cos[k] = float(-choice.point)
        pipeline.captures_calibration[k] = choice
    return pipeline


def _with_probes(data: LabelledVectors, enrol_samples: int, k: int) -> LabelledVectors | None:
    """The people of ``data`` with at least ``k`` probes besides ``enrol_samples`` enrolment captures
    (by the protocol's roles when ``data`` has a split column), or ``None``: nobody."""
    plan = plan_trials(data, enrol_samples=enrol_samples)
    keep = [label for label, probes in zip(plan.labels, plan.probe_rows, strict=True) if probes.size >= k]
    if not keep:
        return None
    return _subset(data, np.isin(data.identities, np.asarray(keep, dtype=data.identities.dtype)))


def _attempts_of(decider: Decider, k: int) -> Decider:
    """``decider`` over ``k``-capture attempts: each probe replaced by its attempt (:func:`attempt_directions`)."""
    return replace(decider, features=_attempt_features(decider.features, k))


def _attempt_features(features: Features, k: int) -> Features:
    """``features`` with each probe replaced by its ``k``-capture attempt (:func:`attempt_directions`)."""

    def attempts(model: Any, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
        templates, probes = features(model, trials)
        return templates, attempt_directions(probes, trials.owner, k)

    return attempts


def attempt_directions(probes: np.ndarray, owner: np.ndarray, k: int) -> np.ndarray:
    """Row ``i``: the normalised mean of probe ``i`` and the next ``k − 1`` probes of its owner, in
    order and cyclically — one ``k``-capture attempt per probe, each of ``k`` distinct captures.

    ``ParameterError`` when an owner has fewer than ``k`` probes.

    >>> p = np.eye(3)
    >>> attempt_directions(p, np.array([0, 0, 1]), 1).tolist() == p.tolist()
    True
    """
    owner = np.asarray(owner)
    order = np.argsort(owner, kind="stable")
    ranked = owner[order]
    start = np.searchsorted(ranked, ranked, side="left")
    count = np.bincount(ranked)[ranked]
    if np.any(count < k):
        raise ParameterError(f"an attempt of {k} captures needs {k} probes of its person; some have {int(count.min())}")
    position = np.arange(ranked.size) - start
    members = np.stack([probes[order[start + (position + j) % count]] for j in range(k)], axis=-2)
    out = np.empty_like(probes)
    out[order] = mean_direction(members)
    return out


#: Rows of a pair array at given pair positions (gathered on demand).
_Rows = Callable[[np.ndarray], np.ndarray]


def angular_decider(
    transform: FeatureTransform,
    dims: np.ndarray,
    *,
    refit: bool,
    sketch: AngularSketch | None = None,
    floor: float = 0.0,
    seed: int = 0,
    shared: SharedFolds | None = None,
) -> Decider:
    """The cosine threshold as a :class:`~sketchauth.evaluate.fitting.calibration.Decider`: accept iff
    ``cos(probe, template) ≥ min_cos`` for every ``min_cos ≥ floor`` of :data:`COSINE_GRID` (as
    ``−cos ≤ −min_cos``) — and, with ``sketch``, iff the code also decodes the probe.

    With ``sketch`` every enrolled template gets a simulated enrolment (``min_cos`` 0): a codeword
    and the helper's rotation drawn from *seeded* randomness (the calibration is reproducible), the
    rotation drawn only where it acts, with the law of the scheme's (:class:`_SimulatedHelper`);
    every pair whose cosine reaches ``floor`` is decoded by the scheme's own list decoder; a pair
    the code refuses is accepted at no threshold.
    With ``refit`` each fold's model is the transform refitted without the fold's people. With
    ``shared`` (:class:`SharedFolds`) the fold transforms, the projected directions and the cosines
    of every template against every probe are computed once and shared with other calibrations.
    """
    helpers: dict[bytes, _SimulatedHelper] = {}
    rng = np.random.default_rng(seed)

    def refitted(train: LabelledVectors) -> FeatureTransform:
        return refit_transform(transform, train)

    def features(model: FeatureTransform | None, trials: ProjectedTrials) -> tuple[np.ndarray, np.ndarray]:
        return _directions(shared, transform if model is None else model, dims, trials)

    def decoded(cos: np.ndarray, templates: _Rows, probes: _Rows) -> np.ndarray:
        """``−cos``, and ``+∞`` where the code refuses (pairs with ``cos ≥ floor`` decoded); ``templates``
        and ``probes``: callables from pair positions to the rows (gathered only where needed)."""
        out = -cos
        candidates = np.flatnonzero(cos >= floor) if sketch is not None else np.zeros(0, dtype=np.int64)
        if sketch is None or candidates.size == 0:
            return np.asarray(out)
        chosen, probe_rows = templates(candidates), probes(candidates)
        unique, inverse = np.unique(chosen, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        locals_ = [np.flatnonzero(inverse == u) for u in range(unique.shape[0])]

        def jobs() -> Iterator[Callable[[], np.ndarray]]:
            # The seeded draws on this thread, in a fixed order (reproducible); the encoding and the
            # decoding on the workers.
            for u, template in enumerate(unique):
                key = template.tobytes()
                if key not in helpers:
                    helpers[key] = _SimulatedHelper(sketch, template, rng)
                yield partial(helpers[key].decodes, probe_rows[locals_[u]])

        for local, ok in zip(locals_, _streamed(jobs()), strict=True):
            out[candidates[local[~ok]]] = np.inf
        return np.asarray(out)

    def score(model: Any, templates: np.ndarray, probes: np.ndarray) -> np.ndarray:
        cos = np.einsum("ij,ij->i", templates, probes)
        return decoded(cos, lambda k: templates[k], lambda k: probes[k])

    def pair_score(model: Any, templates: np.ndarray, probes: np.ndarray, t: np.ndarray, p: np.ndarray) -> np.ndarray:
        cos = _pair_cosines(shared, templates, probes, t, p)
        return decoded(cos, lambda k: templates[t[k]], lambda k: probes[p[k]])

    grid = COSINE_GRID[floor - 1e-12 <= COSINE_GRID]
    return Decider(
        grid=-grid,
        score=score,
        fit=(refitted if shared is None else shared.fit) if refit else None,
        features=features,
        ties="strictest" if sketch is None else "loosest",
        pair_score=pair_score,
    )


def _directions(
    shared: SharedFolds | None, model: FeatureTransform, dims: np.ndarray, trials: ProjectedTrials
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`projected_directions`, through ``shared``'s cache when there is one."""
    return projected_directions(model, dims, trials) if shared is None else shared.directions(model, dims, trials)


def _pair_cosines(
    shared: SharedFolds | None, templates: np.ndarray, probes: np.ndarray, t: np.ndarray, p: np.ndarray
) -> np.ndarray:
    """The cosines of the pairs ``(templates[t], probes[p])``: from ``shared``'s products of every template
    against every probe (once for all calibrations), else by one product of the chunk's templates."""
    if shared is not None:
        return np.asarray(shared.cosines(templates, probes)[t, p])
    # The cosines of a chunk by one matrix product, not by gathering 2 × pairs × n floats first.
    rows, local = np.unique(t, return_inverse=True)
    return np.asarray((templates[rows] @ probes.T)[local.reshape(-1), p])


#: Threads decoding the calibration's pairs (one helper each at a time): the expansion of ``R̂`` and
#: the polar list decoder run outside the GIL (BLAS, the native decoder), so two cores nearly halve it.
_DECODE_THREADS = min(2, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


@lru_cache(maxsize=1)
def _blas() -> ThreadpoolController:
    """The process's BLAS pools, found once (a fresh search walks every loaded library)."""
    return ThreadpoolController()


def blas_one_thread() -> Any:
    """A context holding BLAS at one thread: around work that runs several calibrations on threads at
    once (their own one-thread limits then restore one thread, not the default, whatever the order
    they end in)."""
    return _blas().limit(limits=1, user_api="blas")


#: Jobs queued beyond the running ones in :func:`_streamed` (each holds its helper's encoder randomness).
_QUEUED = 2


def _streamed(tasks: Iterable[Callable[[], np.ndarray]]) -> list[np.ndarray]:
    """Each task's result, in order, on :data:`_DECODE_THREADS` threads; the tasks are made (drawn
    from ``tasks``) on the calling thread while the workers run, at most :data:`_QUEUED` ahead. BLAS is
    held at one thread meanwhile: the workers' own one-thread limits then restore one thread, not
    the default, and two workers do not each start a BLAS pool."""
    if _DECODE_THREADS < 2:
        return [task() for task in tasks]
    results: list[np.ndarray] = []
    with _blas().limit(limits=1, user_api="blas"), ThreadPoolExecutor(_DECODE_THREADS) as pool:
        pending: deque[Future[np.ndarray]] = deque()
        for task in tasks:
            pending.append(pool.submit(task))
            if len(pending) > _DECODE_THREADS + _QUEUED:
                results.append(pending.popleft().result())
        results.extend(future.result() for future in pending)
    return results


class _SimulatedHelper:
    """One simulated enrolment: a codeword drawn from the seeded ``rng`` (in the caller's order) and
    the helper's rotation, drawn *where it acts* — on the span of the template and the probes decoded
    against it — instead of as a whole ``n × n`` matrix.

    The scheme's rotation ``R`` is Haar conditioned on ``R t̂ = ĉ`` (:func:`~sketchauth.sketches.
    _rotation.conditioned_householder`; the row signs flip coordinates of both sides and keep that).
    Such an ``R`` is invariant under every rotation fixing ``ĉ`` on the left, so on ``t̂^⊥`` it is a
    uniform isometry onto ``ĉ^⊥``: the images of an orthonormal basis ``t̂, b_1, b_2, …`` are
    ``ĉ`` and a uniform orthonormal frame of ``ĉ^⊥``, which is how they are drawn here — the first
    time a probe leaves the span of the basis so far (Gram–Schmidt), a new image orthogonal to
    every earlier one, from this enrolment's own generator (seeded from ``rng`` when made, so the
    draws do not depend on which thread decodes). A template decoded again meets the same rotation
    on the directions it has already seen. The decoder then sees ``y = R p̂`` at the scheme's fixed
    point (``2^14·R`` times the quantised probe, rounded): the same distribution of decisions as
    real helpers, without the helper's own rounding of ``R`` (``≈ 10^−4``, the order of the angle
    check's). ``O(n·m²)`` for ``m`` directions seen instead of ``O(n³)``: the calibration of every
    code size over a thousand people at 512 dimensions is dominated by it no longer. Real helpers
    are what ``decode_failures``, ``features evaluate`` and every cross-check use.
    """

    def __init__(self, sketch: AngularSketch, template: np.ndarray, rng: np.random.Generator) -> None:
        self.sketch = sketch
        self.secret = _seeded_secret(sketch, template, rng)
        self._rng = np.random.default_rng(rng.integers(0, 2**63, size=2))
        codeword = np.asarray(self.secret, dtype=np.float64)
        self._basis = [np.asarray(self.secret.template, dtype=np.float64)]
        self._images = [codeword / np.linalg.norm(codeword)]
        self._lock = threading.Lock()

    def rotated(self, probes: np.ndarray) -> np.ndarray:
        """``R p`` for each row of ``probes`` (rows of ``n`` floats), extending the drawn frame as needed."""
        with self._lock:
            for p in probes:
                self._extend(np.asarray(p, dtype=np.float64))
            basis, images = np.stack(self._basis), np.stack(self._images)
        return cast("np.ndarray", (probes @ basis.T) @ images)

    def _extend(self, p: np.ndarray) -> None:
        """Add ``p``'s component outside the basis (if any) to the basis, with a fresh image."""
        norm = float(np.linalg.norm(p))
        residual = _orthogonal_part(p, self._basis)
        if norm == 0.0 or float(np.linalg.norm(residual)) <= _SPAN_TOLERANCE * norm:
            return
        image = _orthogonal_part(np.asarray(self._rng.standard_normal(p.shape[0]), dtype=np.float64), self._images)
        self._basis.append(residual / np.linalg.norm(residual))
        self._images.append(image / np.linalg.norm(image))

    def decodes(self, probes: np.ndarray) -> np.ndarray:
        """Which ``probes`` the scheme's decoder decodes to the secret under this rotation (``min_cos`` 0)."""
        quantised, refused = probe_matrix(probes, self.sketch.dimension)
        y = np.rint(self.rotated(quantised) * _MATRIX_SCALE)
        if isinstance(self.sketch, PolarAngularSketch):
            coded = decode_batch(y, self.sketch.code, self.sketch.list_size)
            same = np.all(signs(coded) == np.asarray(self.secret, dtype=np.int8)[None, :], axis=1)
        else:
            same = decoding_margin(y, np.asarray(self.secret)) > 0
        return cast("np.ndarray", same & ~refused)


#: A probe whose component outside the frame is below this share of its norm adds no direction.
_SPAN_TOLERANCE = 1e-10
#: The fixed point of a helper's rotation (``R̂ = round(2^14·R)``, :meth:`AngularSketch.matrix`).
_MATRIX_SCALE = float(1 << 14)


def _orthogonal_part(v: np.ndarray, frame: list[np.ndarray]) -> np.ndarray:
    """``v`` less its projection on the orthonormal ``frame`` (Gram–Schmidt, twice for accuracy)."""
    out = v.copy()
    if frame:
        f = np.stack(frame)
        for _ in range(2):
            out -= (f @ out) @ f
    return out


def _seeded_secret(sketch: AngularSketch, template: np.ndarray, rng: np.random.Generator) -> Codeword:
    """A codeword drawn from ``rng`` and bound to ``template`` (simulated enrolment)."""
    secret = sketch.random_codeword(rng).view(Codeword)
    secret.template = template / np.linalg.norm(template)
    return secret


def decode_failures(pipeline: AngularPipeline, people: LabelledVectors, *, enrol_samples: int) -> dict[str, Any]:
    """Real encode → decode of genuine trials of ``people`` whose cosine passes ``min_cos``.

    One helper per person (the first :data:`DECODE_CHECK_PAIRS` such trials): the share the code
    refuses although the cosine rule accepts them — what the sketch adds to the cosine matcher's
    FNMR at this threshold.
    """
    trials = projected_trials(lambda x: x, people, enrol_samples)
    templates, probes = projected_directions(pipeline.transform, pipeline.dims, trials)
    sketch = pipeline.sketch
    cos = np.einsum("ij,ij->i", templates[trials.owner], probes)
    candidates = np.flatnonzero(cos >= sketch.min_cos)[:DECODE_CHECK_PAIRS]
    owners = trials.owner[candidates]
    # One job per person (enrol once, decode each of its trials) on the decoding threads.
    people_checked = list(dict.fromkeys(owners.tolist()))
    jobs = (
        partial(_refused, sketch, templates[owner], probes[candidates[owners == owner]]) for owner in people_checked
    )
    refused = int(sum(int(counted[0]) for counted in _streamed(jobs)))
    checked = int(candidates.size)
    return {"checked": checked, "refused": refused, "share": refused / checked if checked else 0.0}


def _refused(sketch: AngularSketch, template: np.ndarray, probes: np.ndarray) -> np.ndarray:
    """How many of ``probes`` real ``decode`` refuses under a real enrolment of ``template`` (a 1-array)."""
    secret = sketch.check_secret(template)
    helper, expected = sketch.encode(secret), sketch.secret_bytes(secret)
    refused = 0
    for probe in probes:
        try:
            ok = hmac.compare_digest(sketch.secret_bytes(sketch.decode(helper, probe)), expected)
        except DecodeError:
            ok = False
        refused += int(not ok)
    return np.array([refused])
