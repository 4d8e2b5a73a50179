"""Least privilege: every endpoint × every scope, as documented, enforced and published.

A ``verify``-only key used to change PINs (the scope was chosen by the route's last path segment,
and ``pin`` was listed with verification). Now every route states the scopes it accepts; this
module reads the table of ``docs/service/configuration.md`` and checks, for every ``/v1``
operation of the app and every scope, that a key holding only that scope is let through exactly
where the table ticks it (403 elsewhere), that no key is 401 everywhere, that the OpenAPI
``security`` of each operation lists the same scopes, and that the table names every operation.
Also: deleting or emptying the key file revokes its keys.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from service_testing import REPO, test_settings
from sketchauth_service.api.deps import api_routes, route_scopes
from sketchauth_service.app import create_app
from sketchauth_service.credentials import SCOPES, KeySource

DOC = REPO / "docs" / "service" / "configuration.md"
KEYS = {scope: f"{scope}-only-key-{'x' * 24}" for scope in sorted(SCOPES)}
_ROW = re.compile(r"^\| `(GET|POST|DELETE|PUT|PATCH) (/v1/[^`]*)` \|(.*)\|\s*$")


def documented() -> dict[tuple[str, str], frozenset[str]]:
    """``(method, path) -> scopes ticked`` from the scopes table of the configuration page."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    header = next(line for line in lines if line.startswith("| call | `enrol`"))
    columns = [cell.strip().strip("`") for cell in header.strip("|").split("|")[1:]]
    table: dict[tuple[str, str], frozenset[str]] = {}
    for line in lines:
        match = _ROW.match(line)
        if match:
            cells = [cell.strip() for cell in match.group(3).split("|")]
            table[(match.group(1), match.group(2))] = frozenset(
                scope for scope, cell in zip(columns, cells, strict=True) if cell == "✓"
            )
    return table


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    directory = tmp_path_factory.mktemp("scopes")
    key_file = directory / "keys"
    key_file.write_text("".join(f"{scope}-holder:{scope}:{key}\n" for scope, key in KEYS.items()))
    settings = test_settings(directory, api_key_file=str(key_file), auth_failure_burst=10_000)
    with TestClient(create_app(settings)) as c:
        yield c


def operations(client: TestClient) -> list[tuple[str, str, APIRoute]]:
    return sorted(
        (method, route.path, route)
        for route in api_routes(client.app)  # type: ignore[arg-type]
        if route.path.startswith("/v1/")
        for method in route.methods
    )


def _call(client: TestClient, method: str, path: str, key: str | None) -> int:
    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    concrete = path.replace("{user_id}", "scope-probe")
    if method == "POST":  # an empty object: an allowed key gets past the scope check to 404/409/422
        return client.request(method, concrete, headers=headers, json={}).status_code
    return client.request(method, concrete, headers=headers).status_code


def test_the_documented_table_names_every_operation(client: TestClient) -> None:
    table = documented()
    served = {(method, path) for method, path, _ in operations(client)}
    assert set(table) == served
    assert all(scopes <= SCOPES for scopes in table.values())


def test_the_app_states_the_documented_scopes(client: TestClient) -> None:
    table = documented()
    for method, path, route in operations(client):
        stated = route_scopes(route)
        assert stated is not None, (method, path)
        expected = table[(method, path)]
        # () states "any key", which the table writes as every scope ticked.
        assert (frozenset(stated) or SCOPES) == expected, (method, path, stated)


@pytest.mark.parametrize("scope", sorted(SCOPES))
def test_every_endpoint_for_a_key_of_one_scope(client: TestClient, scope: str) -> None:
    problems = []
    for (method, path), allowed in sorted(documented().items()):
        status = _call(client, method, path, KEYS[scope])
        if scope in allowed and status in (401, 403):
            problems.append(f"{method} {path}: a {scope!r} key was refused ({status})")
        if scope not in allowed and status != 403:
            problems.append(f"{method} {path}: a {scope!r} key was let through ({status})")
    assert not problems, "\n".join(problems)


def test_every_endpoint_needs_a_key(client: TestClient) -> None:
    for method, path in documented():
        assert _call(client, method, path, None) == 401, (method, path)
        assert _call(client, method, path, "not-a-configured-key-0123456789") == 401, (method, path)


def test_a_verify_key_cannot_change_a_pin(client: TestClient) -> None:
    enrol = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
    body = {**enrol, "pin": "1234-old"}
    assert client.post("/v1/users/pinned/enrolment", json=body, headers=_bearer("enrol")).status_code == 201
    change = {"sample": [123, 30, 205, 71], "pin": "1234-old", "new_pin": "5678-new"}
    refused = client.post("/v1/users/pinned/pin", json=change, headers=_bearer("verify"))
    assert refused.status_code == 403 and refused.headers["content-type"] == "application/problem+json"
    assert "'pin' or 'enrol'" in refused.json()["detail"]
    assert client.post("/v1/users/pinned/pin", json=change, headers=_bearer("pin")).json() == {"verified": True}
    verify = {"sample": [123, 30, 205, 71], "pin": "5678-new"}
    assert client.post("/v1/users/pinned/verification", json=verify, headers=_bearer("verify")).json() == {
        "verified": True
    }


def test_the_pin_scope_is_no_verification_oracle(client: TestClient) -> None:
    # A PIN "change" to the same PIN answered verified true/false and changed nothing: a pure
    # verification oracle for a key that may not verify. Now it is refused before any work, alike
    # for a genuine and an impostor sample, and nothing is counted.
    enrol = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
    assert (
        client.post("/v1/users/oracle/enrolment", json={**enrol, "pin": "1234-old"}, headers=_bearer("enrol"))
    ).status_code == 201
    answers = []
    for sample in ([123, 30, 205, 71], [20, 130, 5, 250]):
        same = {"sample": sample, "pin": "1234-old", "new_pin": "1234-old"}
        refused = client.post("/v1/users/oracle/pin", json=same, headers=_bearer("pin"))
        assert refused.status_code == 422 and refused.json()["type"].endswith("/same-pin"), refused.text
        answers.append((refused.status_code, refused.json()))
    assert answers[0] == answers[1]
    trail = client.get("/v1/admin/users/oracle/audit", headers=_bearer("admin")).json()["events"]
    assert [e["event"] for e in trail] == ["enrol"]  # no attempt was claimed
    change = {"sample": [123, 30, 205, 71], "pin": "1234-old", "new_pin": "5678-new"}
    assert client.post("/v1/users/oracle/pin", json=change, headers=_bearer("pin")).json() == {"verified": True}


def test_the_document_publishes_one_alternative_per_scope(client: TestClient) -> None:
    document = client.get("/openapi.json").json()
    for (method, path), allowed in documented().items():
        security = document["paths"][path][method.lower()]["security"]
        scheme = "AdminKey" if allowed == {"admin"} else "HTTPBearer"
        if allowed == SCOPES:  # any key
            assert security == [{scheme: []}], (method, path, security)
        else:
            assert sorted(security, key=str) == sorted(({scheme: [s]} for s in allowed), key=str), (method, path)


def _bearer(scope: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {KEYS[scope]}"}


# -- revocation through the key file ----------------------------------------------------------------


def _touch_later(path: Path) -> None:
    later = time.time_ns() + 10**9
    if path.exists():
        os.utime(path, ns=(later, later))


@pytest.mark.parametrize("how", ["delete", "empty"])
def test_deleting_or_emptying_the_key_file_revokes_its_keys(tmp_path: Path, how: str) -> None:
    clock = [0.0]
    path = tmp_path / "keys"
    path.write_text(f"kiosk:verify:{KEYS['verify']}\n")
    source = KeySource(("environment-key-" + "y" * 22,), (), str(path), monotonic=lambda: clock[0])
    assert source.current().match(KEYS["verify"]) is not None
    if how == "delete":
        path.unlink()
    else:
        path.write_text("")
        _touch_later(path)
    clock[0] = 2.0
    assert source.current().match(KEYS["verify"]) is None
    assert source.current().names == ("api-key-1",)  # the environment's keys are not the file's
    path.write_text(f"kiosk:verify:{KEYS['verify']}\n")  # put back: in force again
    _touch_later(path)
    clock[0] = 4.0
    assert source.current().match(KEYS["verify"]) is not None


def test_a_deleted_key_file_revokes_through_the_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from sketchauth_service import credentials

    monkeypatch.setattr(credentials, "RELOAD_CHECK_SECONDS", 0.0)
    path = tmp_path / "keys"
    path.write_text(f"kiosk:verify:{KEYS['verify']}\n")
    with TestClient(create_app(test_settings(tmp_path, api_key_file=str(path)))) as c:
        headers = _bearer("verify")
        assert c.post("/v1/users/x/verification", json={"sample": [1]}, headers=headers).status_code == 200
        path.unlink()
        assert c.post("/v1/users/x/verification", json={"sample": [1]}, headers=headers).status_code == 401


def test_a_v1_route_without_a_scope_is_refused_at_build(tmp_path: Path) -> None:
    from sketchauth_service.api.deps import check_every_route_is_scoped

    app = create_app(test_settings(tmp_path))
    check_every_route_is_scoped(app)
    app.add_api_route("/v1/unguarded", lambda: {}, methods=["GET"])
    with pytest.raises(RuntimeError, match=r"without a scope.*/v1/unguarded"):
        check_every_route_is_scoped(app)
