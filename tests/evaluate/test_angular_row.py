"""The angular pipeline's row of ``features evaluate``: its rule is the scheme on every trial.

The row enrols every person once (the real encoder, seeded rotation) and scores every pair under
that helper; at a setting, the pipeline built by the row must accept exactly the trials whose score
is at most the setting. Checked here on *every* trial of a small seeded population, by real
``encode_with`` → ``decode`` through the pipeline's own transform, at two settings.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.pipelines.angular_row import NEVER, angular_decode_check, angular_row
from sketchauth.evaluate.pipelines.evaluation import EvaluationChecks, evaluate_pipelines
from sketchauth.evaluate.protocol import Protocol
from sketchauth.evaluate.security import CODEBOOK, PROVABLE, recommend
from sketchauth.features.angular import AngularPipeline

DIMENSIONS = 48


def _people(count: int, captures: int, seed: int, noise: float = 0.06) -> LabelledVectors:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(count, DIMENSIONS))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.repeat(centres, captures, axis=0) + rng.normal(scale=noise, size=(count * captures, DIMENSIONS))
    return LabelledVectors(np.repeat([f"s{seed}-{i}" for i in range(count)], captures), x)


@pytest.fixture(scope="module")
def setup() -> tuple[AngularPipeline, LabelledVectors, LabelledVectors]:
    background = _people(30, 3, seed=1)
    transform = fit_transform(background, levels=4, projection="centre", normalise=True)
    pipeline = AngularPipeline(transform, np.arange(DIMENSIONS), min_cos=0.5, bits=24)
    return pipeline, background, _people(14, 3, seed=2)


def test_every_trial_agrees_with_real_decoding_at_two_settings(setup: Any) -> None:
    pipeline, _, people = setup
    protocol = Protocol(1, "open", None)
    row = angular_row(pipeline, people, protocol, seed=3)
    genuine, impostor = row.scores()
    assert genuine.size == 28 and impostor.size == 14 * 28 - 28
    finite = np.concatenate([genuine, impostor])
    finite = np.unique(finite[finite < NEVER])
    assert finite.size > 10 and np.all(-finite >= row.floor)
    plan = protocol.plan(people.identities, people.split)
    raw = ([people.samples[r] for r in plan.enrol_rows], people.samples[plan.probe_index])
    for setting in (float(np.median(finite)), float(finite[-1])):
        check = angular_decode_check(row, setting, raw, count=10**6, seed=0)
        assert check["checked"] == check["total_trials"] == genuine.size + impostor.size
        assert check["disagreements"] == 0, check["examples"]
        assert row.floor <= check["min_cos"] < -setting  # strictly between the setting and the next score


def test_the_row_in_the_evaluation_is_checked_under_its_own_rotations(setup: Any) -> None:
    pipeline, background, people = setup
    checks = EvaluationChecks(security=False, decode_checks=10**6)
    result = evaluate_pipelines(pipeline.transform, background, people, kinds=(), checks=checks, angular=pipeline)
    (row,) = [r for r in result.results if r.protected]
    assert row.name == "angular (polar 24-bit, list 8)"
    assert row.decode_check["checked"] == row.decode_check["total_trials"] and row.decode_check["disagreements"] == 0
    result.require_exact()


def test_the_sparse_code_has_no_row(setup: Any) -> None:
    pipeline, background, people = setup
    sparse = AngularPipeline(pipeline.transform, pipeline.dims, min_cos=0.5, alpha=6)
    checks = EvaluationChecks(security=False, decode_checks=0)
    result = evaluate_pipelines(pipeline.transform, background, people, kinds=(), checks=checks, angular=sparse)
    assert result.unavailable == (
        ("angular", "the FNMR-at-FMR row of the angular pipeline is measured for the polar code"),
    )


def _row(name: str, fnmr: float, bits: float, basis: str) -> dict[str, Any]:
    return {
        "pipeline": name,
        "setting": 1.0,
        "fnmr": fnmr,
        "fmr": 0.005,
        "guaranteed_bits": bits,
        "basis": basis,
        "guaranteed_bits_with_pin": bits,
    }


def test_the_recommendation_names_the_basis_of_the_angular_bits() -> None:
    rows = [_row("thermometer", 0.74, 30.0, PROVABLE), _row("angular", 0.05, 64.0, CODEBOOK)]
    chosen = recommend(rows)
    assert chosen["pipeline"] == "angular"
    assert chosen["text"].endswith("64.0 guaranteed bits (codebook work from one helper, computational)")
    # A setting that rejects most genuine attempts is no recommendation, whatever its bits.
    assert recommend(rows[:1])["how"] is None
    assert "does not allow 20 guaranteed bits at FMR ≤ 0.01 and FNMR ≤ 0.5" in recommend(rows[:1])["text"]
    assert recommend([_row("interval", 0.3, 30.0, PROVABLE)])["text"].endswith("30.0 guaranteed bits (biometric alone)")
