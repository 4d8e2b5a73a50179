"""The synthetic embedding population: model structure, determinism, parameter errors."""

from __future__ import annotations

import numpy as np
import pytest

from sketchauth.errors import ParameterError
from sketchauth.evaluate.embeddings import EmbeddingPopulation


def test_model_structure() -> None:
    population = EmbeddingPopulation(informative=10, useless=3, between_scale=2.0, seed=7)
    model = population.model()
    assert model.features == 13
    # Useless features: no between-person variance at all.
    assert np.all(model.between[10:, :] == 0) and np.all(model.between[:, 10:] == 0)
    assert np.trace(model.between) == pytest.approx(10 * 2.0**2)
    spectrum = np.linalg.eigvalsh(model.between[:10, :10])[::-1]
    np.testing.assert_allclose(spectrum / spectrum[0], population.between_decay ** np.arange(10), rtol=1e-9)
    # Within-person noise: symmetric positive definite, correlated, per-feature scales differ.
    assert np.all(np.linalg.eigvalsh(model.within) > 0)
    assert np.abs(model.within - np.diag(np.diag(model.within))).max() > 0
    assert np.diag(model.within).max() / np.diag(model.within).min() > 1.5


def test_draws_are_deterministic_and_seeds_give_different_people() -> None:
    population = EmbeddingPopulation(informative=6, useless=1, seed=1)
    a = population.draw(4, 3, seed=5)
    b = population.draw(4, 3, seed=5)
    c = population.draw(4, 3, seed=6)
    assert np.array_equal(a.samples, b.samples) and not np.array_equal(a.samples, c.samples)
    assert a.identities.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert np.array_equal(
        population.model().within, EmbeddingPopulation(informative=6, useless=1, seed=1).model().within
    )


def test_sample_moments_follow_the_model() -> None:
    population = EmbeddingPopulation(informative=4, useless=1, seed=3)
    data = population.draw(3000, 2, seed=1)
    x = data.samples.reshape(3000, 2, 5)
    model = population.model()
    within = np.cov((x[:, 0] - x[:, 1]).T) / 2.0
    np.testing.assert_allclose(within, model.within, atol=0.1 * np.abs(model.within).max())
    np.testing.assert_allclose(x.mean(axis=(0, 1)), model.centre, atol=0.15)


@pytest.mark.parametrize(
    "kwargs",
    [{"informative": 0}, {"useless": -1}, {"between_decay": 1.5}, {"noise_scale": 0.0}, {"scale_spread": -1.0}],
)
def test_bad_parameters(kwargs) -> None:
    with pytest.raises(ParameterError):
        EmbeddingPopulation(**kwargs)
    with pytest.raises(ParameterError):
        EmbeddingPopulation().draw(0, 1, seed=0)
