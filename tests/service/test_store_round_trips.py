"""Store round trips per verification, counted by instrumenting the store (SQLite and PostgreSQL).

A verification makes exactly two store transactions whoever the id is and whatever the outcome:
the read-and-claim (:meth:`Store.begin_attempt`) before any decode or hash work, then the
outcome (``verify-fail``, or the reset of a success). An unknown id and an enrolled one with a
wrong sample run the same number of SQL statements too (the store's share of the timing must
not tell them apart); a refused attempt is one transaction. Counting these makes the property
impossible to lose silently: a third transaction, or a read outside the claim, fails here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_testing import AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.store import Store
from sketchauth_service.store.sql import SqlStore
from sketchauth_service.store.sqlite import SQLiteStore

INTERVAL = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 4}, "samples": [[120, 33, 200, 71]]}
GENUINE = [123, 30, 205, 71]
IMPOSTOR = [20, 130, 5, 250]
MALFORMED = [1, 2, 3]  # the wrong dimension for the enrolment: a failed attempt, not a 422


class Counter:
    """Counts the transactions (write and read) and SQL statements a store runs."""

    def __init__(self, store: SqlStore) -> None:
        self.transactions = 0
        self.statements = 0
        self._depth = 0
        transaction, read, run = store._transaction, store._read, store._run

        def counted(opener: Any) -> Any:
            @contextmanager
            def wrapper() -> Iterator[Any]:
                # Outermost only: PostgreSQL's _read opens its _transaction.
                self.transactions += self._depth == 0
                self._depth += 1
                try:
                    with opener() as cur:
                        yield cur
                finally:
                    self._depth -= 1

            return wrapper

        def counted_run(cur: Any, query: str, params: tuple[Any, ...] = ()) -> Any:
            self.statements += 1
            return run(cur, query, params)

        store._transaction = counted(transaction)  # type: ignore[method-assign]
        store._read = counted(read)  # type: ignore[method-assign]
        store._run = counted_run  # type: ignore[method-assign]

    def measure(self, action: Any) -> tuple[int, int, Any]:
        """(transactions, statements, result) of ``action()``."""
        before = (self.transactions, self.statements)
        result = action()
        return self.transactions - before[0], self.statements - before[1], result


def _check(store: SqlStore, tmp_path: Path) -> None:
    counter = Counter(store)
    with TestClient(
        create_app(test_settings(tmp_path, lockout_threshold=1000, disable_threshold=1000), store=store)
    ) as client:
        assert client.post("/v1/users/alice/enrolment", headers=AUTH, json=INTERVAL).status_code == 201

        def verify(user: str, sample: list[int]) -> Any:
            return lambda: client.post(f"/v1/users/{user}/verification", headers=AUTH, json={"sample": sample})

        trips = {}
        for label, user, sample, verified in (
            ("genuine", "alice", GENUINE, True),
            ("wrong", "alice", IMPOSTOR, False),
            ("malformed", "alice", MALFORMED, False),
            ("unknown-first", "nobody", IMPOSTOR, False),
            ("unknown-again", "nobody", IMPOSTOR, False),
        ):
            transactions, statements, response = counter.measure(verify(user, sample))
            assert response.status_code == 200 and response.json() == {"verified": verified}, label
            trips[label] = (transactions, statements)
    assert {label: t for label, (t, _) in trips.items()} == dict.fromkeys(trips, 2)
    # The same statements for an enrolled id's failure and an unknown id's, first attempt or not.
    statements = {label: s for label, (_, s) in trips.items()}
    assert statements["wrong"] == statements["malformed"] == statements["unknown-first"] == statements["unknown-again"]


def _check_refusals(store: SqlStore, tmp_path: Path) -> None:
    counter = Counter(store)
    settings = test_settings(tmp_path, lockout_threshold=1, lockout_seconds=300)
    with TestClient(create_app(settings, store=store)) as client:
        assert client.post("/v1/users/alice/enrolment", headers=AUTH, json=INTERVAL).status_code == 201
        refused = {}
        for user in ("alice", "nobody"):
            client.post(f"/v1/users/{user}/verification", headers=AUTH, json={"sample": IMPOSTOR})
            transactions, statements, response = counter.measure(
                lambda user=user: client.post(f"/v1/users/{user}/verification", headers=AUTH, json={"sample": IMPOSTOR})
            )
            assert response.status_code == 429, user
            refused[user] = (transactions, statements)
    assert refused["alice"] == refused["nobody"] and refused["alice"][0] == 1


def test_two_transactions_per_verification_sqlite(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "trips.db")
    try:
        _check(store, tmp_path)
    finally:
        store.close()


def test_refusal_is_one_transaction_sqlite(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "refusals.db")
    try:
        _check_refusals(store, tmp_path)
    finally:
        store.close()


@pytest.mark.parametrize("check", [_check, _check_refusals], ids=["verifications", "refusals"])
def test_round_trips_postgres(check: Any, postgres_available: str, postgres_schema: str, tmp_path: Path) -> None:
    from sketchauth_service.store.postgres import PostgresStore

    store = PostgresStore(postgres_available, schema=postgres_schema, max_size=2)
    try:
        check(store, tmp_path)
    finally:
        store.close()


def test_begin_attempt_reads_and_claims_in_one_transaction(tmp_path: Path) -> None:
    store: Store = SQLiteStore(tmp_path / "one.db")
    try:
        assert isinstance(store, SqlStore)
        store.migrate()
        counter = Counter(store)
        transactions, _, attempt = counter.measure(lambda: store.begin_attempt("ghost", _policy(), 1.0))
        assert transactions == 1 and attempt.record is None and attempt.claim.failures == 1
        assert [e.event for e in store.audit_events("ghost")] == ["attempt"]
    finally:
        store.close()


def _policy() -> Any:
    from sketchauth_service.store import LockoutPolicy

    return LockoutPolicy()


def test_an_unknown_id_parses_a_row_like_an_enrolled_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Parsing a row's JSON took ~0.02 ms: enough, unequalised, to move the timing oracle's AUC to 0.6.
    # Every row is opened by the record codec (parsing, and with a pepper unsealing): one per attempt.
    from sketchauth_service.store.records import RecordCodec

    parsed: list[str] = []
    real = RecordCodec.open
    monkeypatch.setattr(RecordCodec, "open", lambda self, row: parsed.append(row[0]) or real(self, row))
    store = SQLiteStore(tmp_path / "parse.db")
    try:
        with TestClient(
            create_app(test_settings(tmp_path, lockout_threshold=1000, disable_threshold=1000), store=store)
        ) as client:
            assert client.post("/v1/users/alice/enrolment", headers=AUTH, json=INTERVAL).status_code == 201
            for user in ("alice", "nobody", "nobody", "alice"):
                parsed.clear()
                client.post(f"/v1/users/{user}/verification", headers=AUTH, json={"sample": IMPOSTOR})
                assert parsed == ["alice"], user  # one row parsed: its own, or the last enrolled one read
    finally:
        store.close()
