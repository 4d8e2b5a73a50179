"""The angular pipeline as a row of ``features evaluate``: exact scores, its own real-decode check.

The other rows score a trial so that the pipeline at setting ``s`` accepts it iff its score is at
most ``s`` whatever the enrolment (their helpers are deterministic in what they accept). The
angular sketch's helper is a random rotation: *which* probes the code decodes depends on it. So the
row enrols every evaluation person once, with the real encoder, and scores each (template, probe)
pair under that very helper:

    score = −ĉ   if the polar list decoder returns the person's codeword and ĉ ≥ floor,
            +∞   otherwise,

where ``ĉ = t / √(n · 2^28 · ‖p̂‖²)`` is the cosine the sketch's angle check compares with
``min_cos`` (``t`` the decoded word's correlation with the rotated quantised probe ``R̂p̂``, exact
integers: :func:`~sketchauth.evaluate.deciders.polar_accepts`). The sketch at
``min_cos = τ`` accepts exactly the pairs with ``ĉ ≥ τ``; :func:`angular_row` builds it at a
``τ`` strictly between the setting's ``ĉ`` and the next lower one, so "accept iff score ≤ s" *is*
the scheme. The sweep stops at ``floor``: the cosine that :data:`FLOOR_FMR` of the impostor pairs
reach (pairs further than :data:`~sketchauth.evaluate.capacity.PREFILTER` below it are not decoded:
the helper's fixed-point rounding moves the angle check by about ``10^−3``).

The check (:func:`angular_decode_check`) re-decides trials at the FMR 1e-2 setting by real
``encode_with`` → ``decode`` under the same rotation (the seeded randomness the row enrolled with),
through the pipeline's own ``sample_transform`` of the raw captures: every disagreement counts.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.capacity import PREFILTER
from sketchauth.evaluate.deciders import Disagreements, crosscheck_sample, real_decode_recovers
from sketchauth.evaluate.fitting.angular import projected_directions
from sketchauth.evaluate.trials import projected_trials
from sketchauth.features.angular import AngularPipeline
from sketchauth.sketches.angular import AngularRandomness, AngularSketch, Codeword, probe_matrix
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.polar import correlation, decode_batch, signs

__all__ = ["FLOOR_FMR", "NEVER", "AngularRow", "angular_decode_check", "angular_row"]

#: The score of a pair the row's pipeline accepts at no setting (the DET curve's last point; the
#: tuning view reads settings below ``1e9`` only).
NEVER = 1e12
#: The row's sweep of ``min_cos`` stops at the cosine this share of impostor pairs reach (five
#: times the widest FMR the table reads): below it the code's decoding alone would be measured.
FLOOR_FMR = 0.05


class AngularRow:
    """The row's enrolments (seeded real encoder), exact scores and the pipeline at a setting."""

    def __init__(self, pipeline: AngularPipeline, data: Any, protocol: Any, seed: int) -> None:
        sketch = pipeline.sketch
        if not isinstance(sketch, PolarAngularSketch):
            raise ParameterError("the FNMR-at-FMR row of the angular pipeline is measured for the polar code")
        self.pipeline, self.seed = pipeline, seed
        self.base = PolarAngularSketch(sketch.dimension, sketch.bits, sketch.list_size)
        trials = projected_trials(lambda x: x, data, protocol)
        self.owner = trials.owner
        self.templates, probes = projected_directions(pipeline.transform, pipeline.dims, trials)
        self.quantised, self.refused = probe_matrix(probes, sketch.dimension)
        cos = self.templates @ probes.T
        genuine = self.owner[None, :] == np.arange(cos.shape[0])[:, None]
        self.floor = max(1e-3, float(np.quantile(cos[~genuine], 1.0 - FLOOR_FMR))) if (~genuine).any() else 1e-3
        self.secrets = [self._secret(j, t) for j, t in enumerate(self.templates)]
        self.cosines = self._exact_cosines(cos)
        self.distinct = np.unique(self.cosines[np.isfinite(self.cosines)])

    def _secret(self, j: int, template: np.ndarray) -> Codeword:
        """Person ``j``'s codeword (seeded) bound to their template."""
        secret = self.base.random_codeword(np.random.default_rng([self.seed, j, 1])).view(Codeword)
        secret.template = template / np.linalg.norm(template)
        return secret

    def secret_of(self, j: int, pipeline: AngularPipeline, captures: np.ndarray) -> Codeword:
        """Person ``j``'s codeword bound to the template ``pipeline`` derives from the raw ``captures``."""
        fresh = pipeline.secret_from_samples(captures)
        secret = np.asarray(self.secrets[j]).copy().view(Codeword)
        secret.template = fresh.template
        return pipeline.sketch.check_secret(secret)

    def randomness(self, j: int) -> AngularRandomness:
        """Person ``j``'s encoder randomness (seeded: the check rebuilds the same rotation)."""
        return AngularSketch(self.base.dimension, 1).simulated_randomness(
            self.secrets[j], np.random.default_rng([self.seed, j])
        )

    def _exact_cosines(self, cos: np.ndarray) -> np.ndarray:
        """``ĉ`` of every pair the code decodes (module docstring), ``−∞`` for the others."""
        n = self.base.dimension
        out = np.full(cos.shape, -np.inf)
        norms = np.einsum("ij,ij->i", self.quantised, self.quantised)
        for j in range(cos.shape[0]):
            rows = np.flatnonzero((cos[j] >= self.floor - PREFILTER) & ~self.refused)
            if rows.size == 0:
                continue
            helper = self.base.encode_with(self.secrets[j], self.randomness(j))
            y = self.quantised[rows] @ self.base.matrix(helper).T
            coded = decode_batch(y, self.base.code, self.base.list_size)
            same = np.all(signs(coded) == np.asarray(self.secrets[j], dtype=np.int8)[None, :], axis=1)
            total = correlation(coded, y)
            exact = total / np.sqrt(n * float(1 << 28) * norms[rows])
            keep = same & (total > 0) & (exact >= self.floor)
            out[j, rows[keep]] = exact[keep]
        return out

    def scores(self) -> tuple[np.ndarray, np.ndarray]:
        """(genuine, impostor) scores ``−ĉ`` (:data:`NEVER`: accepted at no setting) in :func:`pair_scores` order."""
        score = np.where(np.isfinite(self.cosines), -self.cosines, NEVER)
        genuine = self.owner[None, :] == np.arange(score.shape[0])[:, None]
        return score[self.owner, np.arange(self.owner.size)], score[~genuine]

    def min_cos(self, setting: float) -> float:
        """A ``τ`` accepting exactly the pairs with score ``≤ setting``: strictly between ``−setting``
        and the next lower ``ĉ`` (the midpoint)."""
        top = -float(setting)
        below = self.distinct[self.distinct < top]
        low = float(below[-1]) if below.size else max(0.0, self.floor - PREFILTER) / 2.0
        return min(1.0, (top + low) / 2.0) if math.isfinite(top) else 1.0

    def build(self, setting: float) -> AngularPipeline:
        """The pipeline at a setting of the row (its code, ``min_cos`` from :meth:`min_cos`); a setting at or
        above ``floor``'s score (:data:`NEVER` included) has no pipeline that accepts exactly its trials."""
        if not -float(setting) >= self.floor:
            raise ParameterError(
                f"the angular row's settings are cosines from {self.floor:.3f} up: no pipeline at score {setting:g}"
            )
        p = self.pipeline
        return AngularPipeline(
            p.transform, p.dims, min_cos=self.min_cos(setting), bits=self.base.bits, list_size=self.base.list_size
        )


def angular_row(pipeline: AngularPipeline, data: Any, protocol: Any, *, seed: int = 0) -> AngularRow:
    """The enrolled row of ``pipeline`` on ``data`` (people outside the background) under ``protocol``."""
    return AngularRow(pipeline, data, protocol, seed)


def angular_decode_check(
    row: AngularRow, setting: float, raw: tuple[list[np.ndarray], np.ndarray], *, count: int, seed: int
) -> dict[str, Any]:
    """Re-decide ``count`` trials (a third at the boundary) at ``setting`` by real encode → decode.

    Each sampled person is enrolled by the pipeline built at ``setting`` from the raw enrolment
    captures (``secret_from_samples``) with the row's seeded randomness, and each sampled probe is
    decoded from its raw capture (``sample_transform``): the row's rule must agree on every one.
    """
    genuine, impostor = row.scores()
    accepted_matrix = np.where(np.isfinite(row.cosines), -row.cosines, NEVER) <= setting
    pipeline = row.build(setting)
    sketch = pipeline.sketch
    mask = row.owner[None, :] == np.arange(row.cosines.shape[0])[:, None]
    e_gen, e_imp = row.owner, np.nonzero(~mask)[0]
    p_gen, p_imp = np.arange(row.owner.size), np.nonzero(~mask)[1]
    templates, probes = np.concatenate([e_gen, e_imp]), np.concatenate([p_gen, p_imp])
    scores = np.concatenate([genuine, impostor])
    accepted = accepted_matrix[templates, probes]
    finite = np.unique(scores[np.isfinite(scores)])
    near = np.concatenate([finite[finite > setting][:1], finite[finite <= setting][-1:]])
    chosen = crosscheck_sample(
        accepted, count=count, rng=np.random.default_rng([seed, 0xA96]), boundary=np.isin(scores, near)
    )
    enrol_raw, probes_raw = raw
    helpers: dict[int, tuple[bytes, bytes]] = {}
    found = Disagreements()
    for k in chosen.tolist():
        j, q = int(templates[k]), int(probes[k])
        if j not in helpers:
            secret = row.secret_of(j, pipeline, enrol_raw[j])
            helpers[j] = (sketch.encode_with(secret, row.randomness(j)), sketch.secret_bytes(secret))
        real = real_decode_recovers(sketch, *helpers[j], pipeline.sample_transform(probes_raw[q]))
        found.record(real, bool(accepted[k]), template=j, probe=q, score=float(scores[k]))
    return {
        "setting": float(setting),
        "min_cos": float(sketch.min_cos),
        "checked": int(chosen.size),
        "total_trials": int(scores.size),
        "boundary_trials": int(np.isin(scores[chosen], near).sum()),
        "disagreements": found.count,
        "examples": found.examples,
        "enrolment": "real encode_with under the row's seeded rotation, one helper per person",
    }
