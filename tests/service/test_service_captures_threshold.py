"""An attempt of several captures is decided at the threshold calibrated for that many captures.

The pipeline here is built by hand so that the thresholds are far apart: ``min_cos`` 0.9995 for
one capture, 0.5 for two or three (a fitted pipeline's differ less: ``calibrate_captures``). The
genuine captures are the enrolled one moved by 5 % (cos ≈ 0.998 after the transform): one of them,
or two under one capture's threshold, is refused; two at the two-capture threshold are accepted,
through the pipeline's own sketch and through the PIN cascade around it. Nothing else changes:
a stranger's captures are refused at every threshold.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastapi.testclient import TestClient
from service_testing import AUTH, test_settings
from sketchauth_service.settings import Settings

from sketchauth.client import Client
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.features.angular import AngularPipeline

POP = EmbeddingPopulation(informative=32, useless=2, noise_scale=0.1, between_decay=1.0, seed=5)
PIN = "2718-2818"


def _pipeline(captures_min_cos: dict[int, float] | None) -> AngularPipeline:
    transform = fit_transform(POP.draw(60, 4, seed=1), projection="centre", normalise=True)
    dims = np.arange(transform.dimensions)
    return AngularPipeline(transform, dims, bits=24, list_size=8, min_cos=0.9995, captures_min_cos=captures_min_cos)


def _moved(x: np.ndarray, seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    return (x + 0.05 * np.linalg.norm(x) / math.sqrt(x.size) * rng.normal(size=x.size)).tolist()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    directory = tmp_path / "pipelines"
    directory.mkdir()
    (directory / "per-k.json").write_text(_pipeline({2: 0.5, 3: 0.5}).to_json() + "\n")
    (directory / "one-k.json").write_text(_pipeline(None).to_json() + "\n")
    return test_settings(tmp_path, pipelines_dir=str(directory))


def _attempt(client: TestClient, user: str, captures: list[Any], **extra: Any) -> bool:
    r = client.post(f"/v1/users/{user}/verification", headers=AUTH, json={"samples": captures, **extra})
    assert r.status_code == 200, r.text
    return bool(r.json()["verified"])


@pytest.mark.parametrize("pin", [None, PIN])
def test_two_captures_are_decided_at_their_own_threshold(client: TestClient, api: Client, pin: str | None) -> None:
    person, stranger = POP.draw(1, 1, seed=3).samples[0], POP.draw(1, 2, seed=4).samples
    extra = {} if pin is None else {"pin": pin}
    for name in ("per-k", "one-k"):
        assert api.raw.enrol(name, f"pipeline:{name}", [person.tolist()], pin=pin).status_code == 201
    one, two = [_moved(person, 1)], [_moved(person, 1), _moved(person, 2)]
    assert not _attempt(client, "per-k", one, **extra)  # one capture: cos 0.998 < 0.9995
    assert _attempt(client, "per-k", two, **extra)  # two: the two-capture threshold 0.5
    assert not _attempt(client, "one-k", two, **extra)  # the same two under one capture's threshold
    assert not _attempt(client, "per-k", stranger.tolist(), **extra)
    if pin is not None:
        assert not _attempt(client, "per-k", two, pin="2718-2819")
