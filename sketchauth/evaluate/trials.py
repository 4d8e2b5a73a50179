"""The comparisons of an evaluation: who is enrolled from which rows, and which pairs are compared.

One source of truth: :meth:`sketchauth.evaluate.protocol.Protocol.plan` arranges the rows of a data
set into a :class:`~sketchauth.evaluate.protocol.TrialPlan` (enrolment rows per identity, genuine
and impostor pairs). Both evaluations consume that one plan:

* the protected evaluation (:mod:`.error_rates`) enrols every identity through the real encoder
  (:func:`enrol_population`) and compares the pairs ``(enrolled identity, probe row)``;
* the feature evaluation (:mod:`sketchauth.evaluate.pipelines.evaluation`) projects the rows through a
  feature transform first (:func:`projected_trials`) and scores every template against every
  probe by broadcasting (:func:`pair_scores`; lower means more similar), so the same scorer serves
  the ``P`` genuine pairs and the ``J × P`` impostor pairs (in chunks of templates, to bound memory).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sketchauth.errors import SampleError
from sketchauth.evaluate.data import LabelledSets, LabelledVectors
from sketchauth.evaluate.protocol import Protocol, TrialPlan
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.params import check_int

__all__ = [
    "Data",
    "EnrolFn",
    "Enrolled",
    "ProjectedTrials",
    "enrol_population",
    "pair_scores",
    "plan_trials",
    "projected_trials",
    "samples_of",
]

Data = LabelledVectors | LabelledSets
#: ``enrol_fn(sketch, samples, setting) -> secret``: an identity's enrolment samples to its secret.
EnrolFn = Callable[[SecureSketch[Any, Any], Any, Any], Any]
#: ``score(template_features, probe_features) -> scores`` (broadcasting over leading axes).
Scorer = Callable[[Any, Any], np.ndarray]

#: Largest number of template × probe × feature cells materialised at once by :func:`pair_scores`.
_CHUNK_CELLS = 4_000_000


def _protocol(enrol_samples: int | Protocol) -> Protocol:
    if isinstance(enrol_samples, Protocol):
        return enrol_samples
    return Protocol(enrol_samples=check_int("enrol_samples", enrol_samples))


def plan_trials(
    data: Data,
    *,
    enrol_samples: int = 1,
    max_impostors_per_identity: int | None = None,
    seed: int = 0,
    protocol: Protocol | None = None,
) -> TrialPlan:
    """The comparison plan of :class:`~sketchauth.evaluate.protocol.Protocol` (seeded impostor subsampling).

    ``protocol`` defaults to ``Protocol(enrol_samples)``; a ``split`` column of the data assigns roles.
    """
    return _protocol(protocol or enrol_samples).plan(
        data.identities, getattr(data, "split", None), max_impostors_per_identity=max_impostors_per_identity, seed=seed
    )


def samples_of(data: Data) -> np.ndarray | Sequence[Any]:
    """The raw samples of ``data``: the vector matrix, or the list of sets."""
    return data.samples if isinstance(data, LabelledVectors) else data.sets


# -- the protected evaluation: enrolment through the real encoder --------------------------------------
@dataclass(frozen=True)
class Enrolled:
    """The enrolled population under one setting: helper data and canonical secret bytes.

    ``secrets`` are kept only inside the evaluation (this is simulation on a researcher's own
    data), never written to a report.
    """

    helpers: tuple[bytes, ...]
    canonical: tuple[bytes, ...]
    secrets: tuple[Any, ...]


def _range_hint(sketch: SecureSketch[Any, Any]) -> str:
    if getattr(sketch, "quantiser", None) is None:
        return ""
    return (
        " — give n, step and offset that cover the data, or a step without n and offset to fit "
        "them to the enrolment samples (fit_quantiser_params)"
    )


def enrol_population(
    sketch: SecureSketch[Any, Any],
    enrol_fn: EnrolFn,
    data: Data,
    trials: TrialPlan,
    setting: Any = None,
    *,
    secrets_from: Enrolled | None = None,
) -> Enrolled:
    """Run ``enrol_fn`` and the real encoder for every identity of the plan.

    ``secrets_from``: the population enrolled at another setting whose secrets are taken as they
    are instead of calling ``enrol_fn`` again (only right when the secret does not depend on the
    setting: :attr:`~sketchauth.evaluate.report.run.EvaluationTarget.enrol_once`); each is still
    checked and encoded by this ``sketch``.
    """
    samples = samples_of(data)
    helpers, canonical, secrets = [], [], []
    for i, rows in enumerate(trials.enrol_rows):
        try:
            if secrets_from is None:
                chosen = samples[rows] if isinstance(samples, np.ndarray) else [samples[r] for r in rows]
                made = enrol_fn(sketch, chosen, setting)
            else:
                made = secrets_from.secrets[i]
            # check_secret normalises once (the interval family returns Levels, which encode
            # takes as they are: normalising twice is harmless).
            secret = sketch.check_secret(made)
            helpers.append(sketch.encode(secret))
        except SampleError as exc:
            raise SampleError(f"cannot enrol identity {trials.labels[i]!s}: {exc}{_range_hint(sketch)}") from None
        canonical.append(sketch.secret_bytes(secret))
        secrets.append(secret)
    return Enrolled(tuple(helpers), tuple(canonical), tuple(secrets))


# -- the feature evaluation: the plan's rows through a feature transform -------------------------------
@dataclass(frozen=True, slots=True)
class ProjectedTrials:
    """A :class:`~sketchauth.evaluate.protocol.TrialPlan`'s rows after a feature projection.

    Enrolment samples (``J × m × k``), probes (``P × k``, identity by identity) and each probe's
    owner (index into the enrolled identities).
    """

    enrolment: np.ndarray
    probes: np.ndarray
    owner: np.ndarray

    @property
    def templates(self) -> np.ndarray:
        """The enrolment means (``J × k``): the unprotected reference's and the pipelines' template."""
        return cast("np.ndarray", self.enrolment.mean(axis=1))

    @property
    def identities(self) -> int:
        return int(self.enrolment.shape[0])

    @property
    def impostor_trials(self) -> int:
        return int(self.identities * self.probes.shape[0] - self.probes.shape[0])


def projected_trials(
    project: Callable[[np.ndarray], np.ndarray], data: LabelledVectors, enrol_samples: int | Protocol
) -> ProjectedTrials:
    """The protocol's enrolments and probes of ``data`` (all impostors) after ``project``."""
    plan = _protocol(enrol_samples).plan(data.identities, data.split)
    y = project(np.asarray(data.samples))
    enrolment = np.stack([y[rows] for rows in plan.enrol_rows])
    return ProjectedTrials(enrolment, y[plan.probe_index], plan.probe_owner)


def pair_scores(
    template_features: np.ndarray, probe_features: np.ndarray, owner: np.ndarray, score: Scorer
) -> tuple[np.ndarray, np.ndarray]:
    """(genuine scores ``P``, impostor scores ``J·P − P``) of every template against every probe."""
    genuine = score(template_features[owner], probe_features)
    per_template = max(1, int(np.prod(probe_features.shape)))
    chunk = max(1, _CHUNK_CELLS // per_template)
    impostor = []
    for start in range(0, template_features.shape[0], chunk):
        rows = np.arange(start, min(start + chunk, template_features.shape[0]))
        block = score(template_features[rows][:, None], probe_features[None])
        impostor.append(block[owner[None, :] != rows[:, None]])
    return genuine, np.concatenate(impostor)
