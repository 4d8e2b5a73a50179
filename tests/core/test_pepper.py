"""Pepper-sealed records (sketchauth.pepper): ChaCha20-Poly1305 round trips, associated data, refusals,
fresh nonces, no common difference, and pepper texts judged by entropy."""

from __future__ import annotations

import base64
import hashlib
import time
import warnings

import argon2.low_level
import pytest
from argon2.low_level import Type
from hypothesis import given, settings
from hypothesis import strategies as st
from test_mixing import FAMILIES, IDS, _same

from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.mixing import Cascade, ExactKey, FuzzySecret
from sketchauth.pepper import (
    MAX_SEALED_BYTES,
    PEPPER_KDF,
    PEPPER_NONCE_BYTES,
    PEPPER_TEXT_PREFIX,
    SEAL_TAG_BYTES,
    Pepper,
    PepperKdf,
    associated_data,
    kdf,
    new_nonce,
    new_pepper_text,
    pepper_text_bits,
    rewrap,
    unwrap,
    wrap,
)
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch

PEPPER_A = Pepper(b"A" * 32)
PEPPER_B = Pepper(b"B" * 32)
#: Peppers the round trips draw from (each new secret costs one argon2id: the key derivation is tested apart).
PEPPERS = (PEPPER_A, PEPPER_B, Pepper(bytes(16)), Pepper(bytes(range(64))))
S3 = (
    "asymmetric-s3",
    AsymmetricIntervalSketch(n=256, q=6, scheme="s3", features=4),
    ([10, 100, 200, 250], [3, 5, 6, 2]),
    [11, 97, 204, 250],
)
#: A PinSketch whose syndromes are dependent (|S| < t·m): no format-preserving pad existed for it.
DEPENDENT = ("pinsketch-dependent", PinSketch(9, 30), list(range(1, 41)), list(range(2, 42)))
ALL = [*FAMILIES, S3, DEPENDENT]
ALL_IDS = [*IDS, "asymmetric-s3", "pinsketch-dependent"]
#: What a PIN can be mixed into (the PIN's own pad is format-preserving: not the dependent PinSketch).
MIXABLE, MIXABLE_IDS = ALL[:-1], ALL_IDS[:-1]


def _cascade(sketch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Cascade(sketch, pin=ExactKey.pin(6, "test"))


# -- the key derivation ----------------------------------------------------------------------------
def test_kdf_is_pycas_hkdf_and_and_matches_rfc5869_test_case_1():
    okm = kdf(bytes([0x0B] * 22), salt=bytes(range(13)), info=bytes(range(0xF0, 0xFA)), length=42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")


def test_seal_is_chacha20_poly1305_under_the_hkdf_key_of_the_argon2id_master_key():
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    master = argon2.low_level.hash_secret_raw(b"A" * 32, b"sketchauth/pepper/v3", 3, 128 * 1024, 1, 32, Type.ID)
    key = kdf(master, salt=b"sketchauth/pepper/v3", info=b"record seal key")
    nonce, ad = bytes(range(12)), associated_data(b"user", b"7")
    assert wrap(b"record", PEPPER_A, nonce, ad) == ChaCha20Poly1305(key).encrypt(nonce, b"record", ad)
    assert PEPPER_A.seal(b"record", nonce, ad) == wrap(b"record", PEPPER_A, nonce, ad)
    assert PEPPER_A.open(wrap(b"record", PEPPER_A, nonce, ad), nonce, ad) == b"record"


def test_the_pepper_kdf_is_argon2id_with_the_stated_parameters():
    assert PepperKdf(time_cost=3, memory_kib=128 * 1024, parallelism=1, salt=b"sketchauth/pepper/v3") == PEPPER_KDF
    assert PEPPER_KDF.stretch(b"A" * 32) == argon2.low_level.hash_secret_raw(
        b"A" * 32, b"sketchauth/pepper/v3", 3, 131072, 1, 32, Type.ID
    )


def test_pepper_id_is_stable_distinct_derived_from_the_memory_hard_master_and_the_secret_is_not_kept():
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    assert Pepper(b"A" * 32).id == PEPPER_A.id
    assert PEPPER_A.id != PEPPER_B.id
    assert len(PEPPER_A.id) == 16
    master = PEPPER_KDF.stretch(b"A" * 32)
    assert kdf(master, salt=b"sketchauth/pepper/v3", info=b"pepper id", length=8).hex() == PEPPER_A.id
    # The legacy id (the derivation before the memory-hard step): what databases sealed before it carry.
    id_key = kdf(b"A" * 32, salt=b"sketchauth/pepper/v2", info=b"pepper id key")
    tag = ChaCha20Poly1305(id_key).encrypt(bytes(12), bytes(1024), b"sketchauth/pepper-id/v2")[-16:]
    assert tag[:8].hex() == PEPPER_A.legacy_id != PEPPER_A.id
    assert "AAAA" not in repr(PEPPER_A) and PEPPER_A.secret == b""
    assert PEPPER_A.derive(b"x") != PEPPER_A.derive(b"y") != PEPPER_B.derive(b"y")


def test_a_legacy_seal_opens_read_only_under_the_legacy_keys():
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    legacy_key = kdf(b"A" * 32, salt=b"sketchauth/pepper/v2", info=b"record seal key")
    nonce, ad = bytes(range(12)), b"ad"
    old = ChaCha20Poly1305(legacy_key).encrypt(nonce, b"record", ad)
    assert PEPPER_A.legacy().open(old, nonce, ad) == b"record"
    with pytest.raises(SketchFormatError):
        PEPPER_A.open(old, nonce, ad)  # not under the current keys
    with pytest.raises(ParameterError, match="only opens"):
        PEPPER_A.legacy().seal(b"record", nonce, ad)


#: A guess against the pepper id (or a sealed record) must cost at least this, in seconds, on the benchmark machine.
GUESS_FLOOR_SECONDS = 0.25


def test_the_pepper_id_oracle_costs_a_memory_hard_evaluation_a_guess():
    """The attack on the stored id: a dictionary of human-made peppers, each candidate tested against the id.

    Before the memory-hard step this took 85 µs a guess (401 guesses, 34 ms, to find a human-made
    pepper); each guess now runs argon2id first. Three uncached candidates are timed (the least of
    the three: load only makes a guess slower), and the right one is found as before: the id still
    identifies its pepper, it only costs more to test.
    """
    secret = b"sketchauth-production-pepper-2026-v1-do-not-share"
    target = Pepper(secret).id
    candidates = [b"sketchauth-production-pepper-2026-v%d-do-not-share" % v for v in (7, 8, 9)]
    times = []
    for candidate in candidates:
        start = time.perf_counter()
        master = PEPPER_KDF.stretch(candidate)  # the attacker's cheapest test: no cache, no object
        guess = kdf(master, salt=PEPPER_KDF.salt, info=b"pepper id", length=8).hex()
        times.append(time.perf_counter() - start)
        assert guess != target
    assert min(times) >= GUESS_FLOOR_SECONDS, times
    assert kdf(PEPPER_KDF.stretch(secret), salt=PEPPER_KDF.salt, info=b"pepper id", length=8).hex() == target


@pytest.mark.parametrize("bad", [b"short", b"x" * 15, "a-string-not-bytes", b"x" * 1025])
def test_weak_or_malformed_peppers_are_refused(bad):
    with pytest.raises(ParameterError, match="pepper"):
        Pepper(bad)


#: The human-made peppers a red team saw accepted (credited 169, 224, 246 bits and more by the judge).
HUMAN_MADE = [
    "sketchauth-production-pepper-2026-v1-do-not-share",
    "My dog's name is Rex and he was born 2019-04-01!!",
    hashlib.sha256(b"password").hexdigest(),
    base64.b64encode(b"password" * 4).decode(),
]


@pytest.mark.parametrize("text", HUMAN_MADE, ids=["phrase", "sentence", "sha256-hex", "base64"])
def test_human_made_peppers_are_refused_unless_explicitly_allowed(text):
    with pytest.raises(ParameterError, match=r"made by a machine.*sketchauth pepper new"):
        Pepper.from_text(text)
    # The explicit override takes them (the service logs it as INSECURE); the KDF still prices each guess.
    assert Pepper.from_text(text, unformatted=True).id


@pytest.mark.parametrize(
    "text",
    [
        "correct horse battery staple",
        "correcthorsebatterystaple" * 2,
        "deployment-A-pepper-0123456789",
        "Tr0ub4dor&3" * 4,
        "a" * 64,
        "0123456789abcdef" * 3,
        "short",
        "a" * 21,
    ],
)
def test_unformatted_human_phrases_and_patterns_are_refused_whatever_their_length(text):
    with pytest.raises(ParameterError, match="machine"):
        Pepper.from_text(text)
    with pytest.raises(ParameterError, match="128 bits"):
        Pepper.from_text(text, unformatted=True)
    assert pepper_text_bits(text) < 128 or len(text) < 22


def test_machine_made_peppers_are_accepted_and_a_mistyped_one_is_refused():
    import secrets

    texts = {new_pepper_text() for _ in range(50)}
    assert len(texts) == 50 and all(t.startswith(PEPPER_TEXT_PREFIX) and len(t) == 53 for t in texts)
    text = sorted(texts)[0]
    assert Pepper.from_text(" " + text + "\n") == Pepper.from_text(text)
    body = text[len(PEPPER_TEXT_PREFIX) :]
    for position in (0, 20, len(body) - 1):
        changed = "A" if body[position] != "A" else "B"
        typo = PEPPER_TEXT_PREFIX + body[:position] + changed + body[position + 1 :]
        with pytest.raises(ParameterError, match=r"checksum|malformed"):
            Pepper.from_text(typo)
    with pytest.raises(ParameterError, match="malformed"):
        Pepper.from_text(text[:-3])
    # A random token of the earlier advice is not in the format: refused unless allowed (an older deployment's).
    token = secrets.token_urlsafe(32)
    with pytest.raises(ParameterError, match="machine"):
        Pepper.from_text(token)
    assert pepper_text_bits(token) >= 160
    # Retiring peppers (a rotation's old ones) are checked by length only.
    assert Pepper.from_text("deployment-A-pepper-0123456789", unformatted=True, judge=False).id


# -- round trips -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,sketch,secret,sample", ALL, ids=ALL_IDS)
@settings(max_examples=15, deadline=None)
@given(pepper=st.sampled_from(PEPPERS), nonce=st.binary(min_size=12, max_size=12))
def test_wrap_unwrap_round_trip_for_every_scheme(name, sketch, secret, sample, pepper, nonce):
    helper = sketch.encode(secret)
    stored = wrap(helper, pepper, nonce)
    assert len(stored) == len(helper) + SEAL_TAG_BYTES
    assert helper not in stored  # the header, parameters and payload are all sealed
    assert unwrap(stored, pepper, nonce) == helper
    assert _same(sketch, sketch.decode(unwrap(stored, pepper, nonce), sample), secret)


@pytest.mark.parametrize("name,sketch,secret,sample", MIXABLE, ids=MIXABLE_IDS)
def test_wrapped_pin_cascade_round_trips_and_decodes(name, sketch, secret, sample):
    cascade = _cascade(sketch)
    helper = cascade.encode([secret, "123456"])
    nonce = new_nonce()
    stored = wrap(helper, PEPPER_A, nonce)
    assert len(stored) == len(helper) + SEAL_TAG_BYTES
    assert unwrap(stored, PEPPER_A, nonce) == helper
    got = cascade.decode(unwrap(stored, PEPPER_A, nonce), [sample, "123456"])
    assert _same(sketch, got[0], secret)


def _two_biometrics():
    """Interval + PinSketch second biometric: symbols in different groups (no common pad existed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Cascade(
            FuzzySecret(IntervalSketch(n=1000, v=4, features=4), min_entropy=36, importance=2),
            FuzzySecret(PinSketch(16, 4), min_entropy=60, importance=1, key_bits=64),
        )


@settings(max_examples=15, deadline=None)
@given(key=st.sampled_from(PEPPERS), nonce=st.binary(min_size=12, max_size=12))
def test_two_biometrics_in_different_groups_are_sealed(key, nonce):
    mixed = _two_biometrics()
    secret = [[10, 200, 300, 999], [3, 70, 1000, 2024]]
    helper = mixed.encode(secret)
    stored = wrap(helper, key, nonce)
    assert len(stored) == len(helper) + SEAL_TAG_BYTES
    assert unwrap(stored, key, nonce) == helper
    got = mixed.decode(unwrap(stored, key, nonce), [[11, 199, 301, 998], [3, 70, 1001, 2024]])
    assert list(got[0]) == secret[0] and sorted(got[1].tolist()) == secret[1]


@pytest.mark.parametrize("name,sketch,secret,sample", ALL, ids=ALL_IDS)
def test_wrong_pepper_is_refused(name, sketch, secret, sample):
    helper = sketch.encode(secret)
    nonce = bytes(range(12))
    stored = wrap(helper, PEPPER_A, nonce)
    with pytest.raises(SketchFormatError, match="not sealed by this pepper"):
        unwrap(stored, PEPPER_B, nonce)
    with pytest.raises(SketchFormatError, match="not sealed by this pepper"):
        unwrap(stored, PEPPER_A, bytes(12))  # another nonce


@pytest.mark.parametrize("name,sketch,secret,sample", ALL, ids=ALL_IDS)
def test_every_flipped_bit_is_refused(name, sketch, secret, sample):
    stored = wrap(sketch.encode(secret), PEPPER_A, bytes(12))
    for position in {0, len(stored) // 2, len(stored) - SEAL_TAG_BYTES - 1, len(stored) - 1}:
        for bit in (0, 7):
            altered = bytearray(stored)
            altered[position] ^= 1 << bit
            with pytest.raises(SketchFormatError, match="altered"):
                unwrap(bytes(altered), PEPPER_A, bytes(12))
    with pytest.raises(SketchFormatError):
        unwrap(stored[:-1], PEPPER_A, bytes(12))  # truncated
    with pytest.raises(SketchFormatError):
        unwrap(stored + b"\0", PEPPER_A, bytes(12))  # extended


def test_associated_data_binds_the_record_to_its_place():
    """A record sealed for one user, version or deployment does not open for another (cut-and-paste)."""
    nonce = new_nonce()
    ad = associated_data(b"deployment", b"user-M", (3).to_bytes(8, "big"))
    stored = wrap(b"M's helper and hash", PEPPER_A, nonce, ad)
    assert unwrap(stored, PEPPER_A, nonce, ad) == b"M's helper and hash"
    for other in (
        associated_data(b"deployment", b"user-V", (3).to_bytes(8, "big")),
        associated_data(b"deployment", b"user-M", (2).to_bytes(8, "big")),
        associated_data(b"other", b"user-M", (3).to_bytes(8, "big")),
        b"",
    ):
        with pytest.raises(SketchFormatError, match="altered"):
            unwrap(stored, PEPPER_A, nonce, other)
    assert associated_data(b"ab", b"c") != associated_data(b"a", b"bc")
    with pytest.raises(ParameterError, match="bytes"):
        associated_data("text")  # type: ignore[arg-type]


def test_wrapped_helper_is_not_a_helper():
    sketch = PinSketch(16, 8)
    secret = [3, 70, 1000, 2024, 65535]
    stored = wrap(sketch.encode(secret), PEPPER_A, bytes(12))
    with pytest.raises(SketchFormatError):
        load_sketch(stored)  # the self-describing header is sealed too


def test_lengths_are_bounded_before_any_work():
    with pytest.raises(SketchFormatError, match="bytes"):
        unwrap(b"\0" * (SEAL_TAG_BYTES - 1), PEPPER_A, bytes(12))
    with pytest.raises(SketchFormatError, match="bytes"):
        unwrap(b"\0" * (MAX_SEALED_BYTES + SEAL_TAG_BYTES + 1), PEPPER_A, bytes(12))
    with pytest.raises(SketchFormatError, match="bytes"):
        wrap(b"\0" * (MAX_SEALED_BYTES + 1), PEPPER_A, bytes(12))
    assert unwrap(wrap(b"", PEPPER_A, bytes(12)), PEPPER_A, bytes(12)) == b""


# -- fresh nonces ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,sketch,secret,sample", ALL, ids=ALL_IDS)
def test_different_nonces_give_different_helpers(name, sketch, secret, sample):
    helper = sketch.encode_with(sketch.check_secret(secret), _fixed_randomness(sketch, secret))
    stored = [wrap(helper, PEPPER_A, bytes([i]) * PEPPER_NONCE_BYTES) for i in range(4)]
    assert len(set(stored)) == 4
    assert len({s[:-SEAL_TAG_BYTES] for s in stored}) == 4 and len({s[-SEAL_TAG_BYTES:] for s in stored}) == 4


def _fixed_randomness(sketch, secret):
    return sketch.draw_randomness(sketch.check_secret(secret))


def _differences(helpers_a, helpers_b) -> list[bytes]:
    """Byte-wise XOR of two deployments' sealed records of the same people (the sealed bodies)."""
    return [
        bytes(x ^ y for x, y in zip(a[:-SEAL_TAG_BYTES], b[:-SEAL_TAG_BYTES], strict=True))
        for a, b in zip(helpers_a, helpers_b, strict=True)
    ]


@pytest.mark.parametrize(
    "sketch,secrets",
    [
        (PinSketch(16, 8), [sorted({i, 1000 + i, 2000 + 3 * i, 30000 + i}) for i in range(1, 21)]),
        (IntervalSketch(n=1000, v=4, features=6), [[(7 * i + j * 101) % 1000 for j in range(6)] for i in range(20)]),
        (CodeOffsetSketch(16, 2), [bytes((i * 7 + j) % 256 for j in range(16)) for i in range(20)]),
        (
            AsymmetricIntervalSketch(n=256, q=6, scheme="s1", features=4),
            [([10 + i, 100 + i, 200 - i, 250 - i], [3, 5, 6, 2]) for i in range(20)],
        ),
    ],
    ids=["pinsketch", "interval", "code-offset", "asymmetric-s1"],
)
def test_two_deployments_share_no_common_difference(sketch, secrets):
    """Deterministic (and linear) schemes: same people, two peppers, per-enrolment nonces.

    The control shows the test can fail: a keystream from the pepper alone (one nonce for
    everyone) gives every person's two records the same difference, which links them all.
    """
    clear = [sketch.encode(s) for s in secrets]
    if sketch.scheme_name != "code-offset":  # deterministic: identical helpers without a pepper
        assert clear == [sketch.encode(s) for s in secrets]
    a = [wrap(h, PEPPER_A, new_nonce()) for h in clear]
    b = [wrap(h, PEPPER_B, new_nonce()) for h in clear]
    assert not set(a) & set(b)
    assert len(set(_differences(a, b))) == len(secrets)
    fixed = bytes(12)
    a0 = [wrap(h, PEPPER_A, fixed) for h in clear]
    b0 = [wrap(h, PEPPER_B, fixed) for h in clear]
    if sketch.scheme_name != "code-offset":
        assert len(set(_differences(a0, b0))) == 1


# -- rotation ------------------------------------------------------------------------------------------
def test_rewrap_from_clear_and_from_an_old_pepper():
    sketch = IntervalSketch(n=1000, v=4, features=6)
    helper = sketch.encode([10, 200, 300, 999, 0, 517])
    stored, nonce = rewrap(helper, None, None, PEPPER_A)
    assert unwrap(stored, PEPPER_A, nonce) == helper
    again, nonce2 = rewrap(stored, PEPPER_A, nonce, PEPPER_B)
    assert nonce2 != nonce
    assert unwrap(again, PEPPER_B, nonce2) == helper
    with pytest.raises(ParameterError, match="nonce"):
        rewrap(stored, PEPPER_A, None, PEPPER_B)
    with pytest.raises(SketchFormatError, match="not sealed by this pepper"):
        rewrap(stored, PEPPER_B, nonce, PEPPER_A)  # the wrong old pepper


def test_malformed_arguments_are_refused():
    sketch = IntervalSketch(n=1000, v=4, features=6)
    helper = sketch.encode([10, 200, 300, 999, 0, 517])
    with pytest.raises(SketchFormatError, match="nonce"):
        wrap(helper, PEPPER_A, b"short")
    with pytest.raises(ParameterError, match="Pepper"):
        wrap(helper, b"A" * 32, bytes(12))  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="bytes"):
        wrap("not bytes", PEPPER_A, bytes(12))  # type: ignore[arg-type]
    with pytest.raises(SketchFormatError):
        unwrap(b"not a sealed helper", PEPPER_A, bytes(12))
