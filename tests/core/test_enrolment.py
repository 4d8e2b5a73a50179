"""enrol/verify: helper data + argon2id hash; one outcome for every failure."""

from __future__ import annotations

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
