"""The audit trail tells the truth under concurrency: a seeded random driver, both backends.

Random concurrent mixes of genuine, wrong and malformed samples, admin resets and replacing
enrolments run from several threads, against the store directly (one handle per thread, as
separate processes would hold) and against a real ``sketchauth serve`` with two workers. Each
request notes the audit position before it was sent and after its answer came back. The
checks, for every seed:

* the user's state-changing audit rows follow the throttling grammar: every ``attempt`` is
  followed by exactly the ``lock`` and ``disable`` rows the policy calls for at its count, and
  no ``lock``/``disable`` row appears otherwise (none at all with ``lockout_seconds = 0``);
* replaying the rows gives the stored state: ``failures`` is the number of attempts since the
  last ``verify-ok``/``reset``/enrolment, ``disabled`` is true iff a ``disable`` row has no
  later clearing row, ``locked_until`` is the last ``lock``'s time plus the wait;
* every attempt the service counted (an answer other than 423/429) has exactly one
  ``attempt`` row, and every failed one one ``verify-fail`` row;
* every 423 was answered while the replayed state was disabled, every 429 while a wait was
  running at the time the request was sent, at some point between sending and answering;
* no audit row seen during the run is later missing or changed.

Before the fix a malformed sample's attempt was "handed back" by restoring the counters its
claim had set: that cleared disables and waits that concurrent attempts had imposed and
audited (423s answered for a user who ended enabled, a user locked below the threshold), and a
zero wait was stored as ``locked_until = now``, which attempts that read the clock a moment
earlier took for a running wait (spurious 429s). Seeds are fixed so a failure reproduces the
same mix (thread interleavings still vary); the whole run takes a few seconds per backend.
"""

from __future__ import annotations

import contextlib
import random
import secrets
import sqlite3
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from service_testing import ADMIN_KEY, API_KEY, ServerProcess
from sketchauth_service.store import (
    AttemptRefused,
    LockoutPolicy,
    NewEnrolment,
    Store,
    UserNotFound,
    UserRecord,
    open_store,
)

#: Rows that record an outcome, written without the user's row lock: not part of the state.
OUTCOME_ONLY = frozenset({"verify-fail"})
#: Rows after which failures, wait and disabled flag are all cleared.
CLEARING = frozenset({"enrol", "re-enrol", "verify-ok", "reset"})
#: Rows that change neither the count nor the wait nor the flag.
NEUTRAL = frozenset({"rehash"})

STORE_SEEDS = range(12)
HTTP_SEEDS = range(2)


# -- the audit trail, replayed ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Throttle:
    """The throttling state a prefix of the audit trail implies."""

    failures: int = 0
    disabled: bool = False
    #: Time of the last ``lock`` row since the state was last cleared.
    lock_at: float | None = None

    def locked_until(self, policy: LockoutPolicy) -> float:
        return 0.0 if self.lock_at is None else self.lock_at + policy.lockout_seconds


@dataclass(frozen=True, slots=True)
class Row:
    id: int
    at: float
    event: str


def replay(rows: list[Row], policy: LockoutPolicy, problems: list[str]) -> list[tuple[int, Throttle]]:
    """The state after each state-changing transaction, keyed by the id of its last row.

    Appends to ``problems`` every row that breaks the grammar.
    """
    timeline: list[tuple[int, Throttle]] = []
    state, expected = Throttle(), []  # expected: the rows the last attempt still owes
    for row in rows:
        if row.event in OUTCOME_ONLY:
            continue
        _settle_owed(row, state, expected, problems)
        state, owed = _transition(row, state, policy, problems)
        if owed is not None:
            expected = owed
        if not expected:
            timeline.append((row.id, state))
    if expected:
        problems.append(f"the last attempt still owes {expected}")
    return timeline


def _settle_owed(row: Row, state: Throttle, expected: list[str], problems: list[str]) -> None:
    """Check ``row`` against the rows the last attempt still owes (popping the one it settles)."""
    if expected:
        if row.event != expected[0]:
            problems.append(f"row {row.id}: {row.event!r} where the attempt before owed {expected[0]!r}")
        expected.pop(0)
    elif row.event in ("lock", "disable"):
        problems.append(f"row {row.id}: {row.event!r} that no attempt called for (count {state.failures})")


def _transition(
    row: Row, state: Throttle, policy: LockoutPolicy, problems: list[str]
) -> tuple[Throttle, list[str] | None]:
    """The state after ``row``, and the rows it makes owed (``None`` when it is not an attempt)."""
    if row.event == "attempt":
        state = Throttle(state.failures + 1, state.disabled, state.lock_at)
        if state.disabled:
            problems.append(f"row {row.id}: an attempt was counted while the biometric was disabled")
        return state, _owed(state.failures, policy)
    if row.event == "lock":
        return Throttle(state.failures, state.disabled, row.at), None
    if row.event == "disable":
        return Throttle(state.failures, True, state.lock_at), None
    if row.event in CLEARING:
        return Throttle(), None
    if row.event not in NEUTRAL:
        problems.append(f"row {row.id}: unexpected event {row.event!r}")
    return state, None


def _owed(failures: int, policy: LockoutPolicy) -> list[str]:
    owed = []
    if policy.lockout_seconds > 0 and failures >= policy.lockout_threshold:
        owed.append("lock")
    if failures == policy.disable_threshold:
        owed.append("disable")
    return owed


@dataclass(slots=True)
class Answer:
    """One request's answer and where the audit trail stood around it."""

    kind: str  # "counted-ok", "counted-fail", "disabled", "locked", "admin", or "unexpected ..."
    sent_at: float
    before: int  # id of the newest visible state-changing row when the request was sent
    after: int  # the same once the answer had come back


def check(
    rows: list[Row],
    record: UserRecord,
    answers: list[Answer],
    policy: LockoutPolicy,
    *,
    seen: dict[int, Row],
    reenrolments: bool,
) -> list[str]:
    """Every invariant of the module docstring; the list of what broke (empty when all hold)."""
    problems: list[str] = []
    timeline = replay(rows, policy, problems)
    final = timeline[-1][1] if timeline else Throttle()
    stored = (record.failures, record.disabled, record.locked_until)
    if stored != (final.failures, final.disabled, final.locked_until(policy)):
        problems.append(f"stored (failures, disabled, locked_until) {stored} but the audit trail gives {final}")
    events = Counter(row.event for row in rows)
    kinds = Counter(answer.kind for answer in answers)
    counted = kinds["counted-ok"] + kinds["counted-fail"]
    if events["attempt"] != counted:
        problems.append(f"{counted} attempts were counted but {events['attempt']} 'attempt' rows written")
    if events["verify-fail"] != kinds["counted-fail"]:
        problems.append(f"{kinds['counted-fail']} failures answered but {events['verify-fail']} 'verify-fail' rows")
    # A success verified against a record replaced meanwhile changes nothing and writes nothing.
    ok_rows = events["verify-ok"]
    if ok_rows > kinds["counted-ok"] or (not reenrolments and ok_rows != kinds["counted-ok"]):
        problems.append(f"{kinds['counted-ok']} successes answered but {events['verify-ok']} 'verify-ok' rows")
    problems += [f"unexpected answer: {a.kind}" for a in answers if a.kind.startswith("unexpected")]
    for answer in answers:
        if answer.kind in ("disabled", "locked") and not _explained(answer, timeline, policy):
            problems.append(
                f"a {answer.kind!r} refusal no audited state explains (rows {answer.before}..{answer.after})"
            )
    if not seen:
        problems.append("the monitor never read the trail while the run went on")
    final_rows = {row.id: row for row in rows}
    gone = [row for row_id, row in seen.items() if final_rows.get(row_id) != row]
    if gone:
        problems.append(f"audit rows removed or changed after they were read: {gone[:3]}")
    return problems


def _explained(answer: Answer, timeline: list[tuple[int, Throttle]], policy: LockoutPolicy) -> bool:
    """Whether the state at some moment between sending and answering refuses this way."""
    candidates = [state for row_id, state in timeline if answer.before <= row_id <= answer.after]
    candidates += [state for row_id, state in timeline if row_id <= answer.before][-1:]
    for state in candidates:
        if answer.kind == "disabled" and state.disabled:
            return True
        if answer.kind == "locked" and not state.disabled and state.locked_until(policy) > answer.sent_at:
            return True
    return False


# -- reading the trail while the run goes on ---------------------------------------------------------


class Probe:
    """A raw connection of its own (one per thread) on the audit table."""

    def __init__(self, url: str, schema: str) -> None:
        if url.startswith("sqlite:///"):
            self._conn: Any = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, timeout=10)
            self._mark = "SELECT COALESCE(MAX(id), 0) FROM audit WHERE user_id = ? AND event <> 'verify-fail'"
            self._rows = "SELECT id, at, event FROM audit WHERE user_id = ? ORDER BY id"
        else:
            import psycopg

            self._conn = psycopg.connect(url, autocommit=True, options=f"-c search_path={schema}")
            self._mark = "SELECT COALESCE(MAX(id), 0) FROM audit WHERE user_id = %s AND event <> 'verify-fail'"
            self._rows = "SELECT id, at, event FROM audit WHERE user_id = %s ORDER BY id"

    def mark(self, user: str) -> int:
        """Id of the newest committed state-changing row (one user's commit in id order)."""
        return int(self._conn.execute(self._mark, (user,)).fetchone()[0])

    def rows(self, user: str) -> list[Row]:
        return [Row(int(i), float(at), event) for i, at, event in self._conn.execute(self._rows, (user,)).fetchall()]

    def close(self) -> None:
        self._conn.close()


class Monitor:
    """Reads the whole trail every few milliseconds, so that a removed row would be noticed."""

    def __init__(self, url: str, schema: str, user: str) -> None:
        self.seen: dict[int, Row] = {}
        self.reads = 0
        self._where = (url, schema, user)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Monitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self._error is not None:
            raise self._error

    def _run(self) -> None:
        url, schema, user = self._where
        probe = Probe(url, schema)  # a connection belongs to the thread that made it
        try:
            while not self._stop.wait(0.005):
                for row in probe.rows(user):
                    self.seen.setdefault(row.id, row)
                self.reads += 1
        except BaseException as exc:
            self._error = exc
        finally:
            probe.close()


def run_threads(plans: list[list[str]], worker: Callable[[int, list[str]], None]) -> None:
    errors: list[BaseException] = []

    def guarded(index: int, plan: list[str]) -> None:
        try:
            worker(index, plan)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=guarded, args=(i, plan)) for i, plan in enumerate(plans)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def random_plans(rng: random.Random, threads: int, length: int, weights: dict[str, float]) -> list[list[str]]:
    names, w = list(weights), list(weights.values())
    return [rng.choices(names, w, k=length) for _ in range(threads)]


# -- the store, driven directly ------------------------------------------------------------------------


@dataclass
class Clock:
    """A shared clock every operation advances by a random step (waits expire mid-run)."""

    now: float = 1_800_000_000.0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def advance(self, step: float) -> float:
        with self._lock:
            self.now += step
            return self.now


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    """(database URL, schema) of a migrated, empty store."""
    if request.param == "sqlite":
        url, schema = f"sqlite:///{tmp_path / 'audit.db'}", "public"
    else:
        url, schema = request.getfixturevalue("postgres_available"), request.getfixturevalue("postgres_schema")
    store = open_store(url, postgres_schema=schema)
    store.migrate()
    store.close()
    return url, schema


def _enrolment(user: str, secret_hash: str) -> NewEnrolment:
    return NewEnrolment(user, "interval", {}, b"helper", secret_hash, {}, False)


def drive_store(handles: list[Store], url: str, schema: str, seed: int) -> list[str]:
    """One seeded run against the store; the invariants that broke."""
    rng = random.Random(seed)
    lockout = rng.randint(1, 4)
    policy = LockoutPolicy(lockout, rng.choice([0, 0, 1, 2]), rng.randint(lockout, lockout + 6))
    weights = {
        "genuine": rng.uniform(0.0, 1.0),
        "wrong": rng.uniform(0.5, 2.0),
        "malformed": rng.uniform(0.0, 2.0),
        "reset": rng.uniform(0.0, 0.15),
        "re-enrol": rng.choice([0.0, 0.05]),
    }
    user = f"user-{seed}-{secrets.token_hex(3)}"
    clock = Clock()
    handles[0].enrol(_enrolment(user, "$argon2id$0"), replace=False, now=clock.now)
    plans = random_plans(rng, len(handles), 30, weights)
    answers: list[Answer] = []
    generation = iter(range(1, 10**6))

    def worker(index: int, plan: list[str]) -> None:
        store, probe, local = handles[index], Probe(url, schema), random.Random(seed * 100 + index)
        try:
            for op in plan:
                before, now = probe.mark(user), clock.advance(local.uniform(0.0, 0.4))
                kind = _store_op(store, user, op, policy, now, next(generation), local)
                answers.append(Answer(kind, now, before, probe.mark(user)))
        finally:
            probe.close()

    with Monitor(url, schema, user) as monitor:
        run_threads(plans, worker)
    probe = Probe(url, schema)
    rows = probe.rows(user)
    probe.close()
    record = handles[0].get(user)
    assert record is not None
    problems = check(rows, record, answers, policy, seen=monitor.seen, reenrolments=weights["re-enrol"] > 0)
    return [f"seed {seed} ({policy}, {dict(Counter(a.kind for a in answers))}): {p}" for p in problems]


def _store_op(store: Store, user: str, op: str, policy: LockoutPolicy, now: float, gen: int, rng: random.Random) -> str:
    """What a verification (or an admin) does to the store for ``op``; the answer's kind."""
    if op == "reset":
        store.reset(user, now)
        return "admin"
    if op == "re-enrol":
        store.enrol(_enrolment(user, f"$argon2id${gen}"), replace=True, now=now)
        return "admin"
    record = store.get(user)
    assert record is not None
    try:
        claim = store.claim_attempt(user, policy, now)
    except AttemptRefused as refused:
        return "disabled" if refused.disabled else "locked"
    time.sleep(rng.uniform(0.0, 0.002))  # the decode and hash work, other attempts meanwhile
    if op == "genuine":
        store.record_success(user, now, version=record.version)
        return "counted-ok"
    store.settle_failure(user, claim, now)  # a wrong or a malformed sample alike
    return "counted-fail"


def test_random_concurrent_mixes_keep_the_audit_truthful_in_the_store(backend: tuple[str, str]) -> None:
    url, schema = backend
    handles = [open_store(url, postgres_schema=schema, pool_size=2) for _ in range(6)]
    try:
        problems = [p for seed in STORE_SEEDS for p in drive_store(handles, url, schema, seed)]
    finally:
        for handle in handles:
            handle.close()
    assert problems == []


def test_concurrent_enrolments_and_revocations_are_audited_as_what_they_did(backend: tuple[str, str]) -> None:
    """``enrol`` vs ``re-enrol`` is decided by the statement that wrote the row, not by an earlier
    read that a revocation committing in between (read committed) could make stale: before the
    fix, on PostgreSQL 31-41 of the ~80 enrolment rows of this run named the wrong one."""
    url, schema = backend
    handles = [open_store(url, postgres_schema=schema, pool_size=1) for _ in range(4)]
    replaced: list[bool] = []

    def worker(index: int, plan: list[str]) -> None:
        for gen, op in enumerate(plan):
            if op == "enrol":
                record = _enrolment("dora", f"$argon2id${index}-{gen}")
                replaced.append(handles[index].enrol(record, replace=True, now=0.0))
            else:
                with contextlib.suppress(UserNotFound):
                    handles[index].revoke("dora", 0.0)

    try:
        run_threads(random_plans(random.Random(7), 4, 40, {"enrol": 1.0, "revoke": 1.0}), worker)
        exists = handles[0].get("dora") is not None
    finally:
        for handle in handles:
            handle.close()
    probe = Probe(url, schema)
    events = [row.event for row in probe.rows("dora")]
    probe.close()
    present, problems = False, []
    for i, event in enumerate(events):
        if present != (event in ("re-enrol", "revoke")):
            problems.append(f"row {i}: {event!r} while the user was {'enrolled' if present else 'not enrolled'}")
        present = event != "revoke"
    assert problems == [] and present == exists
    assert (events.count("enrol"), events.count("re-enrol")) == (replaced.count(False), replaced.count(True))


# -- a real server -------------------------------------------------------------------------------------

N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
SAMPLES: dict[str, list[int]] = {
    "genuine": [987_640, 876_560, 765_400, 654_300],
    "wrong": [12_345, 23_456, 34_567, 45_678],
    "malformed": [1, 2, 3],  # three features where four are enrolled
    "out-of-range": [N + 5, 1, 2, 3],  # a feature outside [0, n)
}
ENROL = {"scheme": "interval", "params": {"n": N, "v": 50, "features": 4}, "samples": [TEMPLATE]}
USER_KEY, ADMIN = {"Authorization": f"Bearer {API_KEY}"}, {"Authorization": f"Bearer {ADMIN_KEY}"}


def _answer_kind(op: str, response: httpx.Response) -> str:
    status = response.status_code
    if status == 200 and op in ("genuine", "wrong"):
        verified = response.json()["verified"]
        if verified == (op == "genuine"):
            return "counted-ok" if verified else "counted-fail"
    elif status == 200:  # a malformed sample answered like a failed one counts the same
        if response.json() == {"verified": False}:
            return "counted-fail"
    elif status == 422 and op in ("malformed", "out-of-range"):
        if response.json()["type"].endswith("/invalid-sample"):
            return "counted-fail"
    elif status == 423:
        return "disabled"
    elif status == 429:
        return "locked"
    elif status in (201, 204) and op in ("reset", "re-enrol"):
        return "admin"
    return f"unexpected {status} for {op}: {response.text[:200]}"


def drive_server(server: ServerProcess, url: str, schema: str, policy: LockoutPolicy, seed: int) -> list[str]:
    """One seeded run of concurrent requests to a real server; the invariants that broke."""
    rng = random.Random(seed)
    weights = {
        "genuine": rng.uniform(0.1, 0.6),
        "wrong": 1.0,
        "malformed": rng.uniform(0.3, 1.0),
        "out-of-range": 0.2,
        "reset": 0.08,
        "re-enrol": rng.choice([0.0, 0.03]),
    }
    user = f"user-{seed}-{secrets.token_hex(3)}"
    with httpx.Client(base_url=server.url, headers=USER_KEY, timeout=30) as c:
        assert c.post(f"/v1/users/{user}/enrolment", json=ENROL).status_code == 201
    plans = random_plans(rng, 8, 12, weights)
    answers: list[Answer] = []

    def worker(index: int, plan: list[str]) -> None:
        probe = Probe(url, schema)
        try:
            with httpx.Client(base_url=server.url, headers=USER_KEY, timeout=30) as c:
                for op in plan:
                    before, sent_at = probe.mark(user), time.time()
                    response = _request(c, user, op)
                    answers.append(Answer(_answer_kind(op, response), sent_at, before, probe.mark(user)))
        finally:
            probe.close()

    with Monitor(url, schema, user) as monitor:
        run_threads(plans, worker)
    store = open_store(url, postgres_schema=schema, pool_size=1)
    record = store.get(user)
    store.close()
    probe = Probe(url, schema)
    rows = probe.rows(user)
    probe.close()
    assert record is not None
    problems = check(rows, record, answers, policy, seen=monitor.seen, reenrolments=weights["re-enrol"] > 0)
    return [f"seed {seed} ({policy}, {dict(Counter(a.kind for a in answers))}): {p}" for p in problems]


def _request(c: httpx.Client, user: str, op: str) -> httpx.Response:
    if op == "reset":
        return c.post(f"/v1/admin/users/{user}/reset", headers=ADMIN)
    if op == "re-enrol":
        return c.post(f"/v1/users/{user}/enrolment", json={**ENROL, "replace": True})
    return c.post(f"/v1/users/{user}/verification", json={"sample": SAMPLES[op]})


@pytest.fixture
def server_for(
    backend: tuple[str, str], tmp_path: Path, servers: list[ServerProcess]
) -> Iterator[Callable[[LockoutPolicy], ServerProcess]]:
    url, schema = backend

    def start(policy: LockoutPolicy) -> ServerProcess:
        env = {
            "SKETCHAUTH_API_KEYS": API_KEY,
            "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
            "SKETCHAUTH_HASH_PROFILE": "test",
            "SKETCHAUTH_SCHEMA": schema,
            "SKETCHAUTH_LOCKOUT_THRESHOLD": str(policy.lockout_threshold),
            "SKETCHAUTH_LOCKOUT_SECONDS": str(policy.lockout_seconds),
            "SKETCHAUTH_DISABLE_THRESHOLD": str(policy.disable_threshold),
        }
        server = ServerProcess(tmp_path, env, workers=2, db=url)
        servers.append(server)
        return server.wait_ready()

    yield start


@pytest.mark.slow
@pytest.mark.parametrize(
    "policy",
    [LockoutPolicy(3, 0, 7), LockoutPolicy(2, 1, 6)],
    ids=["lockout-seconds-0", "lockout-seconds-1"],
)
def test_random_concurrent_requests_keep_the_audit_truthful_on_a_server(
    backend: tuple[str, str], server_for: Callable[[LockoutPolicy], ServerProcess], policy: LockoutPolicy
) -> None:
    url, schema = backend
    server = server_for(policy)
    problems = [p for seed in HTTP_SEEDS for p in drive_server(server, url, schema, policy, seed)]
    assert problems == []
