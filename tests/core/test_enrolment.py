"""enrol/verify: helper data + argon2id hash; one outcome for every failure."""

from __future__ import annotations

import json

import pytest

from sketchauth.enrolment import HASH_PROFILES, enrol, hasher, secret_message, verify
from sketchauth.errors import ParameterError, SampleError
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch

PH = hasher("test")


def test_genuine_impostor_and_far_sample() -> None:
    sketch = IntervalSketch(n=256, v=8, features=4)
    record = enrol(sketch, [120, 33, 200, 71], password_hasher=PH)
    assert record.secret_hash.startswith("$argon2id$")
    assert verify(sketch, record, [123, 30, 205, 71], password_hasher=PH) is True
    assert verify(sketch, record, [140, 33, 200, 71], password_hasher=PH) is False  # wrong lattice point
    assert verify(sketch, record, [255, 0, 255, 0], password_hasher=PH) is False  # decode error


def test_secret_is_not_in_stored_record() -> None:
    secret = bytes(range(100, 132))
    sketch = CodeOffsetSketch(32, 4)
    record = enrol(sketch, secret, password_hasher=PH)
    assert secret not in record.helper
    assert secret.hex() not in record.secret_hash


def test_domain_separation_between_parameters() -> None:
    a = IntervalSketch(n=256, v=8, features=2)
    b = IntervalSketch(n=256, v=9, features=2)
    assert secret_message(a, [1, 2]) != secret_message(b, [1, 2])
    record = enrol(a, [10, 20], password_hasher=PH)
    forged = type(record)(helper=b.encode([10, 20]), secret_hash=record.secret_hash, report=record.report)
    assert verify(b, forged, [10, 20], password_hasher=PH) is False


def _message_as_specified(sketch: IntervalSketch, secret: list[int]) -> bytes:
    """The hashed message spelled out: tag, scheme, canonical parameters, canonical secret."""
    scheme = json.dumps({"scheme": sketch.scheme_name}, sort_keys=True).encode()
    params = json.dumps(sketch.params(), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    return b"sketchauth/v1\x00" + scheme + b"\x00" + params + b"\x00" + sketch.secret_bytes(secret)


def test_secret_message_header_kept_per_sketch_while_its_parameters_stay() -> None:
    a = IntervalSketch(n=256, v=8, features=2)
    b = IntervalSketch(n=256, v=[8, 9], features=2, step=0.5)
    for _ in range(2):  # computed, then kept
        for sketch in (a, b):
            for secret in ([1, 2], [100, 7]):
                assert secret_message(sketch, secret) == _message_as_specified(sketch, secret)
    changed = {**a.params(), "n": 512}
    a.params = lambda: changed  # type: ignore[method-assign]
    assert b'"n":512' in secret_message(a, [1, 2])
    with pytest.raises(SampleError):
        secret_message(a, [1])


def test_malformed_sample_is_a_caller_error() -> None:
    sketch = IntervalSketch(n=256, v=8, features=2)
    record = enrol(sketch, [10, 20], password_hasher=PH)
    with pytest.raises(SampleError):
        verify(sketch, record, [10], password_hasher=PH)


def test_profiles() -> None:
    assert set(HASH_PROFILES) == {"rfc9106-low-memory", "owasp", "test"}
    assert hasher("owasp").memory_cost == 19456
    with pytest.raises(ParameterError):
        hasher("fast")
