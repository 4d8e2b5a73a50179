"""``EvaluationTarget.enrol_once``: one enrolment per identity for a sweep that only moves the
sketch, with every count, interval and check exactly as when each setting enrols again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sketchauth.evaluate.data import VectorModel, synthetic_vectors
from sketchauth.evaluate.report import EvaluationTarget
from sketchauth.evaluate.report.run import ReportOptions, _error_rates


def test_enrol_once_gives_the_same_rates_with_one_enrolment_per_identity() -> None:
    data = synthetic_vectors(40, 3, 10, seed=4, model=VectorModel(noise=1.5))
    target = EvaluationTarget.from_scheme("interval", {"n": 256, "features": 10})
    calls: list[Any] = []

    def counting(sketch: Any, samples: Any, setting: Any) -> Any:
        calls.append(setting)
        return target.enrol(sketch, samples, setting)

    settings = [2, 4, 7]
    opts = ReportOptions(seed=3, crosscheck_trials=2)
    every = _error_rates(replace(target, enrol=counting), data, settings, 1, opts)
    assert len(calls) == 40 * len(settings)
    calls.clear()
    once = _error_rates(replace(target, enrol=counting, enrol_once=True), data, settings, 1, opts)
    assert calls == [settings[0]] * 40
    assert once.to_dict() == every.to_dict()
