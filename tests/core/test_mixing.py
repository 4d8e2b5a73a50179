"""Mixing functions and cascade structures (sketchauth.mixing, Fang's thesis, ch. 7)."""

from __future__ import annotations

import contextlib
import hashlib
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import enrol, hasher, verify
from sketchauth.errors import DecodeError, MixingWarning, ParameterError, SampleError, SketchFormatError
from sketchauth.mixing import (
    Cascade,
    Chaining,
    Concatenate,
    ExactKey,
    Fanning,
    FuzzySecret,
    Hybrid,
    MixedSketch,
    MixRandomness,
    derive_pad,
    mix_symbols,
    toeplitz_extract,
    unmix_helper,
    unmix_symbols,
)
from sketchauth.mixing.structures import MAX_EXACT_KEYS
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SymbolSpace, load_sketch
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.format import pack_helper, parse_helper
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

PIN = ExactKey.pin(6, "test")


# -- every sketch family that exists: (name, sketch, secret, close sample) ---------------------------
def _families() -> list[tuple[str, object, object, object]]:
    out = [
        ("interval", IntervalSketch(n=1000, v=4, features=6), [10, 200, 300, 999, 0, 517], [11, 199, 302, 997, 3, 517]),
        ("code-offset", CodeOffsetSketch(16, 2), bytes(range(16)), bytes([99]) + bytes(range(1, 16))),
        ("chaff", ChaffPointSketch(150, 4, points=2), [50, 120], [51, 118]),
    ]
    for scheme in ("s1", "s2"):
        sk = AsymmetricIntervalSketch(n=256, q=6, scheme=scheme, features=4)
        out.append((f"asymmetric-{scheme}", sk, ([10, 100, 200, 250], [3, 5, 6, 2]), [11, 97, 204, 250]))
    out.append(("pinsketch", PinSketch(16, 8), [3, 70, 1000, 2024, 65535], [3, 70, 1001, 2024, 65535, 9]))
    out.append(
        (
            "fuzzy-vault",
            FuzzyVault(p=101, m=9, t=2),
            [1, 4, 6, 9, 11, 40, 50, 60, 70],
            [1, 4, 6, 9, 12, 40, 50, 60, 71],
        )
    )
    out.append(("weighted-vault", WeightedFuzzyVault(p=50, q=4, g=9, t=3), ([3, 17, 40], [3, 3, 3]), [3, 17]))
    return out


FAMILIES = _families()
IDS = [f[0] for f in FAMILIES]


def test_every_family_is_present():
    assert set(IDS) == {
        "interval",
        "code-offset",
        "chaff",
        "asymmetric-s1",
        "asymmetric-s2",
        "pinsketch",
        "fuzzy-vault",
        "weighted-vault",
    }


def _same(sketch, a, b) -> bool:
    return sketch.secret_bytes(a) == sketch.secret_bytes(b)


def _fixed(cascade, secret, seed: int) -> MixRandomness:
    """The cascade's randomness with the public nonce and salt fixed, so outcomes are stable."""
    fresh = cascade.draw_randomness(cascade.check_secret(secret))
    nonce = hashlib.sha256(b"nonce%d" % seed).digest()[:16]
    salt = hashlib.sha256(b"salt%d" % seed).digest()[:16]
    return MixRandomness(fresh.inner, (nonce, None), (None, salt), (None, None))


@pytest.mark.parametrize("name,sketch,secret,sample", FAMILIES, ids=IDS)
def test_pin_cascade_recovers_every_family(name, sketch, secret, sample):
    cascade = _quiet(lambda: Cascade(sketch, pin=PIN))
    helper = cascade.encode([secret, "123456"])
    got = cascade.decode(helper, [sample, "123456"])
    assert _same(sketch, got[0], secret)
    assert got[1] == "123456"
    assert load_sketch(helper) == cascade
    # The stored Q is itself a complete, valid helper of the family's scheme.
    record = parse_helper(helper)
    stored = record.payload[4 : 4 + int.from_bytes(record.payload[:4], "big")]
    sketch.payload(stored)


@pytest.mark.parametrize("name,sketch,secret,sample", FAMILIES, ids=IDS)
def test_wrong_pin_yields_valid_sketch_then_other_secret_or_decode_error(name, sketch, secret, sample):
    cascade = _quiet(lambda: Cascade(sketch, pin=PIN))
    helper = cascade.encode_with([secret, "123456"], _fixed(cascade, [secret, "123456"], 7))
    stored = parse_helper(helper).payload
    inner = stored[4 : 4 + int.from_bytes(stored[:4], "big")]
    nonce = stored[4 + len(inner) : 4 + len(inner) + 16]
    salt = stored[-16:]
    outcomes = []
    for wrong in ("000000", "123457", "654321", "111111", "999999", "123465"):
        unmixed = unmix_helper(sketch, inner, PIN.derive_key(wrong, salt), nonce)
        sketch.payload(unmixed)  # well-formed: no SketchFormatError
        try:
            got = cascade.decode(helper, [sample, wrong])
        except DecodeError:
            outcomes.append("decode-error")
            continue
        if name in ("asymmetric-s2", "chaff"):
            # s2 pads only the boundaries of movable gap pairs; a feature's own interval keeps
            # both ends (about 22% of wrong keys per feature here), so the recovered (b, v) may
            # be the enrolled one. A chaff sketch covers about one position in seven, so a
            # wrongly unmixed one still holds the genuine points with probability about 1/49.
            # The cascade's secret differs all the same (it holds the PIN): verify rejects.
            assert cascade.secret_bytes(got) != cascade.secret_bytes([secret, "123456"])
        else:
            assert not _same(sketch, got[0], secret)
        outcomes.append("other")
    assert len(outcomes) == 6


@pytest.mark.parametrize("name,sketch,secret,sample", FAMILIES, ids=IDS)
def test_wrong_pin_fails_verification_for_every_family(name, sketch, secret, sample):
    ph = hasher("test")
    cascade = _quiet(lambda: Cascade(sketch, pin=PIN))
    record = enrol(cascade, [secret, "123456"], password_hasher=ph)
    assert verify(cascade, record, [sample, "123456"], password_hasher=ph)
    assert not verify(cascade, record, [sample, "123457"], password_hasher=ph)


@pytest.mark.parametrize("name,sketch,secret,sample", FAMILIES, ids=IDS)
def test_random_wrong_pins_never_raise_format_errors(name, sketch, secret, sample):
    cascade = _quiet(lambda: Cascade(sketch, pin=PIN))
    helper = cascade.encode([secret, "123456"])
    for i in range(10):
        with contextlib.suppress(DecodeError):
            cascade.decode(helper, [sample, f"{i:06d}x"])


def test_service_usage_enrol_verify_pinsketch_cascade():
    ph = hasher("test")
    cascade = Cascade(PinSketch(16, 8), pin=ExactKey("test"))
    enrolled = [3, 70, 1000, 2024, 65535]
    record = enrol(cascade, [enrolled, "123456"], password_hasher=ph)
    sample = [3, 70, 1001, 2024, 65535, 9]
    assert verify(cascade, record, [sample, "123456"], password_hasher=ph)
    assert not verify(cascade, record, [sample, "123457"], password_hasher=ph)
    assert not verify(cascade, record, [list(range(5, 20)), "123456"], password_hasher=ph)
    # Rebuilt from the stored helper alone, the same structure verifies.
    assert verify(load_sketch(record.helper), record, [sample, "123456"], password_hasher=ph)


def test_secret_bytes_is_length_prefixed_concatenation():
    sk = IntervalSketch(n=256, v=3, features=2)
    cascade = Cascade(sk, pin=PIN)
    expected = (2).to_bytes(4, "big") + bytes([7, 9]) + (4).to_bytes(4, "big") + b"1234"
    assert cascade.secret_bytes([[7, 9], "1234"]) == expected


def test_pin_is_nfkc_normalised_and_returned_as_given():
    sk = IntervalSketch(n=256, v=3)
    cascade = Cascade(sk, pin=PIN)
    helper = cascade.encode([[40], "\uff11\uff12\uff13\uff14"])  # full-width digits normalise to "1234"
    assert cascade.decode(helper, [[41], "1234"])[1] == "1234"
    with pytest.raises(SampleError):
        cascade.decode(helper, [[41], ""])
    with pytest.raises(SampleError):
        cascade.decode(helper, [[41], 1234])
    with pytest.raises(SampleError):
        cascade.decode(helper, [[41]])


# -- the pad ------------------------------------------------------------------------------------------
def _reference_pad(key: bytes, nonce: bytes, moduli: list[int], domain: int = 0) -> list[int]:
    """Plain-integer rejection sampling over the same SHAKE-256 stream."""
    prefix = b"sketchauth/mix-pad/v1\x00" + domain.to_bytes(4, "big") + len(nonce).to_bytes(4, "big") + nonce + key
    stream = hashlib.shake_256(prefix).digest(8 * 4 * len(moduli))
    words = [int.from_bytes(stream[8 * i : 8 * i + 8], "big") for i in range(4 * len(moduli))]
    out: list[int | None] = [None] * len(moduli)
    pos = len(moduli)
    pending = list(range(len(moduli)))
    first = True
    while pending:
        nxt = []
        for j, i in enumerate(pending):
            w = words[i] if first else words[pos + j]
            m = moduli[i]
            if w < 2**64 - (2**64 % m):
                out[i] = w % m
            else:
                nxt.append(i)
        if not first:
            pos += len(pending)
        first = False
        pending = nxt
    return out  # type: ignore[return-value]


def test_pad_matches_plain_integer_reference_including_rejections():
    moduli = [3, 7, 2**63 + 1, 2**64 - 1, 2**62 + 12345, 1]
    space = SymbolSpace("mod", moduli=np.array(moduli, dtype=np.uint64))
    for nonce in (b"a" * 16, b"b" * 16, b"c" * 16):
        pad = derive_pad(b"key", nonce, space, len(moduli), domain=3)
        assert pad.tolist() == _reference_pad(b"key", nonce, moduli, domain=3)
        assert all(int(p) < m for p, m in zip(pad, moduli, strict=False))


def test_xor_pad_is_masked_words():
    stream = hashlib.shake_256(b"sketchauth/mix-pad/v1\x00" + bytes(4) + (2).to_bytes(4, "big") + b"nk" + b"K").digest(
        24
    )
    words = [int.from_bytes(stream[i : i + 8], "big") & 0x1FFF for i in range(0, 24, 8)]
    assert derive_pad(b"K", b"nk", SymbolSpace("xor", bits=13), 3).tolist() == words


def test_pad_symbols_are_uniform_mod_small_modulus():
    space = SymbolSpace("mod", moduli=np.full(6000, 5, dtype=np.uint64))
    counts = np.bincount(derive_pad(b"k", b"n" * 16, space, 6000).astype(np.int64), minlength=5)
    chi2 = float(((counts - 1200) ** 2 / 1200).sum())
    assert chi2 < 18.47  # 99.9% quantile of chi-square with 4 degrees of freedom


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 2**64 - 1), st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1)),
        min_size=1,
        max_size=8,
    )
)
def test_mix_then_unmix_is_identity_and_stays_in_range(rows):
    moduli = np.array([m for m, _, _ in rows], dtype=np.uint64)
    s = np.array([a % m for m, a, _ in rows], dtype=np.uint64)
    pad = np.array([b % m for m, _, b in rows], dtype=np.uint64)
    space = SymbolSpace("mod", moduli=moduli)
    mixed = mix_symbols(s, pad, space)
    assert np.all(mixed < moduli)
    assert [int(x) for x in mixed] == [(int(a) + int(b)) % int(m) for a, b, m in zip(s, pad, moduli, strict=False)]
    assert np.array_equal(unmix_symbols(mixed, pad, space), s)


# -- the extractor ------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(st.binary(min_size=1, max_size=6), st.binary(min_size=12, max_size=12), st.integers(8, 40))
def test_toeplitz_matches_naive_matrix_product(data, seed_base, out_bits):
    n = 8 * len(data)
    seed = (seed_base * 4)[: (n + out_bits - 1 + 7) // 8]
    x = [int(b) for b in np.unpackbits(np.frombuffer(data, np.uint8))]
    sbits = [int(b) for b in np.unpackbits(np.frombuffer(seed, np.uint8))]
    y = [sum(sbits[i + n - 1 - j] * x[j] for j in range(n)) % 2 for i in range(out_bits)]
    assert toeplitz_extract(seed, data, out_bits) == np.packbits(np.array(y, dtype=np.uint8)).tobytes()


def test_toeplitz_is_linear_and_needs_a_long_enough_seed():
    seed = bytes(range(40))
    a, b = b"\x12\x34\x56\x78", b"\x0f\xf0\x00\xff"
    xor = bytes(p ^ q for p, q in zip(a, b, strict=False))
    ya, yb, yx = (toeplitz_extract(seed, d, 64) for d in (a, b, xor))
    assert yx == bytes(p ^ q for p, q in zip(ya, yb, strict=False))
    with pytest.raises(ParameterError):
        toeplitz_extract(bytes(4), a, 64)


# -- structures ---------------------------------------------------------------------------------------
def _quiet(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MixingWarning)
        return build()


def test_fuzzy_cascade_extracts_key_from_second_biometric():
    first = FuzzySecret(IntervalSketch(n=1000, v=4, features=4), min_entropy=36, importance=2)
    second = FuzzySecret(CodeOffsetSketch(16, 2), min_entropy=120, importance=1, key_bits=64)
    cascade = _quiet(lambda: Cascade(first, second))
    w = bytes(range(100, 116))
    helper = cascade.encode([[10, 20, 30, 40], w])
    got = cascade.decode(helper, [[11, 21, 29, 40], bytes([1]) + w[1:]])
    assert got[0].tolist() == [10, 20, 30, 40] and got[1] == w
    # A different second biometric (beyond its tolerance) fails there, before any key is formed.
    with pytest.raises(DecodeError):
        cascade.decode(helper, [[11, 21, 29, 40], bytes(16)])
    assert load_sketch(helper) == cascade


def test_fanning_chaining_hybrid_concatenate_round_trip():
    iv = IntervalSketch(n=500, v=3, features=2)
    co = CodeOffsetSketch(12, 2)
    w = bytes(range(12))
    cases = _quiet(
        lambda: [
            (Concatenate(iv, co), [[5, 9], w], [[6, 8], w]),
            (Fanning(PIN, iv, co), ["123456", [5, 9], w], ["123456", [6, 8], w]),
            (
                Chaining(PIN, FuzzySecret(co, importance=1, key_bits=32), FuzzySecret(iv, importance=2)),
                ["123456", w, [5, 9]],
                ["123456", w, [6, 8]],
            ),
            (
                Hybrid([iv, PIN, co, ExactKey("test")], [(1, 0), (3, 2)]),
                [[5, 9], "123456", w, "pw"],
                [[6, 8], "123456", w, "pw"],
            ),
        ]
    )
    for structure, secret, sample in cases:
        helper = structure.encode(secret)
        got = structure.decode(helper, sample)
        assert structure.secret_bytes(got) == structure.secret_bytes(secret)
        rebuilt = load_sketch(helper)
        assert rebuilt == structure and type(rebuilt) is type(structure)
        assert rebuilt.params()["structure"] == structure.structure


def test_chaining_wrong_first_key_breaks_every_later_link():
    iv = IntervalSketch(n=10**6, v=3, features=3)
    co = CodeOffsetSketch(12, 2)
    chain = _quiet(lambda: Chaining(PIN, FuzzySecret(co, importance=1, key_bits=32), FuzzySecret(iv, importance=2)))
    w = bytes(range(12))
    helper = chain.encode(["123456", w, [5, 9, 77]])
    try:
        got = chain.decode(helper, ["123457", w, [5, 9, 77]])
    except DecodeError:
        return
    assert got[1] != w or got[2].tolist() != [5, 9, 77]


def test_params_describe_the_structure_fully():
    iv = IntervalSketch(n=64, v=2)
    cascade = Cascade(iv, pin=ExactKey("owasp", min_entropy=13.0))
    assert cascade.params() == {
        "structure": "cascade",
        "components": [
            {
                "kind": "fuzzy",
                "scheme": "interval",
                "params": iv.params(),
                "min_entropy": None,
                "importance": None,
                "key_bits": 128,
            },
            {"kind": "exact", "profile": "owasp", "min_entropy": 13.0, "space_bits": None},
        ],
        "mixes": [[1, 0]],
    }


@pytest.mark.parametrize(
    "components,mixes,match",
    [
        ([IntervalSketch(n=9, v=2), IntervalSketch(n=9, v=2)], [(0, 1), (1, 0)], "cycle"),
        ([IntervalSketch(n=9, v=2)], [(0, 0)], "own sketch"),
        ([IntervalSketch(n=9, v=2), PIN, ExactKey("test")], [(1, 0), (2, 0)], "at most one key"),
        ([IntervalSketch(n=9, v=2), PIN], [(0, 1)], "no sketch"),
        ([IntervalSketch(n=9, v=2), PIN], [], "mixes nothing"),
        ([IntervalSketch(n=9, v=2), PIN], [(1, 5)], "does not exist"),
        ([IntervalSketch(n=9, v=2), PIN], [(1, 0), (1, 0)], "at most one key"),
        ([IntervalSketch(n=9, v=2), PIN], [(True, 0)], "pairs of ints"),
        ([], [], "at least one"),
        (["not a sketch"], [], "component"),
    ],
)
def test_invalid_trees_are_rejected(components, mixes, match):
    with pytest.raises(ParameterError, match=match):
        _quiet(lambda: Hybrid(components, mixes))


def test_constructor_misuse_is_rejected():
    iv = IntervalSketch(n=9, v=2)
    with pytest.raises(ParameterError):
        MixedSketch([iv])
    with pytest.raises(ParameterError):
        Cascade(iv)
    with pytest.raises(ParameterError):
        Cascade(iv, PIN, pin=PIN)
    with pytest.raises(ParameterError):
        Concatenate(iv, PIN)
    with pytest.raises(ParameterError):
        ExactKey("nope")
    with pytest.raises(ParameterError):
        FuzzySecret(Cascade(iv, pin=PIN))
    with pytest.raises(ParameterError):
        ExactKey("test", min_entropy=float("nan"))


def test_helper_parameters_must_match_the_structure_shape():
    iv = IntervalSketch(n=9, v=2)
    params = Cascade(iv, pin=PIN).params()
    params["mixes"] = []
    helper = pack_helper(16, params, b"")
    with pytest.raises(SketchFormatError):
        load_sketch(helper)


def test_malformed_mixed_payloads_are_format_errors():
    iv = IntervalSketch(n=64, v=3, features=2)
    cascade = Cascade(iv, pin=PIN)
    helper = cascade.encode([[5, 9], "1234"])
    payload = parse_helper(helper).payload
    for bad in (payload[:-1], payload + b"\x00", payload[:10], b"", b"\xff" * len(payload)):
        with pytest.raises(SketchFormatError):
            cascade.decode(pack_helper(16, cascade.params(), bad), [[5, 9], "1234"])
    other = Cascade(IntervalSketch(n=64, v=4, features=2), pin=PIN)
    with pytest.raises(SketchFormatError):
        other.decode(helper, [[5, 9], "1234"])
    with pytest.raises(SketchFormatError):
        cascade.decode(helper[:-1] + bytes([helper[-1] ^ 1]), [[5, 9], "1234"])


def test_encode_with_checks_the_randomness():
    cascade = Cascade(IntervalSketch(n=64, v=3, features=2), pin=PIN)
    good = cascade.draw_randomness(cascade.check_secret([[5, 9], "1234"]))
    assert cascade.encode_with([[5, 9], "1234"], good) == cascade.encode_with([[5, 9], "1234"], good)
    for bad in (
        None,
        MixRandomness(good.inner, (None, None), good.salts, good.seeds),
        MixRandomness(good.inner, good.nonces, (None, b"short"), good.seeds),
        MixRandomness(good.inner, good.nonces, good.salts, (b"seed", None)),
        MixRandomness(good.inner[:1], good.nonces, good.salts, good.seeds),
    ):
        with pytest.raises(ParameterError):
            cascade.encode_with([[5, 9], "1234"], bad)


def test_fresh_nonce_and_salt_each_encoding():
    cascade = Cascade(IntervalSketch(n=64, v=3, features=2), pin=PIN)
    assert cascade.encode([[5, 9], "1234"]) != cascade.encode([[5, 9], "1234"])


def test_mixed_symbols_concatenate_and_round_trip():
    cascade = Cascade(IntervalSketch(n=64, v=3, features=2), pin=PIN)
    helper = cascade.encode([[5, 9], "1234"])
    symbols, space = cascade.symbols(cascade.payload(helper))
    assert space.kind == "mod" and space.moduli.tolist() == [5, 5]
    moved = cascade.with_symbols(helper, (symbols + 1) % 5)
    assert cascade.symbols(cascade.payload(moved))[0].tolist() == ((symbols + 1) % 5).tolist()
    mixed_groups = _quiet(lambda: Concatenate(IntervalSketch(n=9, v=2), CodeOffsetSketch(4, 1)))
    with pytest.raises(ParameterError):
        mixed_groups.symbols(mixed_groups.payload(mixed_groups.encode([[1], bytes(4)])))


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(0, 999), min_size=3, max_size=3), st.lists(st.integers(-6, 6), min_size=3, max_size=3))
def test_cascade_recovers_within_tolerance_and_fails_cleanly_beyond(secret, noise):
    sk = IntervalSketch(n=1000, v=4, features=3)
    cascade = Cascade(sk, pin=PIN)
    helper = cascade.encode([secret, "2468"])
    sample = np.clip(np.array(secret) + np.array(noise), 0, 999)
    close = bool(np.all(np.abs(sample - np.array(secret)) < 4))
    try:
        got = cascade.decode(helper, [sample, "2468"])[0].tolist()
    except DecodeError:
        assert not close
        return
    assert (got == secret) == close


# -- guidelines as warnings ---------------------------------------------------------------------------
def test_pin_over_deterministic_sketch_warns_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixingWarning)
        Cascade(IntervalSketch(n=64, v=3), pin=ExactKey("test"))


def test_warning_unknown_importance_of_two_biometrics():
    with pytest.warns(MixingWarning, match="importance is unknown"):
        Cascade(IntervalSketch(n=64, v=3), IntervalSketch(n=64, v=2))


def test_warning_equal_importance():
    a = FuzzySecret(IntervalSketch(n=64, v=3), importance=1)
    b = FuzzySecret(IntervalSketch(n=64, v=2), importance=1)
    with pytest.warns(MixingWarning, match="equally important"):
        Cascade(a, b)


def test_warning_key_from_more_important_secret():
    a = FuzzySecret(IntervalSketch(n=64, v=3), importance=1)
    b = FuzzySecret(IntervalSketch(n=64, v=2), importance=5)
    with pytest.warns(MixingWarning, match="more important secret 1"):
        Cascade(a, b)


def test_warning_important_sketch_uses_more_randomness():
    a = FuzzySecret(CodeOffsetSketch(8, 1), importance=2)
    b = FuzzySecret(IntervalSketch(n=64, v=3), min_entropy=6.0, importance=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Cascade(a, b)
    messages = [str(w.message) for w in caught if issubclass(w.category, MixingWarning)]
    assert any("more randomness (48.00 bits) than secret 1's (0.00 bits)" in m for m in messages)
    # The 3.68-bit extracted key is also shorter than the randomised 64-bit sketch.
    assert any("key 1 (3.68 bits) is shorter than the sketch (64.00 bits)" in m for m in messages)


def test_warning_randomised_sketch_with_short_key_states_numbers():
    with pytest.warns(
        MixingWarning,
        match=r"key 1 \(19.93 bits\) is shorter than the sketch \(64.00 bits\), "
        r"and mixing is worse than concatenation: need H\(k\) >= L_R \+ beta = 49.00",
    ):
        Cascade(CodeOffsetSketch(8, 1), pin=ExactKey.pin(6, "test"))
    with pytest.warns(MixingWarning, match="min-entropy is not declared"):
        Cascade(CodeOffsetSketch(8, 1), pin=ExactKey("test"))


def test_warning_extracted_key_longer_than_entropy_left():
    a = FuzzySecret(IntervalSketch(n=64, v=3), importance=2)
    b = FuzzySecret(IntervalSketch(n=256, v=3), min_entropy=8.0, importance=1, key_bits=16)
    with pytest.warns(MixingWarning, match=r"extracted key \(16 bits\) is longer than the entropy left"):
        Cascade(a, b)


def test_rebuilding_from_helper_does_not_repeat_warnings():
    with pytest.warns(MixingWarning):
        cascade = Cascade(CodeOffsetSketch(8, 1), pin=ExactKey("test"))
    helper = cascade.encode([bytes(8), "1"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixingWarning)
        assert load_sketch(helper) == cascade


def test_exact_keys_per_structure_are_bounded() -> None:
    # Each exact key costs an argon2id call per decode: a helper may not ask for dozens.
    components = [IntervalSketch(16, 2)] * (MAX_EXACT_KEYS + 1) + [ExactKey("test")] * (MAX_EXACT_KEYS + 1)
    mixes = [(MAX_EXACT_KEYS + 1 + i, i) for i in range(MAX_EXACT_KEYS + 1)]
    with pytest.raises(ParameterError, match="exact keys"):
        Hybrid(components, mixes, warn=False)
