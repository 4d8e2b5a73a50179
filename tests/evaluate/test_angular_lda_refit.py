"""The angular pipeline calibrated with LDA refitted per fold, where a fold's LDA has fewer directions.

A cross-validation fold refits the transform without its people; an LDA fitted on ``J`` people
keeps at most ``J − 1`` directions, so a fold's transform can have fewer dimensions than the
transform the pipeline uses. ``projected_directions`` indexed the fold's projection with the full
transform's dimensions and raised ``IndexError``; the lacking directions are now zero
(angles unchanged, every vector of the sketch's dimension).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting import CalibrationOptions, fit_pipeline
from sketchauth.evaluate.fitting.angular import kept_columns, projected_directions
from sketchauth.evaluate.fitting.transform import fit_transform, refit_transform
from sketchauth.evaluate.trials import projected_trials


def _people(data: LabelledVectors, count: int) -> LabelledVectors:
    keep = np.isin(data.identities, np.unique(data.identities)[:count])
    return LabelledVectors(data.identities[keep], data.samples[keep])


@pytest.fixture(scope="module")
def lda() -> tuple[Any, LabelledVectors]:
    population = EmbeddingPopulation(informative=24, useless=2, noise_scale=0.5, seed=2)
    background = population.draw(20, 4, seed=1)
    return fit_transform(background, levels=16, projection="lda", min_fisher_ratio=1e-6), background


def test_a_fold_of_fewer_people_has_fewer_lda_directions(lda: tuple[Any, LabelledVectors]) -> None:
    transform, background = lda
    fold = _people(background, 16)
    assert refit_transform(transform, fold).dimensions <= 15 < transform.dimensions  # the case that failed


def test_angular_calibration_with_refitted_lda_folds(lda: tuple[Any, LabelledVectors]) -> None:
    transform, background = lda
    options = CalibrationOptions(refit=True, folds=5, security_bits=8, target_fmr=0.05)
    pipeline = fit_pipeline("angular", transform, background, options)  # IndexError before the fix
    assert pipeline.sketch.dimension == transform.dimensions
    assert pipeline.calibration is not None and pipeline.calibration.fmr_upper <= 0.05


def test_missing_directions_are_zero_and_keep_the_angles(lda: tuple[Any, LabelledVectors]) -> None:
    transform, background = lda
    fold = _people(background, 10)
    small = refit_transform(transform, fold)
    dims = np.arange(transform.dimensions)
    trials = projected_trials(lambda x: x, background, 1)
    templates, probes = projected_directions(small, dims, trials)
    assert templates.shape[1] == probes.shape[1] == dims.size
    assert np.all(templates[:, small.dimensions :] == 0) and np.all(probes[:, small.dimensions :] == 0)
    narrow, narrow_probes = projected_directions(small, np.arange(small.dimensions), trials)
    np.testing.assert_allclose(templates @ probes.T, narrow @ narrow_probes.T, rtol=0, atol=1e-12)


def test_kept_columns_selects_when_every_column_exists() -> None:
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_array_equal(kept_columns(x, np.array([3, 1])), x[:, [3, 1]])
    np.testing.assert_array_equal(kept_columns(x, np.array([1, 5])), np.stack([x[:, 1], np.zeros(3)], axis=1))
