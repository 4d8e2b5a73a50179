"""Writing the unlinkability report of :mod:`sketchauth.evaluate.unlinkability_report`: its summary rows,
Markdown page, ``D↔(s)`` figure and files.

All of them read the JSON-ready report :func:`~sketchauth.evaluate.unlinkability_report.run_unlinkability_report`
returns, so a stored ``unlinkability.json`` renders the same as a fresh run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

__all__ = ["plot_curves", "render_markdown", "summary_rows", "write_unlinkability_report"]

#: Rows k = 1..this of the repeated-enrolment table in the Markdown (the JSON has every k).
_MARKDOWN_K = 4


def summary_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per (pipeline, attack): ``D↔sys`` clear and peppered with their chance levels."""
    rows = []
    for kind, entry in report["pipelines"].items():
        for attack in entry.get("attacks", []):
            rows.append(
                {
                    "pipeline": kind,
                    "scheme": entry["scheme"],
                    "attack": attack["attack"],
                    "sealed_bytes_mean": entry["sealed_bytes_mean"],
                    "mated_pairs": attack["clear"]["mated_pairs"],
                    "nonmated_pairs": attack["clear"]["nonmated_pairs"],
                    "clear": attack["clear"]["d_sys"],
                    "clear_chance_p95": attack["clear"]["chance_d_sys_p95"],
                    "peppered": attack["peppered"]["d_sys"],
                    "peppered_chance_p95": attack["peppered"]["chance_d_sys_p95"],
                }
            )
    return rows


def render_markdown(report: dict[str, Any], figure: str | None = None) -> str:
    """The Markdown report: the D↔sys table, unavailable pipelines, repeated enrolments, the rule."""
    s, src = report["settings"], report["sources"]
    lines = [
        "# Unlinkability of re-enrolments (ISO/IEC 30136)",
        "",
        f"Background `{src['background']}` ({src['background_identities']} identities), evaluation "
        f"`{src['data']}` ({src['data_identities']} identities, {src['set']} set). Each identity: up to "
        f"{s['groups_per_identity']} disjoint enrolments of {s['enrol_samples']} captures; tau {s['tau']}, "
        f"seed {s['seed']}. Measure: {report['measure']}.",
        "",
        "D<->sys is 0 for unlinkable, 1 for fully linkable sketches; 'chance p95' is the 95th percentile "
        f"of D<->sys with the labels permuted ({s['permutations']} permutations): at or below it the "
        "scores are indistinguishable from unlinkable at this sample size. 'Peppered': the whole record "
        "sealed by each deployment's pepper, scored by the attack where the records parse as helpers, "
        "else by byte agreement; 'clear': the same records unsealed with the peppers (the control). "
        "'sealed bytes': mean length of a stored record.",
        "",
        "| pipeline | scheme | attack | sealed bytes | mated / non-mated | D<->sys clear | chance p95 "
        "| D<->sys peppered | chance p95 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in summary_rows(report):
        lines.append(
            f"| {r['pipeline']} | {r['scheme']} | {r['attack']} | {r['sealed_bytes_mean']:.1f} | "
            f"{r['mated_pairs']} / {r['nonmated_pairs']} | "
            f"{r['clear']:.3f} | {r['clear_chance_p95']:.3f} | {r['peppered']:.3f} | {r['peppered_chance_p95']:.3f} |"
        )
    unavailable = {k: v["unavailable"] for k, v in report["pipelines"].items() if "unavailable" in v}
    if unavailable:
        lines += ["", "Not evaluated:", ""] + [f"* {k}: {why}" for k, why in unavailable.items()]
    if report["repeated"]:
        lines += [
            "",
            "## Repeated enrolments in one database (s2 vs s3)",
            "",
            "The attacker holds k helpers of one person and keeps the intervals of the first that recur "
            "(similar, tau) in all others; target: the first enrolment's (b, v).",
            "",
            "| scheme | tau | k | mean log2 candidates | empty | contains target | pinned | recovered |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for kind, rep in report["repeated"].items():
            for tau, per_k in rep["per_tau"].items():
                for row in per_k[:_MARKDOWN_K]:
                    lines.append(
                        f"| {kind} | {tau} | {row['k']} | {row['mean_log2_candidates']:.2f} | "
                        f"{row['empty_fraction']:.3f} | {row['contains_fraction']:.3f} | "
                        f"{row['pinned_fraction']:.3f} | {row['recovered_fraction']:.3f} |"
                    )
    lines += ["", "## Operational rule", "", report["operational_rule"]]
    if report["notes"]:
        lines += ["", "## Notes", ""] + [f"* {n}" for n in report["notes"]]
    if figure:
        lines += ["", f"![D<->(s) per attack]({figure})"]
    return "\n".join(lines) + "\n"


def plot_curves(report: dict[str, Any], path: str | Path) -> None:
    """One panel per (pipeline, attack): the local ``D↔(s)`` curve, in clear and peppered."""
    # optional dependency: matplotlib is the extra 'plots'
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # optional dependency (after choosing the Agg backend)

    panels = [(k, a) for k, e in report["pipelines"].items() for a in e.get("attacks", [])]
    cols = min(3, max(1, len(panels)))
    rows = max(1, math.ceil(len(panels) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    for ax, (kind, attack) in zip(axes.ravel(), panels, strict=False):
        for label, style in (("clear", "-"), ("peppered", "--")):
            curve = attack[label]["curve"]
            ax.stairs(curve["d_local"], curve["edges"], linestyle=style, label=f"{label} {attack[label]['d_sys']:.2f}")
        ax.set_title(f"{kind}: {attack['attack']}", fontsize=9)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("linkage score s", fontsize=8)
        ax.set_ylabel("D<->(s)", fontsize=8)
        ax.legend(fontsize=7, title="D<->sys", title_fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_unlinkability_report(report: dict[str, Any], out: str | Path, *, plots: bool = True) -> dict[str, str]:
    """``unlinkability.json``, ``unlinkability.md`` and (with ``plots``) ``unlinkability.png`` in ``out``."""
    directory = Path(out)
    directory.mkdir(parents=True, exist_ok=True)
    files = {"json": str(directory / "unlinkability.json"), "markdown": str(directory / "unlinkability.md")}
    figure = None
    if plots:
        figure = "unlinkability.png"
        plot_curves(report, directory / figure)
        files["png"] = str(directory / figure)
    Path(files["json"]).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    Path(files["markdown"]).write_text(render_markdown(report, figure), encoding="utf-8")
    return files
