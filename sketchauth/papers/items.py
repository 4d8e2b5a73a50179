"""What an item of the reproduction is: where it is printed, what was printed, what was computed.

Every item cites the plain-text extraction of its source by file and line (:class:`Cite`, with a
short verbatim quote of that line, which the tests find there), so that a reader can check each
verdict against the printed page:

* ``000_afad9ac0b4c3c9ef.txt``: Fang's PhD thesis (chapters 6–7 from about line 1160);
* ``003_14691affbe92733e.txt``: Boreale and Paolini, "Worst- and average-case privacy breaches in
  randomization mechanisms", TCS 2012.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Literal, ParamSpec

import numpy as np

from sketchauth.errors import ParameterError

Verdict = Literal["agrees", "differs", "not reproducible", "new finding"]
#: ``new finding``: a measurement of a setting the source does not print (nothing to compare with);
#: ``not reproducible``: the source leaves the setup open, or states only a qualitative claim.
VERDICTS: tuple[Verdict, ...] = ("agrees", "differs", "not reproducible", "new finding")
LOG3 = math.log2(3)
P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Paper:
    """A source and the file of its plain-text extraction (the line numbers refer to it)."""

    name: str
    file: str


THESIS = Paper("Fang, PhD thesis", "000_afad9ac0b4c3c9ef.txt")
BP = Paper("Boreale–Paolini", "003_14691affbe92733e.txt")


@dataclass(frozen=True, slots=True)
class Cite:
    """One printed line: the seed file, its line number (1-based) and a verbatim quote of it."""

    source: str
    line: int
    quote: str

    def to_dict(self) -> dict[str, Any]:
        """``{"source": …, "line": …, "quote": …}``."""
        return {"source": self.source, "line": self.line, "quote": self.quote}


@dataclass(frozen=True, slots=True)
class Options:
    """Sizes of the simulations and toy instances (``quick`` for CI)."""

    quick: bool = False
    seed: int = 1

    @property
    def linkage_pairs(self) -> int:
        """Mated and non-mated pairs each of the Fig. 6.2 linkage runs."""
        return 5_000 if self.quick else 100_000

    @property
    def sweep_pairs(self) -> int:
        """Pairs of the supplementary noise-model and feature sweeps."""
        return 2_000 if self.quick else 20_000

    @property
    def guessing_trials(self) -> int:
        """Trials of the seeded key-guessing simulation beside the exact value."""
        return 5_000 if self.quick else 100_000

    @property
    def observations(self) -> tuple[int, int, int]:
        """Numbers of repeated observations at which the rates of Boreale–Paolini are measured."""
        return (20, 40, 80)

    @property
    def random_channels(self) -> int:
        """Seeded random channels on which the general theorems are checked."""
        return 50 if self.quick else 500

    @property
    def lemma5_instances(self) -> tuple[tuple[int, int, int], ...]:
        """``(n, q, features)`` of the exhaustive Lemma 5 checks."""
        if self.quick:
            return ((5, 2, 1), (6, 3, 1), (8, 4, 1), (3, 2, 2))
        return ((5, 2, 1), (6, 3, 1), (9, 3, 1), (8, 4, 1), (12, 4, 1), (16, 4, 1), (3, 2, 2), (4, 2, 2))


#: The full run's sizes (the default of every item that simulates).
DEFAULT_OPTIONS = Options()


# -- helpers ---------------------------------------------------------------------------------------
def jsonable(x: Any) -> Any:
    """``x`` with numpy scalars, arrays and Fractions turned into JSON numbers and lists."""
    if isinstance(x, Fraction):
        return float(x)
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating, float)):
        value = float(x)
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(x, np.ndarray):
        return [jsonable(v) for v in x.tolist()]
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    return x


def exact_strings(x: Any) -> Any:
    """The Fractions inside ``x`` as ``"p/q"`` strings, in the same structure; ``None`` if there are none."""
    if isinstance(x, Fraction):
        return str(x)
    if isinstance(x, dict):
        inner = {str(k): exact_strings(v) for k, v in x.items()}
        kept = {k: v for k, v in inner.items() if v is not None}
        return kept or None
    if isinstance(x, (list, tuple)):
        items = [exact_strings(v) for v in x]
        return items if any(v is not None for v in items) else None
    return None


def same_digits(printed: float, value: float, digits: int) -> bool:
    """``value`` rounds to ``printed`` at ``digits`` significant digits."""
    return f"{value:.{digits - 1}e}" == f"{printed:.{digits - 1}e}"


def verdict_of(ok: bool) -> Verdict:
    """``agrees`` if ``ok``, else ``differs``."""
    return "agrees" if ok else "differs"


def log2_fraction(x: Fraction | int) -> float:
    """``log2 x`` of an exact positive rational, without overflow for huge numerators."""
    value = Fraction(x)
    return math.log2(value.numerator) - math.log2(value.denominator)


@dataclass(frozen=True, slots=True)
class Finding:
    """What an item's function computes: the :class:`Item` without where it is printed."""

    printed: Any
    computed: Any
    verdict: Verdict
    explanation: str
    unit: str = ""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Where:
    """Where an item is printed: the paper, its section, the item's title and the cited lines."""

    paper: Paper
    section: str
    title: str
    lines: tuple[tuple[int, str], ...]


@dataclass(frozen=True, slots=True)
class Item:
    """One reproduced number: where it is printed (:class:`Where`) and what was found (:class:`Finding`).

    ``printed`` holds only what the source prints at ``printed_at`` (a number, a mapping of
    numbers, or the printed statement as a string; ``None`` when the source prints no value);
    ``computed`` what the project computes (exact :class:`~fractions.Fraction` where the math is
    exact); ``explanation`` says why the two agree or differ; ``details`` holds the supporting
    numbers (and the data of the figures).
    """

    id: str
    where: Where
    finding: Finding

    def __post_init__(self) -> None:
        if self.finding.verdict not in VERDICTS:
            raise ParameterError(f"verdict must be one of {VERDICTS}, got {self.finding.verdict!r}")
        if not self.where.lines:
            raise ParameterError(f"item {self.id} cites no printed line")

    source = property(lambda self: self.where.paper.name, doc="The paper's name.")
    section = property(lambda self: self.where.section, doc="Its section, theorem or figure.")
    title = property(lambda self: self.where.title, doc="What the item is.")
    printed = property(lambda self: self.finding.printed, doc="What the source prints.")
    computed = property(lambda self: self.finding.computed, doc="What the project computes.")
    verdict = property(lambda self: self.finding.verdict, doc="agrees, differs, not reproducible, new finding.")
    explanation = property(lambda self: self.finding.explanation, doc="Why.")
    unit = property(lambda self: self.finding.unit, doc="The unit of the values.")
    details = property(lambda self: self.finding.details, doc="Supporting numbers.")

    @property
    def printed_at(self) -> tuple[Cite, ...]:
        """The cited lines of the seed file."""
        return tuple(Cite(self.where.paper.file, line, quote) for line, quote in self.where.lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: numbers stay numbers, Fractions become floats (their exact strings in ``exact``)."""
        first, *more = self.printed_at
        return {
            "id": self.id,
            "source": self.source,
            "section": self.section,
            "title": self.title,
            "printed": {"value": jsonable(self.printed), **first.to_dict(), "more": [c.to_dict() for c in more]},
            "computed": jsonable(self.computed),
            "exact": exact_strings(self.computed),
            "unit": self.unit,
            "verdict": self.verdict,
            "explanation": self.explanation,
            "details": jsonable(self.details),
        }


def reproduces(ident: str, where: Where) -> Callable[[Callable[P, Finding]], Callable[P, Item]]:
    """Decorate an item's function with where its value is printed; it then returns an :class:`Item`.

    Every item names its paper, section, title and printed lines (``(line, quote)``) once, above
    the function that recomputes it.
    """

    def decorate(compute: Callable[P, Finding]) -> Callable[P, Item]:
        @functools.wraps(compute)
        def item(*args: P.args, **kwargs: P.kwargs) -> Item:
            return Item(ident, where, compute(*args, **kwargs))

        return item

    return decorate
