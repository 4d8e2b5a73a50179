"""The service's use cases called as functions, without HTTP: enrol, attempt (claim, decoy,
verify, settle), PIN change, report, revoke (:mod:`sketchauth_service.usecases`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from service_testing import test_settings
from sketchauth_service import usecases
from sketchauth_service.authenticator import Authenticator
from sketchauth_service.schemes import available_schemes
from sketchauth_service.state import ServiceState
from sketchauth_service.store import AlreadyEnrolled, AttemptRefused, LockoutPolicy, UserNotFound
from sketchauth_service.store.sqlite import SQLiteStore

TEMPLATE = [120, 33, 200, 71]
GENUINE = [123, 30, 205, 71]
IMPOSTOR = [20, 130, 5, 250]


@pytest.fixture
def state(tmp_path: Path) -> Iterator[ServiceState]:
    store = SQLiteStore(tmp_path / "usecases.db")
    store.migrate()
    clock = [1_000.0]
    yield ServiceState(
        settings=test_settings(tmp_path),
        store=store,
        authenticator=Authenticator("test"),
        policy=LockoutPolicy(lockout_threshold=3, lockout_seconds=30, disable_threshold=10),
        clock=lambda: clock[0],
    )
    store.close()


def _enrolment(user: str, pin: str | None = None, *, replace: bool = False) -> usecases.EnrolmentInput:
    spec = next(s for s in available_schemes() if s.name == "interval")
    params = spec.params_model().model_validate({"n": 256, "v": 8, "features": 4})
    return usecases.EnrolmentInput(
        user_id=user, scheme="interval", params=params, samples=[TEMPLATE], pin=pin, replace=replace, spec=spec
    )


def _events(state: ServiceState, user: str) -> list[str]:
    return [e.event for e in state.store.audit_events(user)]


def test_enrol_attempt_and_settle_without_http(state: ServiceState) -> None:
    enrolled = usecases.enrol(state, _enrolment("alice"))
    assert not enrolled.replaced and enrolled.report["scheme"] == "interval"
    with pytest.raises(AlreadyEnrolled):
        usecases.enrol(state, _enrolment("alice"))
    assert usecases.attempt(state, usecases.AttemptInput("alice", GENUINE, None)).verified
    assert not usecases.attempt(state, usecases.AttemptInput("alice", IMPOSTOR, None)).verified
    assert _events(state, "alice") == ["enrol", "attempt", "verify-ok", "attempt", "verify-fail"]
    key = usecases.attempt(state, usecases.AttemptInput("alice", GENUINE, None, key_context=b"app/v1")).key
    assert key is not None and len(key) == 32
    assert usecases.report(state, "alice")["scheme"] == "interval"
    usecases.revoke(state, "alice")
    with pytest.raises(UserNotFound):
        usecases.report(state, "alice")


def test_an_unknown_id_is_claimed_counted_and_throttled_like_an_enrolled_one(state: ServiceState) -> None:
    usecases.enrol(state, _enrolment("decoy-owner"))
    for _ in range(3):
        assert not usecases.attempt(state, usecases.AttemptInput("nobody", GENUINE, None)).verified
    assert _events(state, "nobody")[:2] == ["attempt", "verify-fail"]
    with pytest.raises(AttemptRefused):
        usecases.attempt(state, usecases.AttemptInput("nobody", GENUINE, None))


def test_pin_change_and_the_same_pin_refused_before_any_claim(state: ServiceState) -> None:
    usecases.enrol(state, _enrolment("carol", pin="1234-old"))
    same = usecases.AttemptInput("carol", GENUINE, "1234-old", new_pin="1234-old")
    with pytest.raises(usecases.SamePin):
        usecases.attempt(state, same)
    assert _events(state, "carol") == ["enrol"]  # nothing claimed
    change = usecases.AttemptInput("carol", GENUINE, "1234-old", new_pin="5678-new")
    assert usecases.attempt(state, change).verified
    assert _events(state, "carol")[-2:] == ["verify-ok", "pin-change"]
    assert usecases.attempt(state, usecases.AttemptInput("carol", GENUINE, "5678-new")).verified
    assert not usecases.attempt(state, usecases.AttemptInput("carol", GENUINE, "1234-old")).verified


def test_a_refused_sample_names_its_field(state: ServiceState) -> None:
    bad = dataclasses.replace(_enrolment("dave"), samples=[[120, 33, 999, 71]])
    with pytest.raises(usecases.InvalidEnrolment) as refused:
        usecases.enrol(state, bad)
    assert refused.value.sample and refused.value.detail.startswith("samples[0][2]: ")
