"""Enrolment.to_json / Enrolment.from_json: the library user's stored record, versioned and parsed strictly."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import (
    ENROLMENT_FORMAT,
    ENROLMENT_VERSION,
    MAX_ENROLMENT_JSON_BYTES,
    Enrolment,
    enrol,
    hasher,
    verify,
)
from sketchauth.errors import SketchFormatError
from sketchauth.sketches.base import EntropyReport
from sketchauth.sketches.pinsketch import PinSketch

PH = hasher("test")
SKETCH = PinSketch(16, 4)
RECORD = enrol(SKETCH, {3, 70, 1000, 2024}, password_hasher=PH)


def _body() -> dict:
    return json.loads(RECORD.to_json())


def test_round_trip_verifies_and_is_versioned() -> None:
    body = _body()
    assert (body["format"], body["version"]) == (ENROLMENT_FORMAT, ENROLMENT_VERSION) == ("sketchauth.enrolment", 1)
    loaded = Enrolment.from_json(RECORD.to_json())
    assert loaded == RECORD
    assert verify(PinSketch.from_params(SKETCH.params()), loaded, [3, 70, 1001, 2024], password_hasher=PH)


@settings(max_examples=40, deadline=None)
@given(
    helper=st.binary(max_size=300),
    bits=st.tuples(*[st.floats(allow_nan=False, allow_infinity=False, width=32)] * 3),
    notes=st.lists(st.text(max_size=20), max_size=3),
    key_params=st.one_of(st.none(), st.just("$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA")),
)
def test_any_record_round_trips(helper: bytes, bits: tuple, notes: list, key_params: str | None) -> None:
    report = EntropyReport("pinsketch", *bits, notes=tuple(notes), extra={"k": [1, 2.5, "x"]})
    record = Enrolment(helper, RECORD.secret_hash, report, key_params)
    assert Enrolment.from_json(record.to_json()) == record


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"version": 2}, "version 1"),
        ({"format": "other"}, "format"),
        ({"extra": 1}, "unknown members"),
        ({"helper": "not base64!"}, "base64"),
        ({"helper": ["a list"]}, "base64 string"),
        ({"secret_hash": "$argon2i$v=19$m=8,t=1,p=1$AAAA$BBBB"}, "argon2id PHC"),
        ({"key_params": "$argon2id$v=19$m=2097152,t=16,p=1$AAAAAAAAAAAAAAAAAAAAAA"}, "out of range"),
        ({"report": {"scheme": "x"}}, "missing members"),
        ({"report": {**json.loads(RECORD.to_json())["report"], "sketch_bits": "12"}}, "finite numbers"),
    ],
)
def test_malformed_records_are_refused_with_what_is_wrong(change: dict, match: str) -> None:
    body = {**_body(), **change}
    with pytest.raises(SketchFormatError, match=match):
        Enrolment.from_json(json.dumps(body))


def test_missing_member_repeated_member_and_non_objects_are_refused() -> None:
    body = _body()
    del body["key_params"]
    with pytest.raises(SketchFormatError, match="missing members"):
        Enrolment.from_json(json.dumps(body))
    text = RECORD.to_json()
    with pytest.raises(SketchFormatError, match="twice"):
        Enrolment.from_json(text[:-1] + ',"helper":"AAAA"}')
    for bad in ("[]", "null", "{", "NaN", 12):
        with pytest.raises(SketchFormatError):
            Enrolment.from_json(bad)  # type: ignore[arg-type]
    with pytest.raises(SketchFormatError, match="at most"):
        Enrolment.from_json(" " * (MAX_ENROLMENT_JSON_BYTES + 1))
