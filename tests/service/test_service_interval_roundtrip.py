"""The interval family over HTTP: real, signed and integer features, with and without a PIN.

Round trips through ``POST /v1/users/{id}/enrolment`` and ``/verification`` (TestClient, temp
SQLite, argon2 "test" profile) for every parameter form — integer levels, a real ``step``, signed
features with an ``offset``, an integer ``offset``, the asymmetric sketches s1 and s2 — each also
under a PIN cascade: the enrolment sample verifies, a sample within tolerance verifies, one
beyond does not; a value outside the sketch's range is a 422 problem naming the feature and the
range at enrolment, and at verification a counted failure answered ``200 {"verified": false}``
like any other (the range is the enrolment's: naming it would tell the id is enrolled).

Samples respect the quantisation as in ``tests/core/sketches/test_interval_roundtrip.py``: levels are
drawn and turned into values ``offset + (ℓ + u)·step`` with ``|u| ≤ 0.4``, which have level ``ℓ``
exactly; within tolerance means ``|ℓ_j − b_j| ≤ v_j − 1`` for every feature, beyond means some
``|ℓ_j − b_j| ≥ v_j`` (s2 also accepts ``ℓ = b − v``: beyond is ``ℓ − b < −v`` there).
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from service_testing import AUTH

from sketchauth.client import Client

_USERS = itertools.count()
PIN = "1357-2468"
STEPS = st.sampled_from([0.01, 0.1, 0.25, 0.5, 2.0])


def _values(params: dict[str, Any], levels: np.ndarray, jitter: list[float]) -> list[Any]:
    step, offset = params.get("step"), params.get("offset", 0)
    if step is None:
        return [int(x) + offset for x in levels]
    return [offset + (int(x) + u) * step for x, u in zip(levels, jitter, strict=False)]


@st.composite
def forms(draw: st.DrawFn) -> tuple[str, dict[str, Any], np.ndarray, np.ndarray]:
    """(scheme, params, enrolled levels b, tolerances v)."""
    scheme = draw(st.sampled_from(["interval", "asymmetric-interval"]))
    kind = draw(
        st.sampled_from(
            ["integer", "step", "signed", "int-offset"] if scheme == "interval" else ["integer", "step", "signed"]
        )
    )
    features = draw(st.integers(1, 4))
    n = draw(st.integers(4, 400))
    params: dict[str, Any] = {"n": n, "features": features}
    if kind in ("step", "signed"):
        params["step"] = draw(STEPS)
    if kind == "signed":
        params["offset"] = -draw(st.integers(1, 500)) * params["step"]
    if kind == "int-offset":
        params["offset"] = draw(st.integers(-1000, 1000)) or 1
    b = np.array(draw(st.lists(st.integers(0, n - 1), min_size=features, max_size=features)))
    if scheme == "interval":
        v = draw(st.lists(st.integers(1, n // 2), min_size=features, max_size=features))
        params["v"] = v
        return scheme, params, b, np.array(v)
    q = draw(st.integers(3, min(n, 12)))
    params.update(q=q, scheme=draw(st.sampled_from(["s1", "s2", "s3"])))
    return scheme, params, b, np.zeros(features, dtype=np.int64)  # v comes from the captures


def _within(draw: st.DrawFn, b: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    return np.array(
        [
            draw(st.integers(max(0, x - t + 1), min(n - 1, x + t - 1)))
            for x, t in zip(b.tolist(), v.tolist(), strict=False)
        ]
    )


def _beyond(draw: st.DrawFn, b: np.ndarray, v: np.ndarray, n: int, s2: bool) -> np.ndarray:
    d = _within(draw, b, v, n)
    j = draw(st.integers(0, b.size - 1))
    options = [x for x in (int(b[j] + v[j]), int(b[j] - v[j] - (1 if s2 else 0))) if 0 <= x < n]
    assume(options)
    d[j] = draw(st.sampled_from(options))
    return d


def _jitter(draw: st.DrawFn, size: int) -> list[float]:
    return draw(st.lists(st.floats(-0.4, 0.4), min_size=size, max_size=size))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(forms(), st.booleans(), st.data())
def test_every_interval_form_round_trips_over_http(api: Client, form: Any, with_pin: bool, data: st.DataObject) -> None:
    scheme, params, b, v = form
    n, pin = params["n"], (PIN if with_pin else None)
    user = f"u{next(_USERS)}"
    body: dict[str, Any] = {"scheme": scheme, "params": params}
    if with_pin:
        body["pin"] = PIN
    if scheme == "interval":
        enrolment = _values(params, b, _jitter(data.draw, b.size))
        body["samples"] = [enrolment]
    else:
        # Captures within ⌊(q − 1)/2⌋ levels of b: the service derives b' = rounded mean and
        # v = range + 1 (templates.enrol_interval), never clipped at q here.
        half = (params["q"] - 1) // 2
        levels = np.array(
            [[data.draw(st.integers(max(0, x - half), min(n - 1, x + half))) for x in b.tolist()] for _ in range(3)]
        )
        body["samples"] = [_values(params, row, _jitter(data.draw, b.size)) for row in levels]
        enrolment = body["samples"][0]
        b = (2 * levels.sum(axis=0) + 3) // 6
        v = levels.max(axis=0) - levels.min(axis=0) + 1
    r = api.raw.enrol(user, **body)
    assert r.status_code == 201, r.text
    assert r.json()["params"].get("offset") == params.get("offset")
    assert api.raw.verify(user, enrolment, pin=pin).json() == {"verified": True}
    near = _values(params, _within(data.draw, b, v, n), _jitter(data.draw, b.size))
    assert api.raw.verify(user, near, pin=pin).json() == {"verified": True}
    s2 = params.get("scheme") in ("s2", "s3")  # both assign b − v to the interval on its right
    far = _values(params, _beyond(data.draw, b, v, n, s2), _jitter(data.draw, b.size))
    assert api.raw.verify(user, far, pin=pin).json() == {"verified": False}
    if with_pin:
        assert api.raw.verify(user, near, pin=PIN + "9").json() == {"verified": False}


def test_real_valued_enrolment_with_a_pin_verifies(api: Client) -> None:
    body = {
        "scheme": "interval",
        "params": {"n": 256, "v": 8, "features": 3, "step": 0.5},
        "samples": [[1.25, 2.5, 3.75]],
        "pin": PIN,
    }
    assert api.raw.enrol("alice", **body).status_code == 201
    assert api.raw.verify("alice", [1.25, 2.5, 3.75], pin=PIN).json() == {"verified": True}
    assert api.raw.verify("alice", [4.75, 6.0, 3.75], pin=PIN).json() == {"verified": True}  # 7 levels away
    assert api.raw.verify("alice", [5.25, 2.5, 3.75], pin=PIN).json() == {"verified": False}  # 8 levels away


def test_values_outside_the_range_are_422_and_a_counted_failure(api: Client, sqlite_store: Any) -> None:
    params = {"n": 256, "v": 8, "features": 3, "step": 0.5}
    r = api.raw.enrol("bob", "interval", [[1.0, -0.3, 2.0]], params=params)
    assert r.status_code == 422 and r.headers["content-type"] == "application/problem+json"
    assert "feature 1 lies outside [-0.25, 127.75)" in r.json()["detail"]
    assert api.raw.enrol("bob", "interval", [[1.0, 0.3, 2.0]], params=params).status_code == 201
    r = api.raw.verify("bob", [1.0, -0.3, 2.0])
    # Answered like any failure: the range is the enrolment's, so a 422 would reveal it.
    assert r.status_code == 200 and r.json() == {"verified": False}
    # A malformed sample is a counted failure (it must not be a free probe of the enrolment).
    assert sqlite_store.get("bob").failures == 1


def test_signed_features_with_an_offset(api: Client, client: TestClient) -> None:
    params = {"n": 201, "v": 5, "features": 2, "step": 0.01, "offset": -1.0}
    r = api.raw.enrol("carol", "interval", [[-0.73, 0.41]], params=params)
    assert r.status_code == 201 and r.json()["params"] == params
    assert api.raw.verify("carol", [-0.69, 0.37]).json() == {"verified": True}
    assert api.raw.verify("carol", [-0.68, 0.41]).json() == {"verified": False}
    # Out of the enrolment's range: a failed attempt like any other (a 422 would reveal the range).
    assert api.raw.verify("carol", [-1.2, 0.41]).json() == {"verified": False}
    bad = api.raw.enrol("dave", "interval", [[1, 2]], params={**params, "step": None, "offset": -1.5})
    assert bad.status_code == 422 and "integer" in bad.json()["detail"]
    schemes = {s["name"]: s for s in client.get("/v1/schemes", headers=AUTH).json()["schemes"]}
    for name in ("interval", "asymmetric-interval"):
        assert "offset" in schemes[name]["params_schema"]["properties"]
