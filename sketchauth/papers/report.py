"""The reproduction's report: JSON, Markdown and the PNG figures."""

from __future__ import annotations

import json
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.report.figures import plots_available
from sketchauth.papers.items import VERDICTS, Item, Options, jsonable
from sketchauth.papers.linkage import FIG62


@dataclass(frozen=True, slots=True)
class Reproduction:
    """Every item, the supplementary linkage tables, and how the run went."""

    items: tuple[Item, ...]
    linkage_noise: tuple[dict[str, Any], ...]
    linkage_features: tuple[dict[str, Any], ...]
    options: Options
    seconds: float
    generated: str

    def summary(self) -> dict[str, int]:
        """How many items agree, differ, are not reproducible or are new findings."""
        return {v: sum(1 for i in self.items if i.verdict == v) for v in VERDICTS}

    def item(self, ident: str) -> Item:
        """The item with id ``ident``."""
        for i in self.items:
            if i.id == ident:
                return i
        raise KeyError(ident)

    def to_dict(self) -> dict[str, Any]:
        """The JSON report: metadata, summary, items, supplementary tables."""
        from sketchauth import __version__  # start-up: the version is read from the metadata on first use

        return {
            "generated": self.generated,
            "sketchauth_version": __version__,
            "python": platform.python_version(),
            "quick": self.options.quick,
            "seed": self.options.seed,
            "seconds": round(self.seconds, 2),
            "summary": self.summary(),
            "items": [i.to_dict() for i in self.items],
            "supplementary": {
                "linkage_by_noise_model": jsonable(list(self.linkage_noise)),
                "linkage_by_features": jsonable(list(self.linkage_features)),
                "setting": FIG62,
            },
        }


# -- the report ------------------------------------------------------------------------------------
def _fmt(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, Fraction) and (x.denominator == 1 or (x.denominator <= 10_000 and abs(x.numerator) <= 10_000)):
        return str(x)
    if isinstance(x, (float, Fraction, np.floating)):
        v = float(x)
        if v != 0 and (abs(v) >= 1e5 or abs(v) < 1e-3):
            return f"{v:.4e}"
        return f"{v:.6g}"
    if isinstance(x, dict):
        return ", ".join(f"{k}: {_fmt(v)}" for k, v in x.items())
    if isinstance(x, (list, tuple)):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    return str(x).replace("|", "\\|")


def _where(i: Item) -> str:
    """``000_…txt:1294`` (every cited line of the item's seed file)."""
    cites = i.printed_at
    return f"{cites[0].source}:" + ", ".join(str(n) for n in dict.fromkeys(c.line for c in cites))


def summary_line(summary: dict[str, int]) -> str:
    """``"13 agree, 5 differ, 3 not reproducible, 1 new finding"`` from :meth:`Reproduction.summary`."""
    return (
        f"{summary['agrees']} agree, {summary['differs']} differ, {summary['not reproducible']} not reproducible, "
        f"{summary['new finding']} new finding{'' if summary['new finding'] == 1 else 's'}"
    )


def _items_markdown(rep: Reproduction, figures: dict[str, str]) -> list[str]:
    lines = [
        "| item | printed at | printed | computed | verdict |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    for i in rep.items:
        lines.append(f"| [{i.title}](#{i.id}) | {_where(i)} | {_fmt(i.printed)} | {_fmt(i.computed)} | {i.verdict} |")
    for i in rep.items:
        quotes = "; ".join(f"line {c.line}: `{c.quote}`" for c in i.printed_at)
        lines += [
            "",
            f'<a id="{i.id}"></a>',
            f"## {i.title}",
            "",
            f"*{i.source}, {i.section}* ({i.printed_at[0].source}, {quotes}) — **{i.verdict}**. Printed: "
            f"{_fmt(i.printed)}; computed: {_fmt(i.computed)}{f' ({i.unit})' if i.unit else ''}.",
            "",
            i.explanation,
        ]
        if i.id in figures:
            lines += ["", f"![{i.title}]({figures[i.id]})"]
        table = i.details.get("instances") or i.details.get("toys")
        if table:
            keys = list(table[0])
            lines += ["", "| " + " | ".join(keys) + " |", "|" + " --- |" * len(keys)]
            lines += ["| " + " | ".join(_fmt(r[k]) for k in keys) + " |" for r in table]
    return lines


def _linkage_markdown(rep: Reproduction) -> list[str]:
    schemes = [k for k in rep.linkage_noise[0] if k != "noise"] if rep.linkage_noise else []
    lines = [
        "",
        "## Linkage under each re-enrolment noise model",
        "",
        f"n = {FIG62['n']}, q = {FIG62['q']}, τ = {FIG62['tau']}, one feature, "
        f"{rep.options.sweep_pairs} mated and non-mated pairs each; best-threshold accuracy (0.5 is chance).",
        "Columns s1, s2, s3: each scheme's published adversary (clear tolerances; similar intervals). "
        "'parity': features whose majority boundary parity agrees; 's3 even intervals': similar "
        "intervals counted among the even-length (possible secret) ones only.",
        "",
        "| noise | " + " | ".join(schemes) + " |",
        "| --- |" + " ---: |" * len(schemes),
    ]
    lines += ["| " + r["noise"] + " | " + " | ".join(f"{r[s]:.4f}" for s in schemes) + " |" for r in rep.linkage_noise]
    lines += [
        "",
        "## Linkage against the number of features",
        "",
        "| noise | features | pairs | " + " | ".join(schemes) + " |",
        "| --- | ---: | ---: |" + " ---: |" * len(schemes),
    ]
    lines += [
        f"| {r['noise']} | {r['features']} | {r['pairs']} | " + " | ".join(f"{r[s]:.4f}" for s in schemes) + " |"
        for r in rep.linkage_features
    ]
    return lines


def _markdown(rep: Reproduction, figures: dict[str, str]) -> str:
    lines = [
        "# Reproduction of the source papers",
        "",
        f"Generated {rep.generated} by `sketchauth reproduce`{' --quick' if rep.options.quick else ''} "
        f"in {rep.seconds:.1f} s (seed {rep.options.seed}). Every printed value is cited by the seed "
        "file of its source and the line (000: Fang's thesis; 003: Boreale and Paolini), with a "
        "quote of that line; the JSON file beside this report has the same numbers.",
        "",
        f"**{summary_line(rep.summary())}.**",
        "",
        *_items_markdown(rep, figures),
        *_linkage_markdown(rep),
    ]
    if not figures:
        lines += ["", "(Figures skipped: install the plots extra, `pip install 'sketchauth[plots]'`.)"]
    return "\n".join(lines) + "\n"


def _figure_linkage(items: Sequence[Item], path: Path) -> None:
    import matplotlib.pyplot as plt  # optional dependency (the 'plots' extra)

    schemes = list(items[0].details["runs"])
    fig, axes = plt.subplots(len(items), len(schemes), figsize=(5 * len(schemes), 3.2 * len(items)), squeeze=False)
    for row, item in enumerate(items):
        for col, scheme in enumerate(schemes):
            run = item.details["runs"][scheme]
            h = run["histogram"]
            scores = np.array(h["scores"])
            ax = axes[row][col]
            ax.bar(scores - 0.2, np.array(h["mated"]) / run["pairs"], width=0.4, label="mated")
            ax.bar(scores + 0.2, np.array(h["nonmated"]) / run["pairs"], width=0.4, label="non-mated")
            if scores.size <= 12:
                ax.set_xticks(scores)
            ax.set_title(f"{scheme}, {item.details['noise']}: accuracy {run['accuracy']:.3f}", fontsize=9)
            ax.set_xlabel("linkage score")
            ax.set_ylabel("share of pairs")
            ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _figure_chaff(item: Item, path: Path) -> None:
    import matplotlib.pyplot as plt  # optional dependency (the 'plots' extra)

    freq = np.array(item.details["sketch_frequencies_sorted"])
    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.bar(np.arange(freq.size), freq, width=1.0)
    ax.axhline(1 / 605, color="black", linestyle="--", label="uniform 1/605")
    ax.set_xlabel("sketch (sorted by probability)")
    ax.set_ylabel("probability")
    ax.set_title("Z_24, min distance > 3, secret uniform: the 605 sketches' probabilities")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _figures(rep: Reproduction, out: Path) -> dict[str, str]:

    if not plots_available():
        return {}
    import matplotlib  # optional dependency (the 'plots' extra)

    matplotlib.use("Agg")
    made = {}
    fig62 = [i for i in rep.items if i.id in ("fig62-identical", "fig62-noisy")]
    if fig62:
        _figure_linkage(fig62, out / "fig6-2-linkage.png")
        made.update({i.id: "fig6-2-linkage.png" for i in fig62})
    chaff = [i for i in rep.items if i.id == "chaff-guessing"]
    if chaff:
        _figure_chaff(chaff[0], out / "fig7-3-chaff-frequencies.png")
        made["chaff-guessing"] = "fig7-3-chaff-frequencies.png"
    return made


def output_directory(out: str | Path) -> Path:
    """``out`` created if needed; ``ParameterError`` naming it when that is impossible."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParameterError(f"cannot create the output directory {out}: {exc.strerror or exc}") from None
    return out


def write_report(rep: Reproduction, out: str | Path, json_path: str | Path | None = None) -> dict[str, str]:
    """Write ``reproduce.md``, the PNG figures and the JSON (``json_path`` or ``out/reproduce.json``).

    Figures need the ``plots`` extra; without it the report says so and the rest is written.
    Returns the paths written.
    """
    out = output_directory(out)
    figures = _figures(rep, out)
    data = rep.to_dict()
    data["figures"] = sorted(set(figures.values()))
    target = Path(json_path) if json_path is not None else out / "reproduce.json"
    target.write_text(json.dumps(data, indent=2, allow_nan=False) + "\n", encoding="utf-8")
    (out / "reproduce.md").write_text(_markdown(rep, figures), encoding="utf-8")
    return {"markdown": str(out / "reproduce.md"), "json": str(target), **{f: str(out / f) for f in data["figures"]}}
