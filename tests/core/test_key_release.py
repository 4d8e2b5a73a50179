"""Key release (``derive_key``) and PIN change without the biometric (``MixedSketch.rekey``).

A released key is ``HKDF(argon2id(secret message, per-enrolment salt), info = context)``: the same for
every genuine sample and after the record is stored and reloaded, independent per context and
per enrolment, and never produced for a wrong sample or PIN.
"""

from __future__ import annotations

import argon2
import pytest

from sketchauth.enrolment import (
    KEY_BYTES,
    Enrolment,
    derive_key,
    enrol,
    hasher,
    key_cost_limit,
    key_from_message,
    secret_message,
    verify,
)
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch

PH = hasher("test")
N = 1 << 20
TEMPLATE = [987_651, 876_541, 765_431, 654_321]
GENUINE = [[987_640, 876_560, 765_400, 654_300], [987_700, 876_500, 765_470, 654_280], TEMPLATE]
IMPOSTOR = [12_345, 23_456, 34_567, 45_678]
SET = {3, 70, 1000, 2024, 65535}
SET_SAMPLE = {3, 70, 1001, 2024, 65535, 9}


def _interval() -> IntervalSketch:
    return IntervalSketch(n=N, v=50, features=4)


def _reload(record: Enrolment) -> Enrolment:
    """What a store gives back: the same bytes and strings, a fresh object."""
    return Enrolment(bytes(record.helper), str(record.secret_hash), record.report, str(record.key_params))


def test_same_key_for_every_genuine_sample_and_after_reload() -> None:
    sketch = _interval()
    record = enrol(sketch, TEMPLATE, password_hasher=PH)
    keys = {derive_key(sketch, record, s, context=b"disk", password_hasher=PH) for s in GENUINE}
    reloaded = _reload(record)
    keys.add(
        derive_key(
            IntervalSketch.from_params(sketch.params()), reloaded, GENUINE[0], context=b"disk", password_hasher=PH
        )
    )
    assert len(keys) == 1
    (key,) = keys
    assert isinstance(key, bytes) and len(key) == KEY_BYTES == 32


def test_key_is_an_hkdf_expansion_of_argon2id_through_public_apis() -> None:
    """Recomputed from the stored public parameters with argon2-cffi's public ``hash_secret_raw`` and
    pyca/cryptography's HKDF (RFC 5869): one argon2id, one HKDF expansion per context."""
    import base64

    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF

    sketch = _interval()
    record = enrol(sketch, TEMPLATE, password_hasher=PH)
    _, _, costs, salt_b64 = record.key_params.split("$")[1:]
    memory, passes, lanes = (int(part.split("=")[1]) for part in costs.split(","))
    salt = base64.b64decode(salt_b64 + "==")
    assert len(salt) == 16
    assert (memory, passes, lanes) == (PH.memory_cost, PH.time_cost, PH.parallelism)
    tag = b"sketchauth/key/v2\x00"
    root = argon2.low_level.hash_secret_raw(
        tag + secret_message(sketch, TEMPLATE),
        salt,
        time_cost=passes,
        memory_cost=memory,
        parallelism=lanes,
        hash_len=32,
        type=argon2.low_level.Type.ID,
    )
    for context in (b"ctx", b"disk"):
        expected = HKDF(algorithm=hashes.SHA256(), length=32, salt=tag, info=context).derive(root)
        assert derive_key(sketch, record, GENUINE[0], context=context, password_hasher=PH) == expected
    assert root != derive_key(sketch, record, GENUINE[0], context=b"ctx", password_hasher=PH)


def test_stored_costs_are_bounded_by_the_deployments_profiles() -> None:
    """A record asking for more than the strongest profile (64 MiB, t = 3, p = 4) is refused before any work."""
    limit = key_cost_limit(PH)
    assert (limit.memory_kib, limit.time_cost, limit.parallelism) == (65536, 3, 4)
    big = "$argon2id$v=19$m=2097152,t=16,p=1$AAAAAAAAAAAAAAAAAAAAAA"  # 2 GiB, t = 16: 14.5 s before
    with pytest.raises(SketchFormatError, match="out of range"):
        key_from_message(b"m", big, b"ctx", limit=limit)
    with pytest.raises(SketchFormatError, match="out of range"):
        key_from_message(b"m", "$argon2id$v=19$m=65537,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA", b"ctx")
    dear = key_cost_limit(hasher("rfc9106-low-memory"))
    assert dear == limit  # every known profile is inside: a cheaper profile still releases older keys
    assert len(key_from_message(b"m", "$argon2id$v=19$m=64,t=3,p=4$AAAAAAAAAAAAAAAAAAAAAA", b"c", limit=limit)) == 32


def test_keys_differ_per_context_and_per_enrolment() -> None:
    sketch = _interval()
    first = enrol(sketch, TEMPLATE, password_hasher=PH)
    second = enrol(sketch, TEMPLATE, password_hasher=PH)
    keys = [
        derive_key(sketch, first, GENUINE[0], context=b"disk", password_hasher=PH),
        derive_key(sketch, first, GENUINE[0], context=b"mail", password_hasher=PH),
        derive_key(sketch, second, GENUINE[0], context=b"disk", password_hasher=PH),
    ]
    assert len(set(keys)) == 3
    assert first.key_params != second.key_params


def test_wrong_sample_gives_no_key() -> None:
    sketch = _interval()
    record = enrol(sketch, TEMPLATE, password_hasher=PH)
    assert derive_key(sketch, record, IMPOSTOR, context=b"disk", password_hasher=PH) is None
    with pytest.raises(SampleError):
        derive_key(sketch, record, [1, 2, 3], context=b"disk", password_hasher=PH)


def test_pin_is_part_of_the_key_and_a_wrong_pin_gives_none() -> None:
    cascade = Cascade(PinSketch(16, 8), pin=ExactKey("test"))
    record = enrol(cascade, [SET, "123456"], password_hasher=PH)
    key = derive_key(cascade, record, [SET_SAMPLE, "123456"], context=b"vpn", password_hasher=PH)
    assert key is not None and len(key) == 32
    assert key == derive_key(cascade, _reload(record), [SET, "123456"], context=b"vpn", password_hasher=PH)
    assert derive_key(cascade, record, [SET_SAMPLE, "123457"], context=b"vpn", password_hasher=PH) is None


@pytest.mark.parametrize("context", [b"", b"x" * 257, "disk", None])
def test_bad_context_is_refused(context: object) -> None:
    sketch = _interval()
    record = enrol(sketch, TEMPLATE, password_hasher=PH)
    with pytest.raises(ParameterError, match="context must be"):
        derive_key(sketch, record, GENUINE[0], context=context, password_hasher=PH)  # type: ignore[arg-type]


def test_derive_key_works_after_the_json_round_trip() -> None:
    """What a library user stores: Enrolment.to_json(); loaded back, the same key for the same person."""
    sketch = _interval()
    record = enrol(sketch, TEMPLATE, password_hasher=PH)
    text = record.to_json()
    loaded = Enrolment.from_json(text)
    assert loaded == record and isinstance(text, str)
    rebuilt = IntervalSketch.from_params(sketch.params())
    key = derive_key(sketch, record, GENUINE[0], context=b"disk", password_hasher=PH)
    assert key is not None
    assert derive_key(rebuilt, loaded, GENUINE[1], context=b"disk", password_hasher=PH) == key
    assert (
        derive_key(rebuilt, Enrolment.from_json(text.encode()), IMPOSTOR, context=b"disk", password_hasher=PH) is None
    )


def test_enrolment_without_key_parameters_is_refused_with_what_to_do() -> None:
    sketch = _interval()
    record = enrol(sketch, TEMPLATE, password_hasher=PH)
    old = Enrolment(record.helper, record.secret_hash, record.report)
    assert verify(sketch, old, GENUINE[0], password_hasher=PH)
    with pytest.raises(ParameterError, match=r"re-enrol") as refused:
        derive_key(sketch, old, GENUINE[0], context=b"disk", password_hasher=PH)
    assert "to_json" in str(refused.value)  # says how to keep the key parameters of a fresh enrolment


@pytest.mark.parametrize(
    "params",
    [
        "$argon2id$v=19$m=8,t=1,p=1$short",
        "$argon2i$v=19$m=8,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA",
        "$argon2id$v=19$m=99999999,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA",
        "$argon2id$v=19$m=8,t=17,p=1$AAAAAAAAAAAAAAAAAAAAAA",
        "$argon2id$v=19$m=8,t=1,p=2$AAAAAAAAAAAAAAAAAAAAAA",
        "$argon2id$v=19$m=8,t=1,p=1$AAAAAAAAAAAAAAAAAAAAAA\n",
    ],
)
def test_tampered_key_parameters_are_refused(params: str) -> None:
    with pytest.raises(SketchFormatError):
        key_from_message(b"m", params, b"ctx")


def test_rekey_changes_the_pin_without_the_biometric() -> None:
    cascade = Cascade(PinSketch(16, 8), pin=ExactKey("test"))
    record = enrol(cascade, [SET, "123456"], password_hasher=PH)
    helper = cascade.rekey(record.helper, 1, "123456", "654321")
    assert cascade.decode(helper, [SET_SAMPLE, "654321"])[1] == "654321"
    assert sorted(cascade.decode(helper, [SET_SAMPLE, "654321"])[0].tolist()) == sorted(SET)
    with pytest.raises(DecodeError):
        cascade.decode(helper, [SET_SAMPLE, "123456"])
    # Fresh salt and nonce: nothing of the old mix remains, the sketch's own part is unchanged.
    old_stored, old_r = cascade._unpack(cascade.payload(record.helper))
    new_stored, new_r = cascade._unpack(cascade.payload(helper))
    assert old_r.salts[1] != new_r.salts[1] and old_r.nonces[0] != new_r.nonces[0]
    assert old_stored[0] != new_stored[0]


def test_rekey_refuses_a_fuzzy_component() -> None:
    cascade = Cascade(PinSketch(16, 8), pin=ExactKey("test"))
    record = enrol(cascade, [SET, "123456"], password_hasher=PH)
    with pytest.raises(ParameterError, match="not an exact key"):
        cascade.rekey(record.helper, 0, "123456", "654321")
