"""The angular sketch over HTTP: a 512-D float embedding enrols and verifies, with a PIN too (and a
64-D one on the polar code, "angular-polar"); NaN-free JSON numbers of any dimension within the
limits; the zero vector and a wrong length are refused clearly at enrolment."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from sketchauth_service.schemes import MAX_ANGULAR_DIMENSION, scheme_specs

from sketchauth.client import Client

_USERS = itertools.count()


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.normal(size=n)
    return x / np.linalg.norm(x)


def test_a_512_float_embedding_enrols_and_verifies_with_and_without_a_pin(api: Client) -> None:
    rng = np.random.default_rng(1)
    t = _unit(rng, 512)
    captures = [(t + 0.01 * rng.normal(size=512)).tolist() for _ in range(2)]
    close = (t + 0.01 * rng.normal(size=512)).tolist()  # cos ~ 0.97: within the guaranteed angle
    for pin in (None, "2468-1357"):
        body: dict[str, Any] = {"scheme": "angular", "params": {"dimension": 512, "alpha": 8}, "samples": captures}
        extra = {} if pin is None else {"pin": pin}
        user = f"angular{next(_USERS)}"
        r = api.raw.enrol(user, **body, **extra)
        assert r.status_code == 201, r.text
        assert api.verify(user, close, **extra)
        assert not api.verify(user, _unit(rng, 512).tolist(), **extra)
        if pin is not None:
            assert not api.verify(user, close, pin="0000-0000")


def test_bad_embeddings_are_refused_with_a_clear_problem(api: Client) -> None:
    params = {"dimension": 16, "alpha": 2}
    for sample, words in (([0.0] * 16, "zero vector"), ([1.0] * 15, "16 numbers")):
        r = api.raw.enrol(f"angular{next(_USERS)}", "angular", [sample], params=params)
        assert r.status_code == 422, r.text
        assert r.headers["content-type"].startswith("application/problem+json")
        assert words in r.text


def test_the_published_schema_bounds_the_dimension() -> None:
    schema = scheme_specs()["angular"].params_schema()["properties"]
    assert schema["dimension"]["maximum"] == MAX_ANGULAR_DIMENSION
    assert {o["type"] for o in schema["min_cos"]["anyOf"]} == {"number", "integer"}
    assert all(o["minimum"] == 0 and o["maximum"] == 1 for o in schema["min_cos"]["anyOf"])


def test_a_64_float_embedding_enrols_and_verifies_on_the_polar_code_with_and_without_a_pin(api: Client) -> None:
    rng = np.random.default_rng(2)
    t = _unit(rng, 64)
    captures = [(t + 0.01 * rng.normal(size=64)).tolist() for _ in range(2)]
    close = (t + 0.01 * rng.normal(size=64)).tolist()  # cos ~ 0.997: every rotated sign kept
    params = {"dimension": 64, "bits": 16}
    for pin in (None, "2468-1357"):
        body: dict[str, Any] = {"scheme": "angular-polar", "params": params, "samples": captures}
        extra = {} if pin is None else {"pin": pin}
        user = f"angular{next(_USERS)}"
        r = api.raw.enrol(user, **body, **extra)
        assert r.status_code == 201, r.text
        assert api.verify(user, close, **extra)
        assert not api.verify(user, (-t).tolist(), **extra)
        assert not api.verify(user, _unit(rng, 64).tolist(), **extra)
        if pin is not None:
            assert not api.verify(user, close, pin="0000-0000")
    r = api.raw.enrol(f"angular{next(_USERS)}", "angular-polar", captures, params={"dimension": 64, "bits": 64})
    assert r.status_code == 422, r.text  # bits < dimension
    assert "bits" in r.text


def test_the_published_schema_bounds_the_polar_parameters() -> None:
    schema = scheme_specs()["angular-polar"].params_schema()["properties"]
    assert schema["dimension"]["maximum"] == MAX_ANGULAR_DIMENSION
    assert (schema["list_size"]["minimum"], schema["list_size"]["maximum"]) == (1, 128)
    assert all(o["minimum"] == 0 and o["maximum"] == 1 for o in schema["min_cos"]["anyOf"])
