"""Pepper-diversified helpers (sketchauth.pepper): round trips, fresh pads per enrolment, no common difference."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.mixing import Cascade, ExactKey, FuzzySecret
from sketchauth.pepper import (
    PEPPER_NONCE_BYTES,
    Pepper,
    hkdf_sha256,
    new_nonce,
    rewrap,
    unwrap,
    wrap,
)
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import load_sketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from tests.test_mixing import FAMILIES, IDS, _same

PEPPER_A = Pepper(b"A" * 32)
PEPPER_B = Pepper(b"B" * 32)
S3 = (
    "asymmetric-s3",
    AsymmetricIntervalSketch(n=256, q=6, scheme="s3", features=4),
    ([10, 100, 200, 250], [3, 5, 6, 2]),
    [11, 97, 204, 250],
)
ALL = [*FAMILIES, S3]
ALL_IDS = [*IDS, "asymmetric-s3"]


def _cascade(sketch):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Cascade(sketch, pin=ExactKey.pin(6, "test"))


# -- the key derivation ----------------------------------------------------------------------------
def test_hkdf_matches_rfc5869_test_case_1():
    okm = hkdf_sha256(bytes([0x0B] * 22), salt=bytes(range(13)), info=bytes(range(0xF0, 0xFA)), length=42)
    assert okm.hex() == ("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf34007208d5b887185865")


def test_pepper_id_is_stable_distinct_and_the_secret_is_not_kept():
    assert Pepper(b"A" * 32).id == PEPPER_A.id
    assert PEPPER_A.id != PEPPER_B.id
    assert len(PEPPER_A.id) == 16
    assert PEPPER_A.id.encode() not in PEPPER_A.key
    assert "AAAA" not in repr(PEPPER_A) and PEPPER_A.secret == b""


@pytest.mark.parametrize("bad", [b"short", b"x" * 15, "a-string-not-bytes", b"x" * 1025])
def test_weak_or_malformed_peppers_are_refused(bad):
    with pytest.raises(ParameterError, match="pepper"):
        Pepper(bad)


@pytest.mark.parametrize("text", ["0123456789abcdef0123456789abcde", "short", "a" * 21])
def test_pepper_strings_need_128_bits(text):
    with pytest.raises(ParameterError, match="128 bits"):
        Pepper.from_text(text)


def test_pepper_strings_of_128_bits_are_accepted():
    assert Pepper.from_text("0123456789abcdef0123456789abcdef").id
    assert Pepper.from_text(" " + "Z" * 22 + "\n") == Pepper.from_text("Z" * 22)


# -- round trips -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,sketch,secret,sample", ALL, ids=ALL_IDS)
@settings(max_examples=15, deadline=None)
@given(key=st.binary(min_size=16, max_size=64), nonce=st.binary(min_size=16, max_size=16))
def test_wrap_unwrap_round_trip_for_every_scheme(name, sketch, secret, sample, key, nonce):
    helper = sketch.encode(secret)
    pepper = Pepper(key)
    stored = wrap(sketch, helper, pepper, nonce)
    assert len(stored) == len(helper)
    assert load_sketch(stored) == sketch  # a valid helper of the same scheme and parameters
    assert unwrap(sketch, stored, pepper, nonce) == helper
    assert unwrap(None, stored, pepper, nonce) == helper  # the sketch rebuilt from the helper


@pytest.mark.parametrize("name,sketch,secret,sample", ALL, ids=ALL_IDS)
def test_wrapped_pin_cascade_round_trips_and_decodes(name, sketch, secret, sample):
    cascade = _cascade(sketch)
    helper = cascade.encode([secret, "123456"])
    nonce = new_nonce()
    stored = wrap(cascade, helper, PEPPER_A, nonce)
    assert unwrap(None, stored, PEPPER_A, nonce) == helper
    got = cascade.decode(unwrap(cascade, stored, PEPPER_A, nonce), [sample, "123456"])
    assert _same(sketch, got[0], secret)


@pytest.mark.parametrize("name,sketch,secret,sample", ALL, ids=ALL_IDS)
def test_wrong_pepper_unwraps_to_a_valid_helper(name, sketch, secret, sample):
    helper = sketch.encode(secret)
    nonce = bytes(range(16))
    other = unwrap(sketch, wrap(sketch, helper, PEPPER_A, nonce), PEPPER_B, nonce)
    sketch.payload(other)  # parses: a wrong pepper is not recognisable by a malformed result


def test_wrapped_helper_does_not_decode_without_unwrapping():
    sketch = PinSketch(16, 8)
    secret = [3, 70, 1000, 2024, 65535]
    stored = wrap(sketch, sketch.encode(secret), PEPPER_A, bytes(16))
    try:
        got = sketch.decode(stored, secret)
    except Exception:  # DecodeError: the padded syndromes describe no small set difference
        return
    assert sorted(got.tolist()) != sorted(secret)


# -- fresh pads ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,sketch,secret,sample", ALL, ids=ALL_IDS)
def test_different_nonces_give_different_helpers(name, sketch, secret, sample):
    helper = sketch.encode_with(sketch.check_secret(secret), _fixed_randomness(sketch, secret))
    stored = {wrap(sketch, helper, PEPPER_A, bytes([i]) * PEPPER_NONCE_BYTES) for i in range(4)}
    assert len(stored) == 4


def _fixed_randomness(sketch, secret):
    return sketch.draw_randomness(sketch.check_secret(secret))


def _differences(sketch, helpers_a, helpers_b) -> list[tuple[int, ...]]:
    """Symbol-wise group difference of two deployments' helpers of the same people."""
    out = []
    for a, b in zip(helpers_a, helpers_b, strict=True):
        sa, space = sketch.symbols(sketch.payload(a))
        sb, _ = sketch.symbols(sketch.payload(b))
        if space.kind == "xor":
            out.append(tuple(int(x) for x in sa ^ sb))
        else:
            m = space.moduli.astype(np.int64)
            out.append(tuple(int(x) for x in (sa.astype(np.int64) - sb.astype(np.int64)) % m))
    return out


@pytest.mark.parametrize(
    "sketch,secrets",
    [
        (PinSketch(16, 8), [sorted({i, 1000 + i, 2000 + 3 * i, 30000 + i}) for i in range(1, 21)]),
        (IntervalSketch(n=1000, v=4, features=6), [[(7 * i + j * 101) % 1000 for j in range(6)] for i in range(20)]),
        (CodeOffsetSketch(16, 2), [bytes((i * 7 + j) % 256 for j in range(16)) for i in range(20)]),
    ],
    ids=["pinsketch", "interval", "code-offset"],
)
def test_two_deployments_share_no_common_difference(sketch, secrets):
    """Deterministic (and linear) schemes: same people, two peppers, per-enrolment nonces.

    The control shows the test can fail: a pad from the pepper alone (one nonce for everyone)
    gives every person's two helpers the same difference, which links them all.
    """
    clear = [sketch.encode(s) for s in secrets]
    if sketch.scheme_name != "code-offset":  # deterministic: identical helpers without a pepper
        assert clear == [sketch.encode(s) for s in secrets]
    a = [wrap(sketch, h, PEPPER_A, new_nonce()) for h in clear]
    b = [wrap(sketch, h, PEPPER_B, new_nonce()) for h in clear]
    assert not set(a) & set(b)
    assert len(set(_differences(sketch, a, b))) == len(secrets)
    fixed = bytes(16)
    a0 = [wrap(sketch, h, PEPPER_A, fixed) for h in clear]
    b0 = [wrap(sketch, h, PEPPER_B, fixed) for h in clear]
    if sketch.scheme_name != "code-offset":
        assert len(set(_differences(sketch, a0, b0))) == 1


# -- rotation ------------------------------------------------------------------------------------------
def test_rewrap_from_clear_and_from_an_old_pepper():
    sketch = IntervalSketch(n=1000, v=4, features=6)
    helper = sketch.encode([10, 200, 300, 999, 0, 517])
    stored, nonce = rewrap(None, helper, None, None, PEPPER_A)
    assert unwrap(sketch, stored, PEPPER_A, nonce) == helper
    again, nonce2 = rewrap(sketch, stored, PEPPER_A, nonce, PEPPER_B)
    assert nonce2 != nonce
    assert unwrap(sketch, again, PEPPER_B, nonce2) == helper
    with pytest.raises(ParameterError, match="nonce"):
        rewrap(sketch, stored, PEPPER_A, None, PEPPER_B)


def test_malformed_arguments_are_refused():
    sketch = IntervalSketch(n=1000, v=4, features=6)
    helper = sketch.encode([10, 200, 300, 999, 0, 517])
    with pytest.raises(SketchFormatError, match="nonce"):
        wrap(sketch, helper, PEPPER_A, b"short")
    with pytest.raises(ParameterError, match="Pepper"):
        wrap(sketch, helper, b"A" * 32, bytes(16))  # type: ignore[arg-type]
    with pytest.raises(SketchFormatError):
        unwrap(None, b"not a helper", PEPPER_A, bytes(16))


def test_two_fuzzy_secrets_in_different_groups_are_refused_clearly():
    """A second biometric whose symbols live in another group: the pad cannot span both yet."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mixed = Cascade(
            FuzzySecret(IntervalSketch(n=1000, v=4, features=4), min_entropy=36, importance=2),
            FuzzySecret(CodeOffsetSketch(16, 2), min_entropy=120, importance=1, key_bits=64),
        )
    helper = mixed.encode([[10, 200, 300, 999], bytes(range(16))])
    with pytest.raises(ParameterError, match="different groups"):
        wrap(mixed, helper, PEPPER_A, new_nonce())
