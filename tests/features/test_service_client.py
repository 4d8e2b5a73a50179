"""Pipelines against the running service: the transform applied client-side, the sketch server-side."""

from __future__ import annotations

import pytest

pytest.importorskip("fastapi")

from fastapi.testclient import TestClient
from sketchauth_service.app import create_app
from sketchauth_service.pipelines import enrolment_request, verification_request
from sketchauth_service.settings import Settings

from sketchauth.evaluate import fitting
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform

POP = EmbeddingPopulation(informative=16, useless=4, noise_scale=0.4, seed=4)
AUTH = {"Authorization": "Bearer features-test-key-0123456789"}


@pytest.mark.parametrize("kind", [fitting.interval, fitting.thermometer])
def test_enrol_and_verify_through_the_service(kind, tmp_path) -> None:
    transform = fit_transform(POP.draw(160, 5, seed=1), levels=16)
    pipeline = kind.for_target_fmr(transform, POP.draw(60, 5, seed=2), CalibrationOptions(target_fmr=1e-2))
    people = POP.draw(3, 3, seed=3).samples.reshape(3, 3, -1)
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 's.db'}",
        api_keys=("features-test-key-0123456789",),
        hash_profile="test",
        allow_test_profile=True,
    )
    with TestClient(create_app(settings)) as client:
        body = enrolment_request(pipeline, people[0, :1])
        enrolled = client.post("/v1/users/alice/enrolment", json=body, headers=AUTH)
        assert enrolled.status_code == 201, enrolled.text
        assert enrolled.json()["report"]["loss_bound_bits"] == pytest.approx(pipeline.report().loss_bound_bits)
        verdicts = []
        for sample in (people[0, 1], people[0, 2], people[1, 0], people[2, 0]):
            answer = client.post(
                "/v1/users/alice/verification", json=verification_request(pipeline, sample), headers=AUTH
            )
            assert answer.status_code == 200, answer.text
            # The service decides exactly as the pipeline does locally (encode → decode → compare).
            assert answer.json()["verified"] is pipeline.accepts(people[0, :1], sample)
            verdicts.append(answer.json()["verified"])
        # Both outcomes occur (FNMR and FMR are about 1%: the people drawn differ between BLAS builds).
        assert True in verdicts[:2] and False in verdicts[2:]
