"""The comparison protocol: one definition of who enrols, what is probed and who is an impostor.

Every evaluation of the project — ``sketchauth evaluate report`` (:mod:`.error_rates`) and
``sketchauth features evaluate`` (:mod:`sketchauth.evaluate.pipelines.evaluation`) — plans its
comparisons with :meth:`Protocol.plan`, and every report states :meth:`Protocol.describe`, so the
two commands count the same trials on the same data (ISO/IEC 19795-1 vocabulary). The
:class:`TrialPlan` is the one trial type: :mod:`.trials` enrols it through the real encoder or
projects its rows through a feature transform (``ProjectedTrials``).

* **Enrolment** — each identity enrols from ``enrol_samples`` samples: its first ones in file order,
  or, with an explicit split (a ``split``/``session`` column read by
  :func:`sketchauth.evaluate.data.load_vectors`), its first ones among the rows marked for
  enrolment (``enrol``, ``enrolment``, ``gallery``, ``reference``, …). An identity with fewer is refused
  (the message names it).
* **Probes** — the other samples of the identity (row-order protocol), or the rows marked for probing
  (``probe``, ``verify``, ``query``, …) with an explicit split. Samples that neither enrol nor probe
  (extra enrolment rows beyond ``enrol_samples``) are not used.
* **Genuine trials** — each enrolled identity against each of its own probes.
* **Impostor trials** (zero effort) — each enrolled identity against every *probe* of every other
  identity. Probes only: with sessions, impostor attempts come from the same capture session as
  genuine ones, and the enrolment captures of other people are never presented as attempts.
* **Open or closed set** — ``open``: the people evaluated were not in the background population
  the feature transform (or quantiser) was fitted on; ``closed``: the transform has seen them,
  which makes the rates optimistic. The report says which.

Example::

    >>> import numpy as np
    >>> plan = Protocol(enrol_samples=1).plan(np.array(["a", "a", "b", "b", "b"]))
    >>> [len(r) for r in plan.enrol_rows], plan.genuine.shape[1], plan.impostor.shape[1]
    ([1, 1], 3, 3)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import rows_by_identity
from sketchauth.sketches.params import check_int

__all__ = ["ENROL_VALUES", "PROBE_VALUES", "SET_KINDS", "Protocol", "TrialPlan"]

#: Split-column values (case-insensitive) that mark a row as an enrolment sample.
ENROL_VALUES = frozenset({"enrol", "enroll", "enrolment", "enrollment", "gallery", "reference", "template"})
#: Split-column values (case-insensitive) that mark a row as a probe.
PROBE_VALUES = frozenset({"probe", "verify", "verification", "query", "attempt"})
SET_KINDS = ("open", "closed")


@dataclass(frozen=True)
class TrialPlan:
    """Rows of one data set arranged by a :class:`Protocol`.

    ``labels[i]`` enrols from ``enrol_rows[i]`` and owns ``probe_rows[i]``. The pairs are not
    stored: with every impostor (``drawn is None``) they are the whole cross product of enrolled
    identities × probe *positions* (the probes identity by identity, :attr:`probe_index`), a pair
    genuine iff the probe's owner is the enrolled identity — which :mod:`.blocks` walks in tiles,
    in memory bounded by the tile. With impostors subsampled, ``drawn`` holds the drawn
    ``(identity, probe row)`` pairs (``max_impostors_per_identity`` per identity, chosen by the caller).

    :attr:`genuine` and :attr:`impostor` materialise the ``(2, T)`` int arrays of (enrolled identity
    index, probe row) for small plans and for tests; an evaluation never needs them.
    """

    labels: tuple[Any, ...]
    enrol_rows: tuple[np.ndarray, ...]
    probe_rows: tuple[np.ndarray, ...]
    samples: int
    #: The subsampled impostor pairs ``(2, T)`` (enrolled identity, probe row), or ``None``: all of them.
    drawn: np.ndarray | None = None

    @cached_property
    def probe_owner(self) -> np.ndarray:
        """Identity index of every probe row, in the order of :attr:`probe_index`."""
        return np.repeat(np.arange(len(self.probe_rows), dtype=np.int64), [r.size for r in self.probe_rows])

    @cached_property
    def probe_index(self) -> np.ndarray:
        """All probe rows, identity by identity."""
        if not self.probe_rows:
            return np.zeros(0, dtype=np.int64)
        return np.concatenate(self.probe_rows).astype(np.int64)

    @property
    def genuine_count(self) -> int:
        """Genuine trials: every probe against its own identity."""
        return int(sum(r.size for r in self.probe_rows))

    @property
    def impostor_count(self) -> int:
        """Impostor trials (without materialising them)."""
        if self.drawn is not None:
            return int(self.drawn.shape[1])
        return len(self.labels) * self.genuine_count - self.genuine_count

    @cached_property
    def genuine(self) -> np.ndarray:
        """``(2, G)``: each identity against each of its probes (materialised)."""
        return np.vstack([self.probe_owner, self.probe_index])

    @cached_property
    def impostor(self) -> np.ndarray:
        """``(2, I)``: the impostor pairs identity by identity (materialised: small plans only)."""
        if self.drawn is not None:
            return self.drawn
        owner, rows = self.probe_owner, self.probe_index
        e = [np.full(int((owner != i).sum()), i) for i in range(len(self.labels))]
        q = [rows[owner != i] for i in range(len(self.labels))]
        return np.vstack([np.concatenate(e), np.concatenate(q)]).astype(np.int64)


@dataclass(frozen=True)
class Protocol:
    """Enrolment size, how rows are assigned (order or an explicit split) and open/closed set."""

    enrol_samples: int = 1
    set_kind: str = "open"
    #: Name of the column that assigned rows (``None``: row order). Recorded for the report only.
    split_column: str | None = None

    def __post_init__(self) -> None:
        check_int("enrol_samples", self.enrol_samples)
        if self.set_kind not in SET_KINDS:
            raise ParameterError(f"set_kind must be 'open' or 'closed', got {self.set_kind!r}")

    # -- assignment -------------------------------------------------------------------------------
    def roles(self, split: Any) -> tuple[np.ndarray, np.ndarray]:
        """(enrolment-row mask, probe-row mask) from a split column's values."""
        values = np.char.lower(np.char.strip(np.asarray(split).astype(str)))
        enrol = np.isin(values, list(ENROL_VALUES))
        probe = np.isin(values, list(PROBE_VALUES))
        unknown = sorted(set(values[~(enrol | probe)].tolist()))
        if unknown:
            raise ParameterError(
                f"split column {self.split_column or 'split'!r} has value(s) {', '.join(map(repr, unknown[:5]))} that "
                f"neither enrol ({', '.join(sorted(ENROL_VALUES))}) nor probe ({', '.join(sorted(PROBE_VALUES))}); "
                "rename them, or select the rows to evaluate first"
            )
        return enrol, probe

    def plan(
        self,
        identities: Any,
        split: Any = None,
        *,
        max_impostors_per_identity: int | None = None,
        seed: int = 0,
    ) -> TrialPlan:
        """Arrange rows (labels ``identities``, optional ``split`` values) into trials.

        ``max_impostors_per_identity`` draws that many impostor probes per enrolled identity with
        a seeded generator (an evaluation shortcut, stated in the report), else all of them.
        """
        ids = np.asarray(identities)
        k = self.enrol_samples
        groups = rows_by_identity(ids)
        if len(groups) < 2:
            raise ParameterError("need at least two identities for impostor trials")
        if split is not None:
            enrol_mask, probe_mask = self.roles(split)
        labels, enrol_rows, probe_rows = [], [], []
        short = []
        for label, rows in groups:
            if split is None:
                mine, probes = rows[:k], rows[k:]
            else:
                mine, probes = rows[enrol_mask[rows]][:k], rows[probe_mask[rows]]
            if mine.size < k:
                short.append(str(label))
                continue
            labels.append(label)
            enrol_rows.append(mine)
            probe_rows.append(probes)
        if short:
            where = "enrolment rows" if split is not None else "samples"
            raise ParameterError(
                f"{len(short)} identit{'y has' if len(short) == 1 else 'ies have'} fewer than {k} {where} "
                f"(first: {short[0]}); lower enrol_samples or drop those identities"
            )
        if not any(r.size for r in probe_rows):
            raise ParameterError(f"no genuine trials: no identity has a probe beyond its {k} enrolment sample(s)")
        drawn = None if max_impostors_per_identity is None else self._draw(probe_rows, max_impostors_per_identity, seed)
        return TrialPlan(tuple(labels), tuple(enrol_rows), tuple(probe_rows), int(ids.size), drawn)

    @staticmethod
    def _draw(probe_rows: list[np.ndarray], max_impostors: int, seed: int) -> np.ndarray:
        """``max_impostors`` probes of the other identities per identity, drawn with a seeded generator."""
        rng = np.random.default_rng(seed)
        all_probes = np.concatenate(probe_rows).astype(np.int64)
        owner = np.repeat(np.arange(len(probe_rows)), [r.size for r in probe_rows])
        imp_e, imp_q = [], []
        for i in range(len(probe_rows)):
            others = all_probes[owner != i]
            if others.size > max_impostors:
                others = np.sort(rng.choice(others, size=max_impostors, replace=False))
            imp_e.append(np.full(others.size, i))
            imp_q.append(others)
        return np.vstack([np.concatenate(imp_e), np.concatenate(imp_q)]).astype(np.int64)

    # -- statement --------------------------------------------------------------------------------
    def describe(self, plan: TrialPlan | None = None) -> str:
        """One paragraph stating the protocol (and the counts of ``plan``)."""
        if self.split_column is None:
            who = (
                f"each identity enrols from its first {self.enrol_samples} sample(s) in file order; "
                "its other samples are its probes"
            )
        else:
            source = (
                self.split_column if self.split_column.startswith("files:") else f"the {self.split_column!r} column"
            )
            who = (
                f"roles come from {source}: each identity enrols from its first "
                f"{self.enrol_samples} enrolment row(s); its probe rows are its probes"
            )
        sets = (
            "open set: the evaluated people are not in the background population the transform was fitted on"
            if self.set_kind == "open"
            else "CLOSED SET: the transform was fitted on data of the evaluated people, so these rates are optimistic"
        )
        text = (
            f"Protocol — {who}; genuine trials: each identity against its own probes; impostor trials (zero effort): "
            f"each identity against every probe of every other identity; {sets}."
        )
        if plan is not None:
            text += (
                f" {len(plan.labels)} identities, {plan.genuine_count} genuine and "
                f"{plan.impostor_count} impostor trials."
            )
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "enrol_samples": self.enrol_samples,
            "set": self.set_kind,
            "assignment": (
                "row order"
                if self.split_column is None
                else self.split_column
                if self.split_column.startswith("files:")
                else f"column {self.split_column}"
            ),
            "impostors": "every probe of every other identity",
        }
