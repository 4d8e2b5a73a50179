"""The angular fit's thresholds for attempts of several captures (``calibrate_captures``)."""

from __future__ import annotations

import numpy as np
import pytest

from sketchauth.errors import ParameterError
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.angular import attempt_directions, calibrate_captures, for_target_fmr
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.features.angular import AngularPipeline, mean_direction

# Noisy captures (0.6 of the spread between people): one capture often misses, an average less so.
POP = EmbeddingPopulation(informative=48, useless=2, noise_scale=0.6, between_decay=1.0, seed=7)
OPTIONS = CalibrationOptions(target_fmr=1e-2, enrol_samples=3, security_bits=32)


def _unit_rows(rng: np.random.Generator, rows: int, n: int = 5) -> np.ndarray:
    x = rng.normal(size=(rows, n))
    return np.asarray(x / np.linalg.norm(x, axis=1, keepdims=True))


def test_each_probe_starts_an_attempt_of_the_next_probes_of_its_owner_cyclically() -> None:
    rng = np.random.default_rng(0)
    probes = _unit_rows(rng, 7)
    owner = np.array([1, 0, 1, 0, 0, 1, 1])  # not sorted: the rows keep their places
    out = attempt_directions(probes, owner, 2)
    for rows in (np.flatnonzero(owner == o) for o in (0, 1)):
        for i, row in enumerate(rows):
            expected = mean_direction(probes[[row, rows[(i + 1) % rows.size]]][None])[0]
            np.testing.assert_allclose(out[row], expected, atol=1e-12)
    np.testing.assert_allclose(attempt_directions(probes, owner, 1), probes, atol=1e-12)
    with pytest.raises(ParameterError, match="needs 4 probes"):
        attempt_directions(probes, owner, 4)  # person 0 has 3


@pytest.fixture(scope="module")
def fitted() -> AngularPipeline:
    background = POP.draw(60, 7, seed=1)
    transform = fit_transform(background, projection="centre", normalise=True)
    return for_target_fmr(transform, background, OPTIONS)


def test_several_captures_get_thresholds_that_keep_the_target(fitted: AngularPipeline) -> None:
    assert set(fitted.captures_min_cos) == {2, 3}
    for k in (2, 3):
        record = fitted.captures_calibration[k]
        assert record.target_fmr == OPTIONS.target_fmr and record.fmr <= OPTIONS.target_fmr
        assert 0.0 <= fitted.captures_min_cos[k] <= 1.0
        assert record.genuine_trials == 60 * 4  # every probe of every person starts one attempt
    # Averaging k captures brings genuine attempts closer: fewer rejected than with one capture.
    assert fitted.captures_calibration[3].fnmr < fitted.captures_calibration[2].fnmr < fitted.calibration.fnmr


def test_a_background_without_enough_captures_keeps_the_one_capture_threshold() -> None:
    background = POP.draw(40, 5, seed=2)  # 3 to enrol + 2 probes: two-capture attempts only
    transform = fit_transform(background, projection="centre", normalise=True)
    pipeline = for_target_fmr(transform, background, OPTIONS.but(calibrate_captures=False))
    assert pipeline.captures_min_cos == {} and pipeline.captures_calibration == {}
    calibrate_captures(pipeline, background, OPTIONS)
    assert set(pipeline.captures_min_cos) == {2}
    reason = pipeline.captures_calibration[3]
    assert isinstance(reason, str) and "keep the one-capture threshold" in reason and "6 captures" in reason
    assert pipeline.sketch_for_captures(3) is pipeline.sketch
