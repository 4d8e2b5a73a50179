"""Verification of the angular pipeline with several captures of one attempt (average, then decode once)."""

from __future__ import annotations

import numpy as np
import pytest

from sketchauth.enrolment import hasher
from sketchauth.errors import SampleError
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.features.angular import MAX_VERIFY_CAPTURES, AngularPipeline

# Noisy captures (noise 0.6 of the between-people spread): single probes often miss, averages less so.
POP = EmbeddingPopulation(informative=32, useless=2, noise_scale=0.6, between_decay=1.0, seed=7)
TEST_HASH = hasher("test")


@pytest.fixture(scope="module")
def pipeline() -> AngularPipeline:
    transform = fit_transform(POP.draw(60, 4, seed=1), projection="centre", normalise=True)
    return AngularPipeline(transform, np.arange(transform.dimensions), alpha=3, min_cos=0.0)


def _unit(x: np.ndarray) -> np.ndarray:
    return np.asarray(x / np.linalg.norm(x, axis=-1, keepdims=True))


def test_the_probe_is_the_normalised_mean_of_the_projected_directions(pipeline: AngularPipeline) -> None:
    captures = POP.draw(1, 3, seed=3).samples
    projected = _unit(np.stack([pipeline.sample_transform(c) for c in captures]))
    expected = _unit(projected.mean(axis=0))
    assert np.allclose(pipeline.captures_transform(captures), expected, atol=1e-12)
    one = pipeline.captures_transform(captures[:1])
    assert np.allclose(one, _unit(pipeline.sample_transform(captures[0])), atol=1e-12)


def test_averaged_captures_verify_more_genuine_attempts_and_no_impostor(pipeline: AngularPipeline) -> None:
    """Over 40 people: the mean of three noisy captures decodes more often than the first capture
    alone, and an impostor's three captures are refused as their single ones are."""
    people = POP.draw(40, 5, seed=11)
    x, labels = people.samples, people.identities
    single = triple = impostor = 0
    owners = sorted(set(labels.tolist()))
    for k, person in enumerate(owners):
        own = x[labels == person]
        other = x[labels == owners[(k + 1) % len(owners)]]
        secret = pipeline.sketch.check_secret(pipeline._template(own[:1]))
        helper = pipeline.sketch.encode(secret)
        single += int(_decodes(pipeline, helper, secret, pipeline.sample_transform(own[1])))
        triple += int(_decodes(pipeline, helper, secret, pipeline.captures_transform(own[1:4])))
        impostor += int(_decodes(pipeline, helper, secret, pipeline.captures_transform(other[:3])))
    assert triple > single and impostor == 0


def _decodes(pipeline: AngularPipeline, helper: bytes, secret: object, probe: np.ndarray) -> bool:
    try:
        return bool(np.array_equal(pipeline.sketch.decode(helper, probe), np.asarray(secret)))
    except Exception:  # DecodeError: refused
        return False


def test_verify_captures_runs_the_real_hash_check(pipeline: AngularPipeline) -> None:
    own = POP.draw(1, 4, seed=21).samples
    other = POP.draw(1, 3, seed=22).samples
    record = pipeline.enrol(own[:1], password_hasher=TEST_HASH)
    assert pipeline.verify_captures(record, own[:1], password_hasher=TEST_HASH)
    assert not pipeline.verify_captures(record, other, password_hasher=TEST_HASH)


@pytest.mark.parametrize(
    "bad",
    [np.zeros((0, 34)), np.ones((MAX_VERIFY_CAPTURES + 1, 34)), np.ones(34), np.ones((2, 33)), [["a"] * 34]],
)
def test_refuses_other_than_one_to_three_captures(pipeline: AngularPipeline, bad: object) -> None:
    with pytest.raises(SampleError):
        pipeline.captures_transform(bad)


# -- the threshold for several captures -------------------------------------------------------------
def _polar(captures_min_cos: dict[int, float] | None, min_cos: float = 0.9) -> AngularPipeline:
    transform = fit_transform(POP.draw(60, 4, seed=1), projection="centre", normalise=True)
    dims = np.arange(transform.dimensions)
    return AngularPipeline(transform, dims, bits=24, list_size=8, min_cos=min_cos, captures_min_cos=captures_min_cos)


def test_the_captures_thresholds_round_trip_and_name_the_pipeline() -> None:
    from sketchauth.features.loading import load_pipeline

    plain, per_k = _polar(None), _polar({2: 0.7, 3: 0.6})
    assert "captures_min_cos" not in plain.to_json()  # a pipeline without them: the same file as before
    assert per_k.to_dict()["settings"] == {"captures_min_cos": {"2": 0.7, "3": 0.6}}
    again = load_pipeline(per_k.to_json())
    assert isinstance(again, AngularPipeline) and again.captures_min_cos == {2: 0.7, 3: 0.6}
    assert again.fingerprint == per_k.fingerprint != plain.fingerprint
    assert any("k = 2" in note for note in per_k.report().notes)


@pytest.mark.parametrize(
    "settings",
    [
        {"captures_min_cos": {"1": 0.5}},
        {"captures_min_cos": {"4": 0.5}},
        {"captures_min_cos": {"2.0": 0.5}},
        {"captures_min_cos": {"2": 1.5}},
        {"captures_min_cos": {"2": True}},
        {"captures_min_cos": {"2": "0.5"}},
        {"captures_min_cos": [0.5]},
        {"captures_min_cos": {}, "other": 1},
        [],
    ],
)
def test_a_pipeline_file_with_bad_captures_thresholds_is_refused(settings: object) -> None:
    import json

    from sketchauth.errors import ParameterError
    from sketchauth.features.loading import load_pipeline

    raw = _polar(None).to_dict()
    raw["settings"] = settings
    with pytest.raises(ParameterError, match=r"captures_min_cos|settings"):
        load_pipeline(json.dumps(raw))


def test_each_number_of_captures_is_decided_at_its_threshold_with_the_same_helper() -> None:
    from sketchauth.errors import ParameterError

    pipeline = _polar({2: 0.5}, min_cos=0.9995)
    assert pipeline.sketch_for_captures(1) is pipeline.sketch
    assert pipeline.sketch_for_captures(3) is pipeline.sketch  # no threshold of its own: one capture's
    two = pipeline.sketch_for_captures(2)
    assert two.params() == pipeline.sketch.params() and two.decision_cos == 0.5
    assert pipeline.sketch.decision_cos == 0.9995
    for bad in (0, 4, True, 2.0):
        with pytest.raises(SampleError):
            pipeline.sketch_for_captures(bad)  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        pipeline.sketch.deciding_at(1.5)
    person = POP.draw(1, 1, seed=3).samples[0]
    rng = np.random.default_rng(0)
    scale = 0.05 * np.linalg.norm(person) / np.sqrt(person.size)
    moved = [person + scale * rng.normal(size=person.size) for _ in range(2)]
    record = pipeline.enrol(person[None], password_hasher=TEST_HASH)
    assert not pipeline.verify_captures(record, moved[:1], password_hasher=TEST_HASH)  # cos ≈ 0.998 < 0.9995
    assert pipeline.verify_captures(record, moved, password_hasher=TEST_HASH)  # two: at 0.5
    assert not _polar(None, min_cos=0.9995).verify_captures(record, moved, password_hasher=TEST_HASH)
