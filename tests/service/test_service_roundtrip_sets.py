"""Round-trip properties of the set schemes and code-offset through the HTTP service (with and without a PIN).

The same acceptance conditions as the library properties (``tests/core/sketches/test_roundtrip_sets.py``),
over JSON: sets arrive as lists in any order (integers, or integral floats), byte strings as lists of
integers. The enrolment sample verifies, a sample within tolerance verifies, one beyond does not:

* PinSketch ``(m, t)``: iff ``|A Δ B| ≤ t``;
* FuzzyVault ``(p, m, t)``: iff ``|d' \\ d| ≤ t`` (samples of ``m`` elements);
* WeightedFuzzyVault ``(p, q, g, t)``, enrolled from several captured sets: the template is the
  library's public rule (``sketchauth.templates.enrol_weighted_set(..., total=g)``, which the
  service applies), and a sample verifies iff ``c − w ≥ g − 2t``;
* CodeOffsetSketch ``(n, t)``: iff at most ``t`` bytes differ.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from service_testing import AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.schemes import available_schemes

from sketchauth.errors import SampleError
from sketchauth.templates import enrol_weighted_set

OFFERED = {s.name for s in available_schemes()}
PIN = "2468-1357"
USERS = itertools.count()
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    """One app for the whole module (hypothesis runs many examples per test; users never repeat)."""
    with TestClient(create_app(test_settings(tmp_path_factory.mktemp("roundtrip")))) as client:
        yield client


class Session:
    """One fresh user: enrol once, then verify samples (at most two failures, far from the lockout)."""

    def __init__(self, client: TestClient, pin: bool) -> None:
        self.client, self.user, self.extra = client, f"user-{next(USERS)}", ({"pin": PIN} if pin else {})

    def enrol(self, scheme: str, params: dict[str, Any], samples: list[list[Any]]) -> Any:
        body = {"scheme": scheme, "params": params, "samples": samples, **self.extra}
        return self.client.post(f"/v1/users/{self.user}/enrolment", headers=AUTH, json=body)

    def verify(self, sample: list[Any]) -> bool:
        r = self.client.post(f"/v1/users/{self.user}/verification", headers=AUTH, json={"sample": sample, **self.extra})
        assert r.status_code == 200, r.text
        return bool(r.json()["verified"])


def _as_json_set(data: st.DataObject, elements: list[int], label: str) -> list[Any]:
    """A set as JSON: any order, integers or integral floats."""
    order = data.draw(st.permutations(elements), label=f"{label} order")
    if data.draw(st.booleans(), label=f"{label} as floats"):
        return [float(x) for x in order]
    return list(order)


PIN_IDS = ["plain", "pin"]


@pytest.mark.skipif("pinsketch" not in OFFERED, reason="no PinSketch in this tree")
@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@pytest.mark.parametrize(("m", "max_t"), [(8, 8), (32, 16)], ids=["small-m", "large-m"])
@SETTINGS
@given(data=st.data())
def test_pinsketch_over_http(http: TestClient, pin: bool, m: int, max_t: int, data: st.DataObject) -> None:
    t = data.draw(st.integers(1, max_t), label="t")
    universe = st.integers(1, (1 << m) - 1)
    secret = data.draw(st.lists(universe, unique=True, min_size=1, max_size=24), label="A")
    session = Session(http, pin)
    r = session.enrol("pinsketch", {"m": m, "t": t}, [_as_json_set(data, secret, "secret")])
    assert r.status_code == 201, r.text
    assert session.verify(_as_json_set(data, secret, "enrolment sample"))
    within = data.draw(st.lists(universe, unique=True, max_size=t), label="D within")
    close = sorted(set(secret) ^ set(within))
    if close:  # an empty sample is not a JSON sample
        assert session.verify(_as_json_set(data, close, "close sample"))
    beyond = data.draw(st.lists(universe, unique=True, min_size=t + 1, max_size=t + 6), label="D beyond")
    far = sorted(set(secret) ^ set(beyond))
    if far:
        assert not session.verify(_as_json_set(data, far, "far sample"))


@pytest.mark.skipif("fuzzy-vault" not in OFFERED, reason="no fuzzy vault in this tree")
@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@SETTINGS
@given(data=st.data())
def test_fuzzy_vault_over_http(http: TestClient, pin: bool, data: st.DataObject) -> None:
    p = data.draw(st.sampled_from([13, 97, 257]), label="p")
    m = data.draw(st.integers(1, min(p - 1, 16)), label="m")
    t = data.draw(st.integers(0, (m - 1) // 2), label="t")
    secret = data.draw(st.lists(st.integers(0, p - 1), unique=True, min_size=m, max_size=m), label="d")
    session = Session(http, pin)
    r = session.enrol("fuzzy-vault", {"p": p, "m": m, "t": t}, [_as_json_set(data, secret, "secret")])
    assert r.status_code == 201, r.text
    assert session.verify(_as_json_set(data, secret, "enrolment sample"))
    others = [x for x in range(p) if x not in secret]
    for label in ("first", "second"):
        wrong = data.draw(st.integers(0, min(m, len(others))), label=f"{label} wrong elements")
        kept = data.draw(st.permutations(secret), label=f"{label} kept")[: m - wrong]
        sample = kept + data.draw(st.permutations(others), label=f"{label} replacements")[:wrong]
        assert session.verify(_as_json_set(data, sample, f"{label} sample")) == (wrong <= t)


@pytest.mark.skipif("weighted-vault" not in OFFERED, reason="no weighted vault in this tree")
@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@SETTINGS
@given(data=st.data())
def test_weighted_vault_over_http(http: TestClient, pin: bool, data: st.DataObject) -> None:
    p = data.draw(st.integers(8, 60), label="p")
    q = data.draw(st.integers(3, 6), label="q")
    core = data.draw(st.lists(st.integers(0, p - 1), unique=True, min_size=1, max_size=6), label="steady elements")
    noise = st.lists(st.integers(0, p - 1), unique=True, max_size=3)
    captures = [
        sorted(set(core) | set(data.draw(noise, label="noise")))
        for _ in range(data.draw(st.integers(2, 4), label="captures"))
    ]
    g = data.draw(st.integers(1, len(core) * (q - 1)), label="g")
    t = data.draw(st.integers(0, (g - 1) // 2), label="t")
    session = Session(http, pin)
    r = session.enrol(
        "weighted-vault", {"p": p, "q": q, "g": g, "t": t}, [_as_json_set(data, c, "capture") for c in captures]
    )
    try:
        elements, weights = enrol_weighted_set(captures, q, p=p, total=g)
    except SampleError:
        assert r.status_code == 422, r.text  # the captures cannot carry total weight g
        return
    assert r.status_code == 201, r.text
    weight_of = dict(zip(elements.tolist(), weights.tolist(), strict=False))

    def accepts(sample: list[int]) -> bool:
        c = sum(weight_of.get(x, 0) for x in sample)
        return c - (q * len(sample) - c) >= g - 2 * t

    template = sorted(weight_of)
    assert session.verify(_as_json_set(data, template, "template")) == accepts(template)
    kept = data.draw(st.lists(st.sampled_from(template), unique=True), label="kept")
    extra = data.draw(
        st.lists(st.integers(0, p - 1).filter(lambda x: x not in weight_of), unique=True, max_size=3), label="extra"
    )
    if kept + extra:
        assert session.verify(_as_json_set(data, kept + extra, "sample")) == accepts(kept + extra)


@pytest.mark.skipif("code-offset" not in OFFERED, reason="no code-offset sketch in this tree")
@pytest.mark.parametrize("pin", [False, True], ids=PIN_IDS)
@SETTINGS
@given(data=st.data())
def test_code_offset_over_http(http: TestClient, pin: bool, data: st.DataObject) -> None:
    n = data.draw(st.integers(3, 64), label="n")
    t = data.draw(st.integers(1, (n - 1) // 2), label="t")
    w = data.draw(st.binary(min_size=n, max_size=n), label="w")
    session = Session(http, pin)
    assert session.enrol("code-offset", {"n": n, "t": t}, [list(w)]).status_code == 201
    assert session.verify(list(w))
    for label in ("first", "second"):
        errors = data.draw(st.integers(0, n), label=f"{label} byte errors")
        noisy = bytearray(w)
        for i in data.draw(st.permutations(range(n)), label=f"{label} positions")[:errors]:
            noisy[i] ^= data.draw(st.integers(1, 255), label="flip")
        assert session.verify(list(noisy)) == (errors <= t)
