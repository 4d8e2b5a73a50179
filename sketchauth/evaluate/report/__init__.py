"""The evaluation report: error rates, leakage and unlinkability as JSON, Markdown and PNG (ISO/IEC 19795-1).

One module per job:

* :mod:`~sketchauth.evaluate.report.run` — running the evaluation: :class:`EvaluationTarget`,
  :func:`run_report` (error rates over a sweep, the operating point, leakage, unlinkability and the
  attack costs) and its result :class:`Report`; :func:`default_sweep` per scheme;
* :mod:`~sketchauth.evaluate.report.render` — the Markdown page and the terminal summary of a
  report dictionary;
* :mod:`~sketchauth.evaluate.report.figures` — the PNG figures (matplotlib, extra ``plots``);
* :mod:`~sketchauth.evaluate.report.files` — :func:`write_report`: ``report.json``, ``report.md``,
  score files and figures into a directory.

The command ``sketchauth evaluate report`` (:mod:`sketchauth.cli.evaluate`) parses its options and
calls these. The names below are the ones callers use; the rest live in their module.
"""

from __future__ import annotations

from sketchauth.evaluate.report.files import write_report
from sketchauth.evaluate.report.render import markdown
from sketchauth.evaluate.report.run import (
    REPORT_VERSION,
    TARGET_FMR,
    TARGET_FNMR,
    EvaluationTarget,
    Report,
    ReportOptions,
    choose_operating_point,
    default_sweep,
    run_report,
)

__all__ = [
    "REPORT_VERSION",
    "TARGET_FMR",
    "TARGET_FNMR",
    "EvaluationTarget",
    "Report",
    "ReportOptions",
    "choose_operating_point",
    "default_sweep",
    "markdown",
    "run_report",
    "write_report",
]
