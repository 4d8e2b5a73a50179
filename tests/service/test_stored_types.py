"""Wrong-typed values written into a user's row: a counted ``integrity`` failure, never a 500.

SQLite keeps whatever a writer puts in a column. A record version of ``-1``, ``'abc'`` or
``1e30``, a nonce ``'zz'``, helper data ``'txt'``, a failure count ``'x'``, a wait ``'x'`` or
``inf`` and an enrolment time ``'x'`` each answered ``500`` on verification and key release, with
no audit event and no counted failure. Now the store checks every column of a row before it is
used (``sketchauth_service.store.sql.checked_row``): the attempt is counted, audited
``attempt`` + ``integrity`` + ``verify-fail``, and answered exactly as a wrong sample is.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_testing import ADMIN, AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings
from sketchauth_service.store import open_store
from sketchauth_service.store.sql import SqlStore, UnreadableRow, checked_row

PEPPER = "skp1_VTWlryKi6NoHkmrQlbPaZNlogoNlM3YGGRD8psdWX9XmOnM_"  # the format of `sketchauth pepper new`
BODY = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
GENUINE = [123, 30, 205, 71]
IMPOSTOR = [20, 130, 5, 250]

#: The wrong-typed values of the red team's report, by column.
CASES = [
    ("record_version", -1),
    ("record_version", "abc"),
    ("record_version", 1e30),
    ("pepper_nonce", "zz"),
    ("helper", "txt"),
    ("failures", "x"),
    ("locked_until", "x"),
    ("locked_until", float("inf")),
    ("enrolled_at", "x"),
]
IDS = [f"{column}={value!r}" for column, value in CASES]


@contextmanager
def _service(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings), headers=AUTH, raise_server_exceptions=False) as client:
        yield client


def _write(settings: Settings, user: str, column: str, value: Any) -> None:
    store = open_store(settings.database_url, pool_size=1)
    assert isinstance(store, SqlStore)
    try:
        with store._transaction() as cur:
            store._run(cur, f"UPDATE users SET {column} = ? WHERE user_id = ?", (value, user))
    finally:
        store.close()


def _events(client: TestClient, user: str) -> list[str]:
    return [e["event"] for e in client.get(f"/v1/admin/users/{user}/audit", headers=ADMIN).json()["events"]]


def _answer(response: Any) -> tuple[int, Any, list[str]]:
    """What a client sees of an answer: status, body and header names (no timing)."""
    names = sorted(name for name in response.headers if name not in ("content-length", "date"))
    return response.status_code, response.json(), names


@pytest.fixture(params=["sealed", "clear"])
def settings(request: pytest.FixtureRequest, tmp_path: Path) -> Settings:
    base = test_settings(tmp_path, lockout_threshold=1000, disable_threshold=1000)
    if request.param == "clear":
        return base
    return base.replace(pepper=PEPPER, deployment_id="red-team-test", rollback_ledger=str(tmp_path / "marks.db"))


@pytest.mark.parametrize(("column", "value"), CASES, ids=IDS)
@pytest.mark.parametrize("door", ["verification", "key"])
def test_a_wrong_typed_column_is_a_counted_integrity_failure(
    settings: Settings, column: str, value: Any, door: str
) -> None:
    extra = {"context": "com.example.types/v1"} if door == "key" else {}
    with _service(settings) as client:
        for user in ("victim", "witness"):
            assert client.post(f"/v1/users/{user}/enrolment", json=BODY).status_code == 201
        # The answer a wrong sample gets, for comparison.
        normal = _answer(client.post(f"/v1/users/witness/{door}", json={"sample": IMPOSTOR, **extra}))
        assert normal[:2] == (200, {"verified": False})
    _write(settings, "victim", column, value)
    with _service(settings) as client:
        before = _events(client, "victim")
        response = client.post(f"/v1/users/victim/{door}", json={"sample": GENUINE, **extra})
        assert _answer(response) == normal, response.text  # nothing more than a wrong sample tells
        assert _events(client, "victim")[len(before) :] == ["attempt", "integrity", "verify-fail"]
        # Counted: attempts go on being claimed, audited and answered alike.
        again = client.post(f"/v1/users/victim/{door}", json={"sample": GENUINE, **extra})
        assert _answer(again) == normal
        assert _events(client, "victim").count("attempt") == before.count("attempt") + 2
        # The rest of the service is unaffected, and re-enrolment repairs the row.
        assert client.post("/v1/users/witness/verification", json={"sample": GENUINE}).json() == {"verified": True}
        assert client.get("/v1/users/victim/report").status_code == 404
        assert client.post("/v1/users/victim/enrolment", json={**BODY, "replace": True}).status_code == 201
        assert client.post("/v1/users/victim/verification", json={"sample": GENUINE}).json() == {"verified": True}


def test_the_throttling_state_of_an_unreadable_row_is_kept_on_the_probe_row(tmp_path: Path) -> None:
    # A wait that is no finite time cannot be counted on by SQL: the id's probe row counts instead,
    # so the attempts are still throttled (here: a wait after the first failure).
    settings = test_settings(tmp_path, lockout_threshold=1, lockout_seconds=30)
    with _service(settings) as client:
        assert client.post("/v1/users/victim/enrolment", json=BODY).status_code == 201
    _write(settings, "victim", "locked_until", "x")
    with _service(settings) as client:
        assert client.post("/v1/users/victim/verification", json={"sample": GENUINE}).json() == {"verified": False}
        refused = client.post("/v1/users/victim/verification", json={"sample": GENUINE})
        assert refused.status_code == 429 and int(refused.headers["Retry-After"]) >= 1


def test_checked_row_names_the_columns_never_the_values() -> None:
    good = ("u", "interval", "{}", b"h", "hash", "{}", 0, 0, 0.0, 0, 1.0, None, None, None, None, None, 3)
    assert checked_row(good) == good
    bad = list(good)
    bad[3], bad[16] = "secret-looking-helper", -1
    with pytest.raises(UnreadableRow) as refused:
        checked_row(bad)
    assert refused.value.columns == ("helper", "record_version") and not refused.value.throttling
    assert "secret-looking-helper" not in str(refused.value)
