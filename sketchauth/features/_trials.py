"""Genuine and impostor comparisons on labelled data, vectorised and chunked (internal).

The protocol is :class:`sketchauth.evaluate.protocol.Protocol`, the same as the evaluation
report's: every identity is enrolled from its first ``enrol_samples`` samples (in data order, or
its enrolment rows when the data has a ``split`` column); its probes are its genuine probes and
every other identity's probes are its zero-effort impostor probes. A *scorer* turns prepared template
features and prepared probe features into a score per pair (lower means more similar) by
broadcasting over leading axes, so the same function scores the ``P`` genuine pairs and the
``J × P`` impostor pairs (in chunks of templates, to bound memory).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.protocol import Protocol
from sketchauth.sketches.params import check_int

__all__ = ["Trials", "enrolment_trials", "pair_scores"]

#: Largest number of template × probe × feature cells materialised at once.
_CHUNK_CELLS = 4_000_000

Scorer = Callable[[Any, Any], np.ndarray]


@dataclass(frozen=True, slots=True)
class Trials:
    """Projected enrolment samples (``J × m × k``), probes (``P × k``) and each probe's owner."""

    enrolment: np.ndarray
    probes: np.ndarray
    owner: np.ndarray

    @property
    def templates(self) -> np.ndarray:
        """The enrolment means (``J × k``): the unprotected reference's and the pipelines' template."""
        return self.enrolment.mean(axis=1)

    @property
    def identities(self) -> int:
        return int(self.enrolment.shape[0])

    @property
    def impostor_trials(self) -> int:
        return int(self.identities * self.probes.shape[0] - self.probes.shape[0])


def enrolment_trials(
    project: Callable[[np.ndarray], np.ndarray], data: LabelledVectors, enrol_samples: int | Protocol
) -> Trials:
    """Split ``data`` into enrolments and probes by the protocol (see the module docstring) after ``project``."""
    protocol = (
        enrol_samples if isinstance(enrol_samples, Protocol) else Protocol(check_int("enrol_samples", enrol_samples))
    )
    plan = protocol.plan(data.identities, data.split)
    y = project(np.asarray(data.samples))
    enrolment = np.stack([y[rows] for rows in plan.enrol_rows])
    return Trials(enrolment, y[plan.probe_index], plan.probe_owner)


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
