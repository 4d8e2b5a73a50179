"""FeatureTransform: whitening, Fisher selection, equal-probability quantisers, Gray bits, JSON, errors."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from feature_testing import Background
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError, SampleError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.transform import (
    SmallPopulationWarning,
    fit_transform,
    ledoit_wolf_shrinkage,
    refit_transform,
)
from sketchauth.features.transform import FeatureTransform, gray_code

POP = EmbeddingPopulation(informative=12, useless=3, seed=4)
#: What the ``background`` and ``transform`` fixtures (tests/features/conftest.py) draw and fit here.
BACKGROUND = Background(POP)


def _within_and_between(y: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ids = np.unique(labels)
    means = np.stack([y[labels == i].mean(axis=0) for i in ids])
    centred = y - means[np.searchsorted(ids, labels)]
    within = centred.T @ centred / (y.shape[0] - ids.size)
    return within, np.cov(means, rowvar=False)


def test_fixed_seed_fit_keeps_the_informative_directions(transform: FeatureTransform) -> None:
    assert transform.features == 15
    assert transform.dimensions == 12  # the 3 useless features add no direction with λ ≥ 0.05
    assert transform.levels == 16 and transform.level_bits == 4
    assert transform.training["identities"] == 160 and transform.training["samples"] == 800
    assert np.all(np.diff(transform.fisher_ratios) <= 0)
    assert transform.fisher_ratios[-1] >= 0.05


def test_without_shrinkage_the_projection_whitens_exactly(background: LabelledVectors) -> None:
    t = fit_transform(background, levels=16, shrinkage=0.0)
    within, between = _within_and_between(t.project(background.samples), background.identities)
    np.testing.assert_allclose(within, np.eye(t.dimensions), atol=1e-9)
    # Identity means are uncorrelated across kept directions: covariance is diagonal.
    off = between - np.diag(np.diag(between))
    np.testing.assert_allclose(off, 0.0, atol=1e-9)
    # Diagonal = Fisher ratio + the noise left in a mean of 5 samples (1/5).
    np.testing.assert_allclose(np.diag(between), t.fisher_ratios + 0.2, atol=1e-9)


def test_quantiser_levels_are_equally_populated_on_the_background(
    transform: FeatureTransform, background: LabelledVectors
) -> None:
    levels = transform.quantise(transform.project(background.samples))
    for j in range(transform.dimensions):
        assert np.bincount(levels[:, j], minlength=16).tolist() == [50] * 16


def test_gray_code_known_values_and_adjacency() -> None:
    assert gray_code(np.arange(8)).tolist() == [0, 1, 3, 2, 6, 7, 5, 4]
    g = gray_code(np.arange(256))
    assert all(bin(int(a ^ b)).count("1") == 1 for a, b in itertools.pairwise(g))


def test_binarise_packs_gray_bits_msb_first(transform: FeatureTransform) -> None:
    levels = np.zeros(transform.dimensions, dtype=np.int64)
    levels[:4] = [15, 8, 4, 1]  # 2-bit coarse levels 3, 2, 1, 0 → Gray 10, 11, 01, 00
    assert transform.binarise(levels, 2, dims=[0, 1, 2, 3]) == bytes([0b10110100])
    rows = transform.binarise(np.stack([levels, levels]), 1, dims=range(8))
    assert rows == [bytes([0b11000000])] * 2
    with pytest.raises(ParameterError, match="whole number of bytes"):
        transform.binarise(levels, 1, dims=[0, 1, 2])
    with pytest.raises(ParameterError, match="bits"):
        transform.binarise(levels, 5)


def test_json_round_trip_is_exact(transform: FeatureTransform, background: LabelledVectors) -> None:
    again = FeatureTransform.from_json(transform.to_json())
    assert again == transform and again.fingerprint == transform.fingerprint
    x = background.samples[:7]
    assert np.array_equal(again.project(x), transform.project(x))
    assert np.array_equal(again.quantise(again.project(x)), transform.quantise(transform.project(x)))
    # Population statistics only: nothing per sample or per identity is in the JSON.
    raw = json.loads(transform.to_json())
    assert set(raw) == {"format", "mean", "scale", "projection", "fisher_ratios", "edges", "training"}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="other"), "not a feature transform"),
        (lambda d: d.pop("edges"), "lacks 'edges'"),
        (lambda d: d["edges"][0].reverse(), "strictly increasing"),
        (lambda d: d["scale"].__setitem__(0, -1.0), "positive"),
        (lambda d: d["mean"].__setitem__(0, float("nan")), "finite"),
        (lambda d: d.update(projection=[[1.0]]), "inconsistent"),
        (lambda d: d.update(edges=[row[:6] for row in d["edges"]]), "power of two"),
    ],
)
def test_from_dict_rejects_malformed_transforms(transform: FeatureTransform, change, message: str) -> None:
    raw = transform.to_dict()
    change(raw)
    with pytest.raises(ParameterError, match=message):
        FeatureTransform.from_dict(raw)


def test_from_json_rejects_garbage() -> None:
    with pytest.raises(ParameterError, match="not valid JSON"):
        FeatureTransform.from_json("{nope")


def test_small_population_is_accepted_with_a_warning_saying_what_it_is_worth() -> None:
    # A 9-identity set (a real voice set has 9 speakers) used to be refused outright.
    with pytest.warns(SmallPopulationWarning, match=r"9 identities .* at most 8 discriminant directions"):
        transform = fit_transform(POP.draw(9, 4, seed=1), levels=8)
    assert 1 <= transform.dimensions <= 8
    assert transform.training["small_population"] is True
    with pytest.raises(ParameterError, match="at least 2 identities"):
        fit_transform(LabelledVectors(np.zeros(4, dtype=int), POP.draw(1, 4, seed=1).samples))


def test_single_sample_identity_is_refused(background: LabelledVectors) -> None:
    data = LabelledVectors(
        np.concatenate([background.identities, [999]]), np.vstack([background.samples, background.samples[:1]])
    )
    with pytest.raises(SampleError, match="1 identity has a single sample"):
        fit_transform(data)


def test_constant_feature_is_refused(background: LabelledVectors) -> None:
    x = background.samples.copy()
    x[:, 3] = 7.0
    with pytest.raises(SampleError, match="feature 3 is constant"):
        fit_transform(LabelledVectors(background.identities, x))


def test_singular_within_covariance_refused_without_shrinkage_and_regularised_with_it() -> None:
    # 40 features, 20 identities × 2 samples: 20 within-identity degrees of freedom < 40.
    data = EmbeddingPopulation(informative=36, useless=4, seed=2).draw(20, 2, seed=1)
    with pytest.raises(ParameterError, match="singular"):
        fit_transform(data, levels=4, shrinkage=0.0)
    t = fit_transform(data, levels=4)  # Ledoit–Wolf
    assert 0.0 < t.training["shrinkage"] <= 1.0
    assert t.dimensions <= 19  # at most J − 1 directions


def test_bad_settings_are_parameter_errors(background: LabelledVectors) -> None:
    for kwargs in ({"levels": 12}, {"levels": 512}, {"dimensions": 0}, {"min_fisher_ratio": 0}, {"shrinkage": 2.0}):
        with pytest.raises(ParameterError):
            fit_transform(background, **kwargs)
    with pytest.raises(ParameterError, match="cannot place 256"):
        fit_transform(POP.draw(12, 2, seed=3), levels=256)
    with pytest.raises(ParameterError, match="Fisher ratio"):
        fit_transform(background, min_fisher_ratio=1e6)


def test_malformed_samples_are_sample_errors(transform: FeatureTransform) -> None:
    with pytest.raises(SampleError, match="15 features"):
        transform.project(np.zeros(14))
    with pytest.raises(SampleError, match="NaN"):
        transform.project(np.full(15, np.nan))
    with pytest.raises(SampleError, match="12 columns"):
        transform.quantise(np.zeros(3))


def test_ledoit_wolf_matches_the_direct_formula() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(30, 6)) @ rng.normal(size=(6, 6))
    x -= x.mean(axis=0)
    n, p = x.shape
    s = x.T @ x / n
    mu = np.trace(s) / p
    d2 = np.sum((s - mu * np.eye(p)) ** 2) / p
    b2 = sum(np.sum((np.outer(r, r) - s) ** 2) / p for r in x) / n**2
    assert ledoit_wolf_shrinkage(x) == pytest.approx(min(b2, d2) / d2, rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-50, 50, allow_nan=False), min_size=12, max_size=12))
def test_levels_are_monotone_in_each_projected_coordinate(transform: FeatureTransform, values: list[float]) -> None:
    y = np.array(values)
    lv = transform.quantise(y)
    assert np.all((lv >= 0) & (lv < 16))
    assert np.all(transform.quantise(y + 1.0) >= lv)


# -- raw float embeddings: no LDA, optional normalisation -----------------------------------------------
def test_whiten_keeps_more_axes_than_identities_and_normalise_ignores_scale() -> None:
    background = EmbeddingPopulation(informative=30, useless=2, seed=3).draw(12, 6, seed=1)
    lda = fit_transform(background, levels=8)
    whiten = fit_transform(background, levels=8, projection="whiten", normalise=True)
    assert lda.dimensions <= 11 < whiten.dimensions  # LDA: at most J - 1 directions for J = 12 people
    assert np.all(np.diff(whiten.fisher_ratios) <= 0)
    # Defaults add nothing to the JSON: transforms written before keep their fingerprints.
    assert "projection" not in lda.training and "normalise" not in lda.training
    again = FeatureTransform.from_json(whiten.to_json())
    assert again == whiten and again.normalises and again.projection_kind == "whiten"
    assert refit_transform(again, background).dimensions == whiten.dimensions

    @settings(max_examples=25, deadline=None)
    @given(st.floats(1e-3, 1e3), st.integers(0, background.samples.shape[0] - 1))
    def scale_free(factor: float, row: int) -> None:
        x = background.samples[row]
        np.testing.assert_allclose(whiten.project(x * factor), whiten.project(x), rtol=1e-9, atol=1e-9)

    scale_free()


@pytest.mark.parametrize(("key", "value"), [("projection", "pca"), ("normalise", "yes")])
def test_transform_json_refuses_unknown_projection_or_normalise(key: str, value: str) -> None:
    raw = fit_transform(EmbeddingPopulation(seed=1).draw(20, 4, seed=1), levels=8).to_dict()
    raw["training"] = {**raw["training"], key: value}
    with pytest.raises(ParameterError, match="projection must be one of"):
        FeatureTransform.from_dict(raw)


def test_normalise_refuses_the_zero_vector() -> None:
    transform = fit_transform(EmbeddingPopulation(seed=1).draw(20, 4, seed=1), levels=8, normalise=True)
    with pytest.raises(SampleError, match="zero vector"):
        transform.project(np.zeros(transform.features))
    with pytest.raises(ParameterError, match="projection must be one of"):
        fit_transform(EmbeddingPopulation(seed=1).draw(20, 4, seed=1), projection="pca")
