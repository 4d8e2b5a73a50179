"""The report's numbers on fixed seeds stay what they were: speed work on the decision path (tiles,
enrolment, bootstrap, helper parsing) must not move a single count, interval or score.

``vectors/report_numbers.json`` was written by this file's ``__main__`` (``python
tests/evaluate/test_report_numbers.py``) from the code before that work; the test recomputes the
same reports and compares every value (floats exactly: the same arithmetic must give the same bits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from sketchauth.evaluate.data import VectorModel, synthetic_sets, synthetic_vectors
from sketchauth.evaluate.report import EvaluationTarget, run_report

VECTORS = Path(__file__).parent / "vectors" / "report_numbers.json"
#: Keys whose values are not numbers of the evaluation (where files went).
VOLATILE = {"figures", "score_files"}
#: Renewal scenarios that draw fresh peppers and PINs from ``secrets`` (random by design, run to run).
FRESH_RANDOMNESS = ("pepper_rotation", "pin_change")

CASES: dict[str, dict[str, Any]] = {
    "interval": {"scheme": "interval", "params": {"n": 256, "features": 12}, "settings": [2, 3, 5, 8, 12]},
    "interval-quantised": {
        "scheme": "interval",
        "params": {"n": 64, "features": 12, "step": 4.0, "offset": 2.0},
        "settings": [1, 2, 3],
    },
    "pinsketch": {"scheme": "pinsketch", "params": {"m": 10}, "settings": [4, 8]},
}


def _data(case: str) -> Any:
    if case == "pinsketch":
        return synthetic_sets(40, 4, low=1, high=1 << 10, set_size=12, seed=5)
    return synthetic_vectors(60, 4, 12, seed=3, model=VectorModel(noise=1.5))


def report_numbers(case: str) -> dict[str, Any]:
    spec = CASES[case]
    target = EvaluationTarget.from_scheme(spec["scheme"], spec["params"])
    report = run_report(target, _data(case), spec["settings"], seed=7, profile=None, crosscheck_trials=3)
    out = {k: v for k, v in report.as_dict().items() if k not in VOLATILE}
    for section in (out.get("renewability"), out["iso_30136"].get("renewability")):
        for name in FRESH_RANDOMNESS:
            if isinstance(section, dict) and isinstance(section.get("scenarios"), dict):
                section["scenarios"].pop(name, None)
    return out


@pytest.mark.parametrize("case", sorted(CASES))
def test_report_numbers_unchanged(case: str) -> None:
    expected = json.loads(VECTORS.read_text(encoding="utf-8"))[case]
    assert json.loads(json.dumps(report_numbers(case))) == expected


if __name__ == "__main__":
    VECTORS.write_text(
        json.dumps({case: report_numbers(case) for case in sorted(CASES)}, indent=1, sort_keys=True) + "\n",
        encoding="utf-8",
    )
