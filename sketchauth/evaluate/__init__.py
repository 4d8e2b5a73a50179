"""Offline evaluation: data sets, error rates, leakage, linkage and attack simulations.

The evaluation measures the core (:mod:`sketchauth.sketches`, :mod:`sketchauth.features`…) and
imports nothing above it. The names below are its entry points (imported on first use, so
``import sketchauth.evaluate`` stays cheap); each module documents the rest of its own API.

* data: :class:`LabelledVectors`, :class:`LabelledSets`, :func:`load_vectors`, :func:`load_sets`;
* error rates through the real schemes: :func:`evaluate_scheme`, :func:`evaluate_adapter`;
* the report: :class:`EvaluationTarget`, :func:`run_report`;
* attacks: :func:`evaluate_unlinkability` (:class:`UnlinkabilityOptions`),
  :func:`linkage_experiment` (:class:`LinkageSetup`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sketchauth.evaluate.data import LabelledSets, LabelledVectors, load_sets, load_vectors
    from sketchauth.evaluate.error_rates import evaluate_adapter, evaluate_scheme
    from sketchauth.evaluate.linkage import LinkageSetup, linkage_experiment
    from sketchauth.evaluate.report.run import EvaluationTarget, run_report
    from sketchauth.evaluate.unlinkability import UnlinkabilityOptions, evaluate_unlinkability

__all__ = [
    "EvaluationTarget",
    "LabelledSets",
    "LabelledVectors",
    "LinkageSetup",
    "UnlinkabilityOptions",
    "evaluate_adapter",
    "evaluate_scheme",
    "evaluate_unlinkability",
    "linkage_experiment",
    "load_sets",
    "load_vectors",
    "run_report",
]

_WHERE = {
    **dict.fromkeys(("LabelledSets", "LabelledVectors", "load_sets", "load_vectors"), "data"),
    **dict.fromkeys(("evaluate_adapter", "evaluate_scheme"), "error_rates"),
    **dict.fromkeys(("LinkageSetup", "linkage_experiment"), "linkage"),
    **dict.fromkeys(("EvaluationTarget", "run_report"), "report.run"),
    **dict.fromkeys(("UnlinkabilityOptions", "evaluate_unlinkability"), "unlinkability"),
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
