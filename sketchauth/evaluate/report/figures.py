"""Figures of a report (matplotlib, extra ``plots``): DET, ROC and EPC curves, score and linkage histograms.

matplotlib is imported only when a figure is drawn (:func:`_pyplot`): it is an optional
dependency, and :func:`plots_available` / :func:`require_plots` say so before a long evaluation.
:mod:`sketchauth.evaluate.pipelines.evaluation` draws its DET plot with the same axes
(:func:`det_axes`, :func:`det_floor`, :func:`draw_nist_targets`, :func:`probit`).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.error_rates import TARGET_FMR
from sketchauth.evaluate.report.run import TARGET_FNMR, Report

__all__ = [
    "OTHER_PERSON_COLOUR",
    "SAME_PERSON_COLOUR",
    "det_axes",
    "det_figure",
    "det_floor",
    "draw_figures",
    "draw_nist_targets",
    "epc_figure",
    "linkage_figure",
    "plots_available",
    "probit",
    "require_plots",
    "roc_figure",
]


def plots_available() -> bool:
    """Whether matplotlib (extra ``plots``) can be imported."""
    return importlib.util.find_spec("matplotlib") is not None


def require_plots() -> None:
    """``ParameterError`` naming the extra to install unless :func:`plots_available`."""
    if not plots_available():
        raise ParameterError("PNG plots need matplotlib: pip install 'sketchauth[plots]' (or pass --no-plots)")


def probit(x: Any, floor: float) -> np.ndarray:
    """Normal deviate ``Φ⁻¹(x)`` with rates clipped to ``[floor, 1 − floor]`` (DET axes)."""
    dist = NormalDist()
    arr = np.clip(np.asarray(x, dtype=float), floor, 1.0 - floor)
    return np.array([dist.inv_cdf(float(v)) for v in arr.ravel()]).reshape(arr.shape)


_DET_TICKS = (1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5, 0.8, 0.95)
#: At most this many points of a baseline DET curve are drawn (the curve is thinned, not binned).
_DET_POINTS = 2000


def _pyplot() -> Any:
    import matplotlib  # optional dependency (the 'plots' extra)

    matplotlib.use("Agg")  # files only, never a window
    import matplotlib.pyplot as plt  # optional dependency

    return plt


#: Colours of every figure: same person (genuine trials, mated pairs) and different people
#: (impostor trials, non-mated pairs) — the score histograms and the linkage plot agree.
SAME_PERSON_COLOUR = "#1b7837"
OTHER_PERSON_COLOUR = "#c51b7d"


def det_floor(*trials: int) -> float:
    """Where DET plots draw a rate of 0 (or 1): half a count from the edge of the largest trial set."""
    return 0.5 / max(*trials, 2)


def draw_nist_targets(ax: Any, floor: float) -> None:
    """The NIST SP 800-63B-4 targets as labelled lines (FMR ≤ 1/10,000; FNMR < 5%)."""
    x, y = probit([TARGET_FMR], floor)[0], probit([TARGET_FNMR], floor)[0]
    ax.axvline(x, color="grey", ls=":", lw=1)
    ax.axhline(y, color="grey", ls=":", lw=1)
    ax.annotate(
        "NIST FMR ≤ 0.01%",
        (x, 1.0),
        xycoords=("data", "axes fraction"),
        xytext=(3, -12),
        textcoords="offset points",
        fontsize=7,
        color="dimgrey",
    )
    ax.annotate(
        "NIST FNMR < 5%",
        (1.0, y),
        xycoords=("axes fraction", "data"),
        xytext=(-4, 3),
        textcoords="offset points",
        fontsize=7,
        color="dimgrey",
        ha="right",
    )


def det_axes(ax: Any, floor: float) -> None:
    """Normal-deviate axes labelled in percent; rates of 0 (1) sit at ``floor`` (``1 − floor``), labelled 0 and 100%."""
    _det_axes(ax, floor)
    edge, top = probit([floor, 1 - floor], floor)
    for axis in (ax.xaxis, ax.yaxis):
        positions = [edge, *axis.get_ticklocs(), top]
        labels = ["0", *[t.get_text() for t in axis.get_ticklabels()], "100%"]
        axis.set_ticks(positions, labels)
    ax.set_xlim(edge - 0.25, top + 0.25)
    ax.set_ylim(edge - 0.25, top + 0.25)
    ax.axvline(edge, color="lightgrey", lw=0.8, zorder=0)
    ax.axhline(edge, color="lightgrey", lw=0.8, zorder=0)
    ax.axvline(top, color="lightgrey", lw=0.8, zorder=0)
    ax.axhline(top, color="lightgrey", lw=0.8, zorder=0)


def _det_axes(ax: Any, floor: float) -> None:
    ticks: list[float] = []
    for t in _DET_TICKS:
        # Keep ticks at least 0.55 normal deviates apart so their labels do not overlap.
        if floor <= t <= 1 - floor and (not ticks or probit([t], floor)[0] - probit([ticks[-1]], floor)[0] >= 0.55):
            ticks.append(t)
    positions = probit(ticks, floor)
    labels = [f"{100 * t:g}%" for t in ticks]
    ax.set_xticks(positions, labels, rotation=30)
    ax.set_yticks(positions, labels)
    ax.set_xlabel("FMR (false match rate, normal-deviate scale)")
    ax.set_ylabel("FNMR (false non-match rate, normal-deviate scale)")
    ax.grid(True, alpha=0.3)


def _save(fig: Any, path: Path) -> None:
    """Write ``fig`` as a PNG at the reports' resolution and free it."""
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)


def det_figure(report: Report) -> Any:
    """The DET figure of a report (matplotlib ``Figure``; :func:`draw_figures` saves it)."""
    plt = _pyplot()
    er = report.error_rates
    first = er.points[0]
    # Rates of 0 or 1 have no normal deviate; draw them at half a count from the edge.
    floor = det_floor(first.impostor_trials, first.genuine_trials)
    fig, ax = plt.subplots(figsize=(6.4, 5.6))
    for b in er.baselines:
        keep = np.unique(np.linspace(0, b.fmr.size - 1, min(b.fmr.size, _DET_POINTS)).astype(int))
        ax.plot(probit(b.fmr[keep], floor), probit(b.fnmr[keep], floor), label=f"unprotected ({b.metric})", lw=1.2)
    fmr = np.array([p.fmr for p in er.points])
    fnmr = np.array([p.fnmr for p in er.points])
    x, y = probit(fmr, floor), probit(fnmr, floor)
    xerr = np.abs(probit(np.array([p.fmr_ci for p in er.points]).T, floor) - x)
    yerr = np.abs(probit(np.array([p.fnmr_ci for p in er.points]).T, floor) - y)
    ax.errorbar(
        x, y, xerr=xerr, yerr=yerr, fmt="o", color="black", ms=4, capsize=2, label=f"protected ({er.scheme}), 95% CI"
    )
    for p, xi, yi in zip(er.points, x, y, strict=False):
        ax.annotate(f"{er.parameter}={p.setting}", (xi, yi), textcoords="offset points", xytext=(4, 4), fontsize=7)
    draw_nist_targets(ax, floor)
    det_axes(ax, floor)
    ax.set_title("DET: protected operating points vs unprotected matching")
    ax.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def roc_figure(report: Report) -> Any:
    """The ROC of a report: ``1 − FNMR`` against FMR (log axis) for the unprotected baselines, with
    the protected operating points of the sweep (matplotlib ``Figure``)."""
    plt = _pyplot()
    er = report.error_rates
    floor = det_floor(er.points[0].impostor_trials, er.points[0].genuine_trials)
    fig, ax = plt.subplots(figsize=(6.4, 5.0))
    for c in report.curves:
        fmr = np.maximum(np.asarray(c["roc"]["fmr"], dtype=float), floor)
        ax.plot(fmr, c["roc"]["tpr"], lw=1.2, label=f"unprotected ({c['metric']})")
    fmr = np.maximum(np.array([p.fmr for p in er.points]), floor)
    ax.plot(fmr, [1.0 - p.fnmr for p in er.points], "o", color="black", ms=4, label=f"protected ({er.scheme})")
    for p, x in zip(er.points, fmr, strict=True):
        ax.annotate(
            f"{er.parameter}={p.setting}", (x, 1.0 - p.fnmr), textcoords="offset points", xytext=(4, -10), fontsize=7
        )
    ax.axvline(TARGET_FMR, color="grey", ls=":", lw=1)
    ax.set_xscale("log")
    ax.set_xlim(floor / 2, 1.0)
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel(f"FMR (0 drawn at {floor:.1e})")
    ax.set_ylabel("1 − FNMR (genuine trials accepted)")
    ax.set_title("ROC: protected operating points vs unprotected matching")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig


def epc_figure(report: Report) -> Any:
    """The EPC of each unprotected baseline: HTER on the evaluation half against the weight α the
    development half's threshold was chosen with (matplotlib ``Figure``)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for c in report.curves:
        if c["epc"] is not None:
            ax.plot(c["epc"]["alpha"], np.asarray(c["epc"]["hter"]) * 100, marker=".", label=c["metric"])
    ax.set_xlabel("α (development threshold minimises α·FMR + (1 − α)·FNMR)")
    ax.set_ylabel("HTER on the evaluation half (%)")
    ax.set_title("EPC of unprotected matching (identities split in seeded halves)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _draw_scores(report: Report, path: Path) -> None:
    plt = _pyplot()
    baselines = report.error_rates.baselines
    fig, axes = plt.subplots(1, max(1, len(baselines)), figsize=(5.5 * max(1, len(baselines)), 4.0), squeeze=False)
    for ax, b in zip(axes[0], baselines, strict=False):
        # From the run's score histograms (exact counts, or a fine grid): no per-trial scores needed.
        both = np.concatenate([b.genuine.values, b.impostor.values])
        edges = np.histogram_bin_edges(both, bins=60)
        for h, colour, name in (
            (b.impostor, OTHER_PERSON_COLOUR, "impostor"),
            (b.genuine, SAME_PERSON_COLOUR, "genuine"),
        ):
            ax.hist(
                h.values,
                bins=edges,
                weights=h.counts,
                density=True,
                alpha=0.6,
                color=colour,
                label=f"{name} ({h.total})",
            )
        ax.set_xlabel(f"{b.metric} distance to the enrolled template")
        ax.set_ylabel("density")
        ax.set_title(f"unprotected scores ({b.metric}), EER {100 * b.eer:.3g}%")
        ax.legend(fontsize=8)
    if not baselines:
        axes[0][0].text(0.5, 0.5, "no unprotected baseline for this target", ha="center")
    fig.tight_layout()
    _save(fig, path)


def linkage_figure(report: Report) -> Any:
    """The linkage histograms and local D↔ of a report (matplotlib ``Figure``)."""
    plt = _pyplot()
    ul = report.unlinkability
    assert ul is not None
    m = ul.measures
    centres = (m.edges[:-1] + m.edges[1:]) / 2
    width = float(np.diff(m.edges).min())
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.bar(
        centres,
        m.p_nonmated,
        width=width,
        alpha=0.55,
        color=OTHER_PERSON_COLOUR,
        label=f"non-mated ({m.nonmated_pairs})",
    )
    ax.bar(centres, m.p_mated, width=width, alpha=0.55, color=SAME_PERSON_COLOUR, label=f"mated ({m.mated_pairs})")
    ax.set_xlabel(f"linkage score: {ul.attack} ({'higher' if ul.higher_is_mated else 'lower'} = more likely mated)")
    ax.set_ylabel("share of pairs per bin")
    twin = ax.twinx()
    # D↔(s) only means something where mated pairs fall; elsewhere it is 0 by definition.
    seen = m.p_mated > 0
    twin.plot(centres[seen], m.d_local[seen], "k.", ms=5, label="local D<->(s) (bins with mated pairs)")
    twin.set_ylim(-0.02, 1.02)
    twin.set_ylabel("local linkability D<->(s)")
    ax.set_title(f"{ul.scheme}: D<->sys = {m.d_sys:.3f}")
    lines = ax.get_legend_handles_labels()
    tl = twin.get_legend_handles_labels()
    # Below the axes: inside, the legend covered the D↔ points it explains.
    ax.legend(lines[0] + tl[0], lines[1] + tl[1], fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    fig.tight_layout()
    return fig


def draw_figures(report: Report, out: Path) -> list[str]:
    """Draw the DET, ROC and EPC curves, the score histograms and the linkage histograms; return file names."""
    names = ["det.png", "scores.png"]
    _save(det_figure(report), out / "det.png")
    if report.curves:
        _save(roc_figure(report), out / "roc.png")
        names.append("roc.png")
    if any(c["epc"] is not None for c in report.curves):
        _save(epc_figure(report), out / "epc.png")
        names.append("epc.png")
    _draw_scores(report, out / "scores.png")
    if report.unlinkability is not None:
        _save(linkage_figure(report), out / "linkage.png")
        names.append("linkage.png")
    return names
