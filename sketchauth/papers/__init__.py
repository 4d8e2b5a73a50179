"""Reproduce the source papers' numbers (``sketchauth reproduce``); not part of the library's API."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

from sketchauth.papers.boreale_paolini import (
    bp_corollary1,
    bp_dp_relations,
    bp_example1,
    bp_example2,
    bp_rate_security,
    bp_repeated_rates,
    bp_theorem7_q,
    bp_theorem11,
    bp_utility,
)
from sketchauth.papers.chaff import chaff_key_guessing, chaff_sketch_count, fingerprint_chaff
from sketchauth.papers.fang import (
    candidate_count_typo,
    candidate_fraction_erratum,
    juels_sudan_spurious,
    lemma5_s1,
    lemma5_s2,
    mixing_lemma6,
    mixing_theorem7,
    mixing_theorem8,
    mixing_two_fuzzy,
    toy_pad_parity,
    weighted_spurious,
    weighted_vault_loss,
    weighted_vault_q2,
)
from sketchauth.papers.items import DEFAULT_OPTIONS, Item, Options
from sketchauth.papers.linkage import fig62_identical, fig62_noisy, fig62_panels, linkage_by_features, linkage_by_noise
from sketchauth.papers.report import Reproduction, output_directory, summary_line, write_report

__all__ = ["STEPS", "Options", "Reproduction", "output_directory", "reproduce", "summary_line", "write_report"]

# -- the run -----------------------------------------------------------------------------------------
#: Every item, in report order: ``(id, function)``; a function takes :class:`Options` if it simulates.
ITEMS: tuple[tuple[str, Callable[..., Item]], ...] = (
    ("js-spurious", juels_sudan_spurious),
    ("weighted-spurious", weighted_spurious),
    ("candidate-fraction", candidate_fraction_erratum),
    ("candidate-count", candidate_count_typo),
    ("weighted-vault-q2", weighted_vault_q2),
    ("weighted-vault-loss", weighted_vault_loss),
    ("lemma5-s1", lemma5_s1),
    ("lemma5-s2", lemma5_s2),
    ("fig62-identical", fig62_identical),
    ("fig62-noisy", fig62_noisy),
    ("fig62-panels", fig62_panels),
    ("lemma6", mixing_lemma6),
    ("theorem7", mixing_theorem7),
    ("theorem8", mixing_theorem8),
    ("two-fuzzy", mixing_two_fuzzy),
    ("toy-pad-parity", toy_pad_parity),
    ("chaff-count", chaff_sketch_count),
    ("chaff-guessing", chaff_key_guessing),
    ("fingerprint-chaff", fingerprint_chaff),
    ("bp-example1", bp_example1),
    ("bp-example2", bp_example2),
    ("bp-theorem11", bp_theorem11),
    ("bp-corollary1", bp_corollary1),
    ("bp-repeated-rates", bp_repeated_rates),
    ("bp-theorem7-q", bp_theorem7_q),
    ("bp-rate-security", bp_rate_security),
    ("bp-dp-relations", bp_dp_relations),
    ("bp-utility", bp_utility),
)
_SIMULATING = {
    lemma5_s1,
    lemma5_s2,
    fig62_identical,
    fig62_noisy,
    fig62_panels,
    chaff_key_guessing,
    bp_repeated_rates,
    bp_theorem7_q,
}


def reproduce(options: Options = DEFAULT_OPTIONS, *, progress: Callable[[str], None] | None = None) -> Reproduction:
    """Compute every item and the supplementary tables; ``progress(name)`` after each step."""
    started = time.perf_counter()
    items = []
    for _, fn in ITEMS:
        items.append(fn(options) if fn in _SIMULATING else fn())
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
