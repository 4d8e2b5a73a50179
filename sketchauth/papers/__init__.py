"""Reproduce the source papers' numbers: the engine of ``sketchauth reproduce``, beside the library.

Not part of the library's API (nothing in the core or in :mod:`sketchauth.evaluate` imports it):
it recomputes every number, figure and theorem of Fang's thesis (chapters 6–7) and of Boreale and
Paolini's paper that the project can compute, and says per item whether the printed value
**agrees**, **differs** (with the explanation), is **not reproducible** (a setup the source leaves
open, or a claim it states only qualitatively) or is a **new finding** (a setting the source does
not print). Each item cites the plain-text extraction of its source by file and line
(:class:`~sketchauth.papers.items.Cite`), so that every verdict can be checked against that line.

One module per source: :mod:`~sketchauth.papers.fang` (the weighted vault, Lemma 5),
:mod:`~sketchauth.papers.linkage` (Fig. 6.2), :mod:`~sketchauth.papers.mixing` (chapter 7's bounds
and toy), :mod:`~sketchauth.papers.chaff` (§7.3.2), :mod:`~sketchauth.papers.boreale_paolini`
(single observation) and :mod:`~sketchauth.papers.bp_rates` (repeated observations);
:mod:`~sketchauth.papers.report` writes ``reproduce.json``, ``reproduce.md`` and the figures.

Where a printed value is compared with a float result, "agrees" means equal to the printed number
of significant digits (or, for simulated accuracies, within the 95% interval widened by the printed
rounding; for fitted rates, within 10%). Exact results (counts, :class:`~fractions.Fraction`
probabilities and ratios) are compared exactly. Everything random is seeded; ``quick`` runs smaller
simulations (for CI), with the same verdicts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from sketchauth.papers.boreale_paolini import (
    bp_example1,
    bp_example2,
    bp_proposition1,
    bp_theorem3,
    bp_theorem4,
    bp_theorem5,
    bp_theorem6,
)
from sketchauth.papers.bp_rates import (
    bp_corollary1,
    bp_repeated_rates,
    bp_theorem7,
    bp_theorem9,
    bp_theorem10,
    bp_theorem11,
)
from sketchauth.papers.chaff import chaff_key_guessing, chaff_sketch_count, fingerprint_chaff
from sketchauth.papers.fang import (
    candidate_count_typo,
    candidate_fraction_erratum,
    juels_sudan_spurious,
    lemma5_s1,
    lemma5_s2,
    weighted_spurious,
    weighted_vault_loss,
    weighted_vault_q2,
)
from sketchauth.papers.items import DEFAULT_OPTIONS, Item, Options
from sketchauth.papers.linkage import fig62_identical, fig62_noisy, fig62_panels, linkage_by_features, linkage_by_noise
from sketchauth.papers.mixing import mixing_lemma6, mixing_theorem7, mixing_theorem8, mixing_two_fuzzy, toy_pad_parity
from sketchauth.papers.report import Reproduction, output_directory, summary_line, write_report

__all__ = ["STEPS", "Options", "Reproduction", "output_directory", "reproduce", "summary_line", "write_report"]

#: Every item, in report order; the ones in :data:`_SIMULATING` take :class:`Options`.
ITEMS: tuple[Callable[..., Item], ...] = (
    juels_sudan_spurious,
    weighted_spurious,
    candidate_fraction_erratum,
    candidate_count_typo,
    weighted_vault_q2,
    weighted_vault_loss,
    lemma5_s1,
    lemma5_s2,
    fig62_identical,
    fig62_noisy,
    fig62_panels,
    mixing_lemma6,
    mixing_theorem7,
    mixing_theorem8,
    mixing_two_fuzzy,
    toy_pad_parity,
    chaff_sketch_count,
    chaff_key_guessing,
    fingerprint_chaff,
    bp_example1,
    bp_example2,
    bp_theorem3,
    bp_theorem4,
    bp_theorem5,
    bp_proposition1,
    bp_theorem6,
    bp_theorem7,
    bp_repeated_rates,
    bp_theorem9,
    bp_theorem10,
    bp_theorem11,
    bp_corollary1,
)
_SIMULATING = {
    lemma5_s1,
    lemma5_s2,
    fig62_identical,
    fig62_noisy,
    fig62_panels,
    chaff_key_guessing,
    bp_theorem3,
    bp_theorem5,
    bp_theorem7,
    bp_repeated_rates,
    bp_theorem9,
    bp_theorem10,
}


def run_item(fn: Callable[..., Item], options: Options = DEFAULT_OPTIONS) -> Item:
    """One item of :data:`ITEMS`, with ``options`` if it simulates."""
    return fn(options) if fn in _SIMULATING else fn()


def reproduce(options: Options = DEFAULT_OPTIONS, *, progress: Callable[[str], None] | None = None) -> Reproduction:
    """Compute every item and the supplementary tables; ``progress(name)`` after each step."""
    started = time.perf_counter()
    items = []
    for fn in ITEMS:
        items.append(run_item(fn, options))
        if progress is not None:
            progress(items[-1].id)
    noise = linkage_by_noise(options)
    if progress is not None:
        progress("linkage-by-noise")
    features = linkage_by_features(options)
    if progress is not None:
        progress("linkage-by-features")
    return Reproduction(
        items=tuple(items),
        linkage_noise=tuple(noise),
        linkage_features=tuple(features),
        options=options,
        seconds=time.perf_counter() - started,
        generated=datetime.now(UTC).isoformat(timespec="seconds"),
    )


#: Progress steps of :func:`reproduce` (items plus the two supplementary tables).
STEPS = len(ITEMS) + 2
