"""Thresholds read at a matched FMR for attempts of several captures (``benchmarks/bench_captures_fmr.py``).

The threshold search realises at most the FMR asked on the impostor pairs it is given and is the
lowest that does; the exact decider at that threshold accepts exactly the pairs the scores say,
so FMR and FNMR at a matched FMR come from the same pairs as the search.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError
from sketchauth.evaluate.capacity import (
    accepted_pairs,
    grouped_probes,
    pair_scores,
    rethresholded,
    threshold_at_fmr,
)
from sketchauth.evaluate.trials import Enrolled
from sketchauth.sketches.angular_polar import PolarAngularSketch


@settings(max_examples=200, deadline=None)
@given(
    scores=st.lists(st.sampled_from([0.1, 0.2, 0.3, 0.35, 0.5, 0.7, 0.9]), max_size=40),
    extra=st.integers(0, 400),
    fmr=st.floats(0.0, 0.2),
    floor=st.sampled_from([0.0, 0.25, 0.6]),
)
def test_the_threshold_realises_at_most_the_fmr_asked_and_is_the_lowest_that_does(
    scores: list[float], extra: int, fmr: float, floor: float
) -> None:
    s = np.array(scores)
    trials = len(scores) + extra + 1
    tau = threshold_at_fmr(s, trials, fmr, floor)
    assert tau >= floor
    assert np.count_nonzero(s >= tau) <= math.floor(fmr * trials + 1e-9)
    below = s[(s < tau) & (s >= floor)]
    if tau > floor and below.size:  # any lower threshold would let the next score in, and that is too many
        assert np.count_nonzero(s >= below.max()) > math.floor(fmr * trials + 1e-9)
    assert not np.any(s == tau)  # no score on the threshold: rounding cannot move a pair across it


def test_the_search_refuses_an_impossible_request() -> None:
    with pytest.raises(ParameterError):
        threshold_at_fmr(np.array([0.5]), 0, 0.1, 0.0)


def _people(rng: np.random.Generator, n: int, people: int, probes: int, noise: float) -> tuple[np.ndarray, ...]:
    centres = rng.standard_normal((people, n))
    templates = centres / np.linalg.norm(centres, axis=1, keepdims=True)
    owner = np.repeat(np.arange(people), probes)
    single = templates[owner] + noise * rng.standard_normal((owner.size, n)) / math.sqrt(n)
    return templates, single / np.linalg.norm(single, axis=1, keepdims=True), owner


def _enrol(sketch: PolarAngularSketch, templates: np.ndarray) -> Enrolled:
    secrets = [sketch.check_secret(t) for t in templates]
    return Enrolled(
        tuple(sketch.encode(s) for s in secrets), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets)
    )


@pytest.mark.parametrize("captures", [1, 2, 3])
def test_fnmr_at_a_matched_fmr_comes_from_the_same_pairs_as_the_search(captures: int) -> None:
    rng = np.random.default_rng(captures)
    templates, single, owner = _people(rng, 32, 12, 6, 1.2)
    sketch = PolarAngularSketch(32, 8, list_size=8, min_cos=0.2)
    enrolled = _enrol(sketch, templates)
    probes, owner = grouped_probes(single, owner, captures)
    cos = templates @ probes.T
    genuine = owner[None, :] == np.arange(templates.shape[0])[:, None]
    e, p = np.nonzero(cos >= -1.0)
    decoded, score = pair_scores(sketch, enrolled, probes, e, p)
    impostor = ~genuine[e, p]
    target = 0.05
    tau = threshold_at_fmr(score[decoded & impostor], int((~genuine).sum()), target, 0.0)
    at, helpers = rethresholded(sketch, enrolled, tau)
    accepted = accepted_pairs(at, helpers, probes, cos, seed=captures)  # exact decider + real decodes
    by_scores = np.zeros_like(accepted)
    by_scores[e[decoded & (score >= tau)], p[decoded & (score >= tau)]] = True
    np.testing.assert_array_equal(accepted, by_scores)
    allowed = math.floor(target * (~genuine).sum())
    # Continuous scores, no ties: the budget is used up to the impostors the code decodes at all.
    assert np.count_nonzero(accepted & ~genuine) == min(allowed, np.count_nonzero(decoded & impostor & (score >= 0)))
    fnmr = 1 - np.count_nonzero(accepted & genuine) / genuine.sum()
    assert fnmr == 1 - np.count_nonzero(decoded & ~impostor & (score >= tau)) / genuine.sum()
