"""Writing a report: ``report.json`` (stable keys), ``report.md``, score files and the PNG figures.

:func:`write_report` writes ``report.json`` (stable keys, see
:data:`~sketchauth.evaluate.report.run.REPORT_VERSION`), ``report.md``
(:func:`~sketchauth.evaluate.report.render.markdown`), the unprotected baselines' score files
and, with matplotlib (extra ``plots``), ``det.png``, ``scores.png`` and ``linkage.png``
(:mod:`sketchauth.evaluate.report.figures`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sketchauth.errors import ParameterError
from sketchauth.evaluate.rates import write_score_files
from sketchauth.evaluate.report import figures
from sketchauth.evaluate.report.render import markdown
from sketchauth.evaluate.report.run import Report

__all__ = ["write_report", "write_scores"]


def write_report(report: Report, out: str | Path, *, plots: bool = True) -> dict[str, Any]:
    """Write ``report.json``, ``report.md`` and (``plots``) the PNG figures into ``out``."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"cannot create {out}: {exc.strerror}") from None
    if plots:
        figures.require_plots()
        report.figures = figures.draw_figures(report, out)
    report.score_files = write_scores(report, out / "scores")
    payload = report.as_dict()
    (out / "report.json").write_text(json.dumps(payload, indent=2, sort_keys=True, allow_nan=False) + "\n")
    (out / "report.md").write_text(markdown(payload))
    return payload


def write_scores(report: Report, directory: Path) -> list[str]:
    """Each unprotected baseline's scores as bob.measure 4/5-column and pyeer files (see
    :func:`sketchauth.evaluate.rates.write_score_files`), so the rates can be re-checked there."""
    er = report.error_rates
    if not er.baselines or er.trial_labels is None or any(b.scores is None for b in er.baselines):
        return []  # above SCORE_FILE_LIMIT comparisons only the histograms exist (see the report's notes)
    claimed, real, rows = er.trial_labels
    labels = [(c, r, f"sample{q}") for c, r, q in zip(claimed.tolist(), real.tolist(), rows.tolist(), strict=False)]
    n_gen = er.points[0].genuine_trials
    names: list[str] = []
    for b in er.baselines:
        assert b.scores is not None
        written = write_score_files(
            directory,
            f"unprotected_{b.metric}",
            *b.scores,
            genuine_labels=labels[:n_gen],
            impostor_labels=labels[n_gen:],
        )
        names += [f"scores/{n}" for n in written]
    return names
