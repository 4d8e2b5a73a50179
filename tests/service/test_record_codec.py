"""The record codec (sketchauth_service.store.records): round trips, the associated data's binding, strict parsing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sketchauth_service.store.ledger import RollbackLedger
from sketchauth_service.store.records import (
    Content,
    PepperUnavailable,
    RecordCodec,
    RecordIntegrityError,
    pack,
    unpack,
)

from sketchauth.enrolment import key_cost_limit
from sketchauth.pepper import Pepper

PEPPER = Pepper(bytes(range(32)))
OTHER = Pepper(bytes(range(1, 33)))
KEY_PARAMS = "$argon2id$v=19$m=19456,t=2,p=1$AAAAAAAAAAAAAAAAAAAAAA"
HUGE_KEY_PARAMS = "$argon2id$v=19$m=2097152,t=16,p=1$AAAAAAAAAAAAAAAAAAAAAA"
scalars = st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    scalars | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
contents = st.builds(
    Content,
    scheme=st.text(max_size=20),
    params=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    helper=st.binary(max_size=200),
    secret_hash=st.text(max_size=100),
    report=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    has_pin=st.booleans(),
    pipeline=st.none() | st.text(max_size=10),
    pipeline_sha256=st.none() | st.text(max_size=64),
    key_params=st.none() | st.just(KEY_PARAMS),
)


@settings(max_examples=60, deadline=None)
@given(content=contents)
def test_pack_unpack_round_trip(content: Content) -> None:
    assert unpack(pack(content)) == content


@settings(max_examples=60, deadline=None)
@given(
    content=contents,
    user_id=st.text(min_size=1, max_size=40),
    version=st.integers(0, 2**63 - 1),
    sealed=st.booleans(),
)
def test_columns_open_round_trip_sealed_and_clear(content: Content, user_id: str, version: int, sealed: bool) -> None:
    codec = RecordCodec(PEPPER if sealed else None)
    columns = codec.columns(user_id, content, version)
    record = codec.open(columns.row(user_id, failures=3, locked_until=5.0, enrolled_at=7.0))
    assert Content.of(record) == content
    assert (record.user_id, record.version, record.failures, record.locked_until) == (user_id, version, 3, 5.0)
    if sealed:  # nothing protected is left in a column
        assert (columns.scheme, columns.params, columns.secret_hash, columns.key_params) == ("", "{}", "", None)
        assert columns.pepper_id == PEPPER.id and columns.record_version == version


def _sealed_row(codec: RecordCodec, user_id: str = "victim", version: int = 4) -> tuple:
    content = Content("interval", {"n": 8}, b"helper", "$argon2id$hash", {"bits": 1.5}, True, key_params=KEY_PARAMS)
    return codec.columns(user_id, content, version).row(user_id)


def test_the_associated_data_binds_user_version_deployment_and_pepper() -> None:
    codec = RecordCodec(PEPPER, deployment="prod")
    row = _sealed_row(codec)
    assert codec.open(row).secret_hash == "$argon2id$hash"
    moved = ("mallory", *row[1:])
    replayed = (*row[:16], 3)
    for bad in (moved, replayed):
        with pytest.raises(RecordIntegrityError, match="does not open"):
            codec.open(bad)
    with pytest.raises(RecordIntegrityError, match="does not open"):
        RecordCodec(PEPPER, deployment="staging").open(row)
    with pytest.raises(PepperUnavailable, match="not configured"):
        RecordCodec(OTHER, deployment="prod").open(row)
    clear = RecordCodec().columns("victim", Content.of(codec.open(row)), 4).row("victim")
    with pytest.raises(RecordIntegrityError, match="without a seal"):
        codec.open(clear)
    assert RecordCodec(OTHER, [PEPPER], deployment="prod").open(row).helper == b"helper"  # a rotation's reader


def test_key_costs_beyond_the_deployments_bound_are_refused_in_clear_rows() -> None:
    content = Content("interval", {}, b"h", "$x", {}, False, key_params=HUGE_KEY_PARAMS)
    row = RecordCodec().columns("u", content, 1).row("u")
    with pytest.raises(RecordIntegrityError, match="key parameters refused"):
        RecordCodec(key_limit=key_cost_limit()).open(row)


@pytest.mark.parametrize(
    "plain",
    [
        b"",
        b"XXXX\x00\x00\x00\x02{}",
        b"SKR\x02\xff\xff\xff\xff{}",
        b"SKR\x02\x00\x00\x00\x03{x}",
        b"SKR\x02\x00\x00\x00\x02{}",
        b"SKR\x02\x00\x00\x00\x03NaN",
    ],
)
def test_unpack_is_strict(plain: bytes) -> None:
    with pytest.raises(RecordIntegrityError):
        unpack(plain)


def test_unpack_refuses_wrong_field_types() -> None:
    good = Content("s", {}, b"", "h", {}, False)
    for change in ({"has_pin": 1}, {"params": []}, {"scheme": 3}, {"key_params": 5}):
        with pytest.raises(RecordIntegrityError, match="wrong types"):
            unpack(pack(dataclasses.replace(good, **change)))  # type: ignore[arg-type]


def test_the_ledger_keeps_the_highest_mark_and_refuses_forged_ones(tmp_path: Path) -> None:
    ledger = RollbackLedger(tmp_path / "marks.db", PEPPER)
    assert ledger.mark("alice") == 0
    ledger.advance("alice", 5)
    ledger.advance("alice", 3)  # lower: ignored
    assert ledger.mark("alice") == 5 and ledger.mark("bob") == 0
    assert b"alice" not in (tmp_path / "marks.db").read_bytes()  # keyed user ids only
    codec = RecordCodec(PEPPER, ledger=ledger)
    with pytest.raises(RecordIntegrityError, match="older than its rollback mark"):
        codec.open(_sealed_row(codec, "alice", version=4))
    assert codec.open(_sealed_row(codec, "alice", version=5)).version == 5
    ledger._conn.execute("UPDATE marks SET version = 9")  # raised without the key: the MAC no longer matches
    with pytest.raises(RecordIntegrityError, match="altered"):
        ledger.mark("alice")
    assert RollbackLedger(tmp_path / "marks.db", OTHER).mark("alice") == 0  # another pepper: other keys
    ledger.close()
