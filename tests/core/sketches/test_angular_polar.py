"""The angular sketch on a polar code: round trips, the exact angle check, codewords, parameters,
enrolment, and mixing with a PIN (a pad flips rows by codewords only)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import derive_key, enrol, hasher, verify
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches import load_sketch
from sketchauth.sketches.angular import SCALE_BITS, Codeword, quantise_probe
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.format import pack_helper
from sketchauth.sketches.polar import correlation

TEST = hasher("test")


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.normal(size=n)
    return x / np.linalg.norm(x)


def _orthogonal_unit(rng: np.random.Generator, t: np.ndarray) -> np.ndarray:
    w = rng.normal(size=t.size)
    w -= (w @ t) * t
    return w / np.linalg.norm(w)


def _helper_of(sketch: PolarAngularSketch, matrix: np.ndarray) -> bytes:
    """A helper record carrying ``matrix`` (already in fixed point) as its payload."""
    return pack_helper(sketch.scheme_id, sketch.params(), np.asarray(matrix, dtype=">i2").tobytes())


def _permutation_helper(rng: np.random.Generator, n: int) -> np.ndarray:
    """A signed permutation in fixed point: exactly orthogonal, so y = 2^14·(σ ⊙ p̂ permuted) exactly."""
    matrix = np.zeros((n, n), dtype=np.int64)
    matrix[np.arange(n), rng.permutation(n)] = rng.choice([-1, 1], size=n) * 2**SCALE_BITS
    return matrix


def _random_word(sketch: PolarAngularSketch, rng: np.random.Generator) -> np.ndarray:
    """A codeword as ±1 ``int8`` (the sketch's form)."""
    coded = sketch.code.encode(rng.integers(0, 2, size=sketch.bits, dtype=np.uint8))
    return (1 - 2 * coded.astype(np.int8)).astype(np.int8)


def _is_codeword(sketch: PolarAngularSketch, word: np.ndarray) -> bool:
    values = np.asarray(word, dtype=np.int64)
    return (
        bool(np.all(np.abs(values) == 1)) and sketch.code.information(((1 - values) // 2).astype(np.uint8)) is not None
    )


def _decoded_cos(sketch: PolarAngularSketch, helper: bytes, probe: np.ndarray, word: np.ndarray) -> float:
    """cos(p, R̂ᵀc/(2^14·√n)) for the ±1 word ``word``: the quantity the angle check bounds."""
    p = quantise_probe(np.asarray(probe, dtype=np.float64))
    y = sketch.matrix(helper) @ p
    coded = ((1 - np.asarray(word, dtype=np.int64)) // 2).astype(np.uint8)
    total = float(correlation(coded[None, :], y[None, :])[0])
    return total / (2**SCALE_BITS * math.sqrt(sketch.dimension) * float(np.linalg.norm(p)))


# -- encode / decode ----------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(8, 64),
    bits_fraction=st.floats(0.0, 1.0),
    list_size=st.sampled_from([1, 2, 8]),
    seed=st.integers(0, 2**32 - 1),
    fraction=st.floats(0.0, 0.97),
)
def test_probes_whose_rotation_keeps_the_codewords_signs_always_decode(
    n: int, bits_fraction: float, list_size: int, seed: int, fraction: float
) -> None:
    """R t = c/√n with |c_i| = 1/√n: a probe t + εw (‖w‖ = 1, ε < 1/√n) has R p = c/√n + εRw with
    |(εRw)_i| ≤ ε, so every rotated coordinate keeps c's sign and every list decodes to c."""
    bits = 1 + int(bits_fraction * (n - 2))
    sketch = PolarAngularSketch(dimension=n, bits=bits, list_size=list_size)
    rng = np.random.default_rng(seed)
    t = _unit(rng, n)
    secret = sketch.check_secret(3.0 * t)  # any scale: the template is a direction
    helper = sketch.encode(secret)
    probe = t + fraction * (1.0 / math.sqrt(n) - 0.01) * _orthogonal_unit(rng, t)
    decoded = sketch.decode(helper, probe)
    assert isinstance(decoded, Codeword) and decoded.dtype == np.int8
    assert np.array_equal(decoded, secret)
    assert sketch.secret_bytes(decoded) == sketch.secret_bytes(secret)


@settings(max_examples=30, deadline=None)
@given(
    n=st.integers(8, 40),
    bits_fraction=st.floats(0.0, 1.0),
    list_size=st.sampled_from([2, 4, 8]),
    min_cos=st.sampled_from([0.0, 0.5]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_antipodal_probe_is_refused_or_decodes_to_another_codeword(
    n: int, bits_fraction: float, list_size: int, min_cos: float, seed: int
) -> None:
    """−t rotates onto −c, the codeword of least correlation: a list of two or more paths holds
    another codeword of larger correlation (n a power of two: −c itself, at cos 1 to −t)."""
    bits = 1 + int(bits_fraction * (n - 2))
    sketch = PolarAngularSketch(dimension=n, bits=bits, list_size=list_size, min_cos=min_cos)
    rng = np.random.default_rng(seed)
    t = _unit(rng, n)
    secret = sketch.check_secret(t)
    helper = sketch.encode(secret)
    try:
        decoded = sketch.decode(helper, -t)
    except DecodeError:
        assert min_cos > 0
        return
    assert _is_codeword(sketch, decoded) and not np.array_equal(decoded, secret)
    if n & (n - 1) == 0:
        assert np.array_equal(decoded, -secret)


def test_unrelated_probes_do_not_decode_to_the_enrolled_codeword() -> None:
    sketch = PolarAngularSketch(dimension=64, bits=24, list_size=8)
    rng = np.random.default_rng(3)
    t = _unit(rng, 64)
    secret = sketch.check_secret(t)
    helper = sketch.encode(secret)
    for _ in range(20):
        decoded = sketch.decode(helper, _unit(rng, 64))
        assert _is_codeword(sketch, decoded) and not np.array_equal(decoded, secret)


def test_more_paths_decode_wider_angles() -> None:
    """Far beyond the sign radius (64 dimensions, 16 bits, cos 0.55) a list of 8 decodes many more
    of 300 probes than plain SC (about 230 against 160). Not a theorem probe by probe, nor at every
    angle: near capacity (cos 0.45 here) a longer list finds a closer codeword that is not the
    enrolled one about as often as it rescues a probe."""
    rng = np.random.default_rng(9)
    n, cos = 64, 0.55
    t = _unit(rng, n)
    sc, scl = PolarAngularSketch(n, 16, list_size=1), PolarAngularSketch(n, 16, list_size=8)
    secret = sc.check_secret(t)
    payload = sc.payload(sc.encode(secret))  # the list size is the decoder's: the same matrix for both
    helpers = [_helper_of(s, sc._matrix(payload)) for s in (sc, scl)]
    probes = [cos * t + math.sqrt(1 - cos * cos) * _orthogonal_unit(rng, t) for _ in range(300)]
    rates = [
        sum(np.array_equal(s.decode(h, p), secret) for p in probes) for s, h in zip((sc, scl), helpers, strict=True)
    ]
    assert rates[0] > 0
    assert rates[0] + 30 < rates[1] < 300


# -- the angle check at its boundary --------------------------------------------------------------------------
@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(8, 32),
    seed=st.integers(0, 2**32 - 1),
    nudge=st.sampled_from([-1, 0, 1]),
    list_size=st.sampled_from([1, 4]),
)
def test_angle_check_at_and_just_beyond_min_cos(n: int, seed: int, nudge: int, list_size: int) -> None:
    """A signed-permutation helper and a probe whose rotation has the codeword's signs (so it decodes
    to that codeword whatever the list): τ at the exact cosine (rounded to a double) and 4 ulps either
    side is accepted iff τ²·n·‖p̂‖² ≤ (Σ_i |y_i| / 2^14)², in exact rational arithmetic."""
    rng = np.random.default_rng(seed)
    bits = int(rng.integers(1, n))
    matrix = _permutation_helper(rng, n)
    word = _random_word(PolarAngularSketch(n, bits), rng)
    magnitudes = rng.integers(2**21, 2**23, size=n)
    magnitudes[:2] = [2**21, 2**23 + 12345]  # not all equal: the cosine is below 1; the top has 24 bits
    z = word.astype(np.int64) * magnitudes
    total, norm2 = int(magnitudes.sum()), int((z.astype(object) ** 2).sum())
    tau = total / math.sqrt(n * norm2)
    for _ in range(4 if nudge else 0):  # 4 ulps: the rounded cosine itself is within ~1 ulp
        tau = float(np.nextafter(tau, 2.0 if nudge > 0 else -1.0))
    sketch = PolarAngularSketch(n, bits, list_size=list_size, min_cos=min(1.0, tau))
    helper = _helper_of(sketch, matrix)
    probe = matrix.T @ z / 2**SCALE_BITS  # R̂ p̂ = 2^14 z exactly
    assert np.array_equal(quantise_probe(probe), probe)
    exact = Fraction(sketch.min_cos) ** 2 * n * norm2 <= total * total
    if nudge:  # at nudge 0 the rounded cosine may fall either side
        assert exact == (nudge < 0)
    if exact:
        assert np.array_equal(sketch.decode(helper, probe), word)
    else:
        with pytest.raises(DecodeError, match="angle"):
            sketch.decode(helper, probe)
    loose = PolarAngularSketch(n, bits, list_size=list_size)  # no check: the same codeword either way
    assert np.array_equal(loose.decode(_helper_of(loose, matrix), probe), word)


# (min_cos accepting the same person and refusing a wider probe: tests/core/sketches/test_angular.py, both families)


# -- secrets and codewords --------------------------------------------------------------------------------------
def test_the_secret_is_a_fresh_polar_codeword_bound_to_the_template() -> None:
    sketch = PolarAngularSketch(32, 12)
    t = np.linspace(-1.0, 1.0, 32)
    a, b = sketch.check_secret(t), sketch.check_secret(t)
    assert isinstance(a, Codeword) and a.template is not None and a.dtype == np.int8
    assert np.allclose(a.template, t / np.linalg.norm(t))
    assert _is_codeword(sketch, a) and _is_codeword(sketch, b)
    assert sketch.check_secret(a) is a  # idempotent
    assert sketch.secret_bytes(a) == a.tobytes() and len(sketch.secret_bytes(a)) == 32
    assert not (np.array_equal(a, b) and np.array_equal(a, sketch.check_secret(t)))  # 2^-24 each
    with pytest.raises(SampleError, match="Codeword"):
        sketch.secret_bytes(t)
    decoded = sketch.decode(sketch.encode(a), t)
    assert decoded.template is None and np.array_equal(decoded, a)
    with pytest.raises(SampleError, match="cannot be enrolled again"):
        sketch.encode(decoded)


def test_codewords_are_drawn_from_the_whole_code() -> None:
    """Two information bits: all four codewords appear among 64 draws (each misses with (3/4)^64)."""
    sketch = PolarAngularSketch(8, 2)
    seen = {sketch.check_secret(np.arange(1.0, 9.0)).tobytes() for _ in range(64)}
    assert len(seen) == 4


@pytest.mark.parametrize(
    ("word", "match"),
    [
        ("flip one sign", "not a codeword"),
        ("a zero", r"\+1 or -1"),
        ("a two", r"\+1 or -1"),
        ("too short", "16 integers"),
        ("floats", "16 integers"),
    ],
)
def test_a_vector_that_is_not_a_codeword_is_refused(word: str, match: str) -> None:
    sketch = PolarAngularSketch(16, 6)
    rng = np.random.default_rng(1)
    good = _random_word(sketch, rng)
    bad: np.ndarray = {
        "flip one sign": good * np.where(np.arange(16) == 5, -1, 1).astype(np.int8),
        "a zero": np.where(np.arange(16) == 3, 0, good).astype(np.int8),
        "a two": np.where(np.arange(16) == 3, 2, good).astype(np.int8),
        "too short": good[:15],
        "floats": good.astype(np.float64),
    }[word]
    assert sketch._check_codeword(good).tobytes() == good.tobytes()
    with pytest.raises(SampleError, match=match):
        sketch._check_codeword(bad)
    forged = np.array(bad).view(Codeword)  # through the public door: secret_bytes and encode
    with pytest.raises(SampleError, match=match):
        sketch.secret_bytes(forged)
    forged.template = np.ones(16) / 4.0
    with pytest.raises(SampleError, match=match):
        sketch.encode(forged)


# -- parameters, helpers, report -----------------------------------------------------------------------------
def test_parameters_round_trip_through_params_and_helpers() -> None:
    sketch = PolarAngularSketch(32, 8, list_size=4, min_cos=0.3)
    assert sketch.params() == {"dimension": 32, "bits": 8, "list_size": 4, "min_cos": 0.3}
    assert PolarAngularSketch.from_params(sketch.params()) == sketch
    assert PolarAngularSketch(32, 8).params() == {"dimension": 32, "bits": 8, "list_size": 8}
    assert PolarAngularSketch.from_params({"dimension": 32, "bits": 8}) == PolarAngularSketch(32, 8, 8, 0.0)
    helper = sketch.encode(np.arange(1.0, 33.0))
    loaded = load_sketch(helper)
    assert loaded == sketch and type(loaded) is PolarAngularSketch and loaded.list_size == 4
    assert loaded.code.info.tolist() == sketch.code.info.tolist()
    assert len(sketch.payload(helper)) == 32 * 31 + 2 * 4 == sketch.report().extra["helper_bytes"]
    with pytest.raises(SketchFormatError, match="2048 bytes"):
        sketch.decode(_helper_of(sketch, np.zeros((16, 16))), np.ones(32))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"dimension": 16, "bits": 16}, "bits"),
        ({"dimension": 16, "bits": 0}, "bits"),
        ({"dimension": 7, "bits": 2}, "dimension"),
        ({"dimension": 4096, "bits": 2}, "dimension"),
        ({"dimension": 16, "bits": 2, "list_size": 0}, "list_size"),
        ({"dimension": 16, "bits": 2, "list_size": 129}, "list_size"),
        ({"dimension": 16, "bits": 2, "crc": 5}, "crc"),
        ({"dimension": 16, "bits": 2, "crc": 17}, "crc"),
        ({"dimension": 16, "bits": 8, "crc": 8}, "crc"),
        ({"dimension": 16, "bits": 2, "list_size": True}, "list_size"),
        ({"dimension": 16, "bits": 2, "min_cos": 1.5}, "min_cos"),
        ({"dimension": 16, "bits": 2, "min_cos": float("nan")}, "min_cos"),
    ],
)
def test_bad_parameters_are_refused_by_name(kwargs: dict, name: str) -> None:
    with pytest.raises(ParameterError, match=name):
        PolarAngularSketch(**kwargs)
    with pytest.raises(ParameterError, match=name):
        PolarAngularSketch.from_params(kwargs)


def test_a_helper_that_is_not_orthogonal_is_refused() -> None:
    sketch = PolarAngularSketch(16, 4)
    good = _permutation_helper(np.random.default_rng(2), 16)
    for bad in (good // 2, np.vstack([good[:-1], good[:1]])):
        with pytest.raises(SketchFormatError, match="orthogonal"):
            sketch.decode(_helper_of(sketch, bad), np.ones(16))


def test_report_names_each_security_figure() -> None:
    report = PolarAngularSketch(512, 64, list_size=8).report()
    assert report.randomness_bits == 64.0 == report.extra["codebook_bits"]
    assert report.extra["helper_bytes"] == 512 * 511 + 2 * 64 and report.extra["list_size"] == 8
    assert report.extra["capacity_cos"] == pytest.approx(math.sqrt(1 - 2 ** (-2 * 64 / 512)))
    text = " ".join(report.notes)
    for name in ("(a) codebook work", "(b) information-theoretic", "(c) population attack", "decodes iff"):
        assert name in text
    assert PolarAngularSketch(64, 16).pad_group_bits() == 16.0


# -- enrolment ----------------------------------------------------------------------------------------------------
def test_enrol_verify_and_keys_come_from_the_codeword() -> None:
    rng = np.random.default_rng(7)
    n = 48
    sketch = PolarAngularSketch(n, 12, list_size=4)
    t = _unit(rng, n)
    record = enrol(sketch, t, password_hasher=TEST)
    near = [t + 0.5 / math.sqrt(n) * _orthogonal_unit(rng, t) for _ in range(2)]  # within the sign radius
    assert all(verify(sketch, record, p, password_hasher=TEST) for p in near)
    assert verify(load_sketch(record.helper), record, near[0], password_hasher=TEST)
    assert not verify(sketch, record, -t, password_hasher=TEST)
    assert not verify(sketch, record, _unit(rng, n), password_hasher=TEST)
    keys = {derive_key(sketch, record, p, context=b"disk", password_hasher=TEST) for p in near}
    assert len(keys) == 1 and None not in keys  # two different genuine probes: one key
    assert derive_key(sketch, record, -t, context=b"disk", password_hasher=TEST) is None


# -- the outer CRC: a new code beside the old one ----------------------------------------------------------------
def test_a_record_without_crc_is_the_plain_code_and_still_opens() -> None:
    """Helpers made before the CRC carry no ``crc``: they load as the plain code and decode as before;
    a CRC'd helper names its CRC, so neither is read as the other."""
    rng = np.random.default_rng(23)
    n, bits = 64, 16
    t = _unit(rng, n)
    probe = t + 0.6 / math.sqrt(n) * _orthogonal_unit(rng, t)
    old = PolarAngularSketch(n, bits, list_size=8)
    secret = old.check_secret(t)  # a fresh codeword bound to t
    helper = old.encode(secret)
    assert "crc" not in old.params() and PolarAngularSketch.from_params({"dimension": n, "bits": bits}).crc == 0
    loaded = load_sketch(helper)
    assert isinstance(loaded, PolarAngularSketch) and loaded.crc == 0
    assert loaded.code.info.tolist() == PolarAngularSketch(n, bits).code.info.tolist()
    assert np.array_equal(loaded.decode(helper, probe), secret)
    new = PolarAngularSketch(n, bits, list_size=32, crc=6)
    crc_secret = new.check_secret(t)
    crc_helper = new.encode(crc_secret)
    assert new.params()["crc"] == 6 and load_sketch(crc_helper) == new
    assert np.array_equal(load_sketch(crc_helper).decode(crc_helper, probe), crc_secret)
    assert new.report().extra["crc"] == 6 and new.report().extra["codebook_bits"] == bits


def test_crc_codewords_are_a_subcode_and_every_decode_is_one_or_refused() -> None:
    """The CRC'd code's 2^bits codewords lie in the plain code of bits + crc; a probe far from the
    template is refused or decodes to a codeword of the CRC'd code, never to another word."""
    rng = np.random.default_rng(29)
    n, bits, crc = 64, 16, 6
    sketch = PolarAngularSketch(n, bits, list_size=16, crc=crc)
    wider = PolarAngularSketch(n, bits + crc).code
    words = [sketch.random_codeword(rng) for _ in range(20)]
    assert all(_is_codeword(sketch, w) for w in words)
    assert all(wider.information(((1 - w.astype(np.int64)) // 2).astype(np.uint8)) is not None for w in words)
    plain = [_random_word(PolarAngularSketch(n, bits + crc), rng) for _ in range(64)]
    assert sum(_is_codeword(sketch, w) for w in plain) < 8  # about 1 in 2^6 of the wider code's words
    helper = sketch.encode(sketch.check_secret(_unit(rng, n)))
    refused = 0
    for _ in range(30):
        try:
            assert _is_codeword(sketch, sketch.decode(helper, _unit(rng, n)))
        except DecodeError:
            refused += 1
    assert refused > 0


def test_a_crc_sketch_enrols_and_verifies() -> None:
    rng = np.random.default_rng(31)
    n = 64
    sketch = PolarAngularSketch(n, 16, list_size=64, crc=6, min_cos=0.3)
    t = _unit(rng, n)
    record = enrol(sketch, t, password_hasher=TEST)
    probe = t + 0.5 / math.sqrt(n) * _orthogonal_unit(rng, t)
    assert verify(sketch, record, probe, password_hasher=TEST)
    assert verify(load_sketch(record.helper), record, probe, password_hasher=TEST)
    assert not verify(sketch, record, -t, password_hasher=TEST)


# -- mixing with a PIN --------------------------------------------------------------------------------------------
def test_a_pin_cascade_verifies_with_the_right_pin_only() -> None:
    rng = np.random.default_rng(17)
    n = 32
    cascade = Cascade(PolarAngularSketch(n, 8), pin=ExactKey("test"), warn=False)
    t = _unit(rng, n)
    record = enrol(cascade, [t, "2468"], password_hasher=TEST)
    probe = t + 0.5 / math.sqrt(n) * _orthogonal_unit(rng, t)
    assert verify(cascade, record, [probe, "2468"], password_hasher=TEST)
    assert verify(load_sketch(record.helper), record, [probe, "2468"], password_hasher=TEST)
    for wrong in ("1357", "2469", "24680"):
        assert not verify(cascade, record, [probe, wrong], password_hasher=TEST)
    assert not verify(cascade, record, [-t, "2468"], password_hasher=TEST)


@pytest.mark.parametrize("crc", [0, 6])
def test_a_pad_flips_rows_by_a_codeword_so_every_key_gives_a_codeword_at_the_same_angle(crc: int) -> None:
    """symbols are the information bits of the row signs; any replacement flips the rows where a
    codeword d is 1, so the unmixed helper maps the template onto c ⊙ (1 − 2d), another codeword:
    a genuine probe decodes under a wrong key at the same cosine as under the right one."""
    rng = np.random.default_rng(19)
    n, bits = 48, 12
    sketch = PolarAngularSketch(n, bits, crc=crc)
    t = _unit(rng, n)
    secret = sketch.check_secret(t)
    helper = sketch.encode(secret)
    symbols, space = sketch.symbols(sketch.payload(helper))
    assert symbols.shape == (bits,) and space.kind == "xor" and space.bits == 1
    assert sketch.with_symbols(helper, symbols) == helper
    probe = t + 0.5 / math.sqrt(n) * _orthogonal_unit(rng, t)
    right = _decoded_cos(sketch, helper, probe, secret)
    original = sketch.matrix(helper)
    for _ in range(8):
        other = rng.integers(0, 2, size=bits).astype(np.uint64)
        padded = sketch.with_symbols(helper, other)
        assert np.array_equal(sketch.symbols(sketch.payload(padded))[0], other)
        matrix = sketch.matrix(padded)  # the strict checks pass: still orthogonal
        flips = np.where(np.all(matrix == original, axis=1), 0, 1)
        assert np.array_equal(matrix, original * (1 - 2 * flips)[:, None])
        assert sketch.code.information(flips.astype(np.uint8)) is not None  # d is a codeword
        expected = (secret * (1 - 2 * flips)).astype(np.int8)
        decoded = sketch.decode(padded, probe)
        assert np.array_equal(decoded, expected) and _is_codeword(sketch, decoded)
        assert _decoded_cos(sketch, padded, probe, decoded) == right  # the same integers, permuted signs
    with pytest.raises(ParameterError, match="expected 12 symbols"):
        sketch.with_symbols(helper, np.zeros(n, dtype=np.uint64))  # not one bit per row
