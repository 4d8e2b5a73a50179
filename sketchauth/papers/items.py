"""What an item of the reproduction is: where it is printed, what was printed, what was computed."""

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
#: ``new finding``: a measurement of a setting the source does not print (nothing to compare with).
VERDICTS: tuple[Verdict, ...] = ("agrees", "differs", "not reproducible", "new finding")
THESIS = "Fang, PhD thesis"
BP = "Boreale–Paolini"
LOG3 = math.log2(3)
#: How an item whose printed value the project does not have begins its explanation.
UNAVAILABLE = "Not reproducible: the printed value is not available here — "
P = ParamSpec("P")


@dataclass(frozen=True, slots=True)
class Item:
    """One reproduced number: where it is printed, what was printed, what the library computes.

    ``printed``/``library`` are numbers where the source states a number (a mapping of numbers
    for a pair of values, a string for a stated inequality or claim, ``None`` when unknown);
    ``explanation`` says in the project's words why the value agrees, differs or cannot be
    reproduced; ``details`` holds the supporting numbers (and the data of the figures).
    """

    id: str
    source: str
    section: str
    title: str
    printed: Any
    library: Any
    verdict: Verdict
    explanation: str
    unit: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ParameterError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (numbers stay numbers; Fractions become floats beside their exact string)."""
        return {
            "id": self.id,
            "source": self.source,
            "section": self.section,
            "title": self.title,
            "printed": jsonable(self.printed),
            "library": jsonable(self.library),
            "unit": self.unit,
            "verdict": self.verdict,
            "explanation": self.explanation,
            "details": jsonable(self.details),
        }


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
    def lemma5_instances(self) -> tuple[tuple[int, int, int], ...]:
        """``(n, q, features)`` of the exhaustive Lemma 5 checks."""
        if self.quick:
            return ((5, 2, 1), (6, 3, 1), (8, 4, 1), (3, 2, 2))
        return ((5, 2, 1), (6, 3, 1), (9, 3, 1), (8, 4, 1), (12, 4, 1), (16, 4, 1), (3, 2, 2), (4, 2, 2))


#: The full run's sizes (the default of every item that simulates).
DEFAULT_OPTIONS = Options()


# -- helpers ---------------------------------------------------------------------------------------
def jsonable(x: Any) -> Any:
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


def same_digits(printed: float, value: float, digits: int) -> bool:
    """``value`` rounds to ``printed`` at ``digits`` significant digits."""
    return f"{value:.{digits - 1}e}" == f"{printed:.{digits - 1}e}"


def verdict_of(ok: bool) -> Verdict:
    return "agrees" if ok else "differs"


@dataclass(frozen=True, slots=True)
class Finding:
    """What an item's function computes: the :class:`Item` without where it is printed."""

    printed: Any
    library: Any
    verdict: Verdict
    explanation: str
    unit: str = ""
    details: dict[str, Any] = field(default_factory=dict)


def reproduces(
    ident: str, source: str, section: str, title: str
) -> Callable[[Callable[P, Finding]], Callable[P, Item]]:
    """Decorate an item's function with where the value is printed; the function then returns an :class:`Item`.

    Every item names its source, section and title once, above the function that recomputes it.
    """

    def decorate(compute: Callable[P, Finding]) -> Callable[P, Item]:
        @functools.wraps(compute)
        def item(*args: P.args, **kwargs: P.kwargs) -> Item:
            f = compute(*args, **kwargs)
            return Item(
                ident, source, section, title, f.printed, f.library, f.verdict, f.explanation, f.unit, f.details
            )

        return item

    return decorate


def unavailable(what: str, **computed: Any) -> Finding:
    """A "not reproducible" finding for statements and numbers the project does not have.

    ``computed``: quantities the item computes for reference (its details), compared with nothing.
    """
    return Finding(
        printed=None, library=None, verdict="not reproducible", explanation=UNAVAILABLE + what, details=computed
    )
