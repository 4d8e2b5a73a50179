"""The angular (IronMask) sketch: code size, exact decoding condition, helper checks, inputs, mixing."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sketchauth.enrolment import derive_key, enrol, hasher, verify
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches import load_sketch
from sketchauth.sketches.angular import (
    PROBE_BITS,
    SCALE_BITS,
    AngularSketch,
    Codeword,
    codebook_bits,
    decoding_margin,
    mean_direction,
    quantise_probe,
)
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.format import pack_helper

TEST = hasher("test")


def _unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.normal(size=n)
    return x / np.linalg.norm(x)


def _helper_of(sketch: AngularSketch, matrix: np.ndarray) -> bytes:
    """A helper record carrying ``matrix`` (already in fixed point) as its payload."""
    return pack_helper(sketch.scheme_id, sketch.params(), np.asarray(matrix, dtype=">i2").tobytes())


# -- the code ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("n", "alpha"), [(512, 8), (512, 16), (192, 8), (192, 10), (16, 3)])
def test_codebook_bits_is_log2_of_the_codeword_count(n: int, alpha: int) -> None:
    assert codebook_bits(n, alpha) == pytest.approx(math.log2(math.comb(n, alpha) * 2**alpha), rel=1e-12)


def test_codebook_of_a_tiny_code_is_exactly_what_decode_can_return() -> None:
    """n = 4, α = 2: 24 codewords; probes aimed at each decode to it, and only these appear."""
    sketch = AngularSketch(dimension=4, alpha=2)
    rng = np.random.default_rng(3)
    t = _unit(rng, 4)
    helper = sketch.encode(t)
    r = sketch.matrix(helper) / 2**SCALE_BITS
    seen = set()
    for support in [(i, j) for i in range(4) for j in range(i + 1, 4)]:
        for signs in [(a, b) for a in (1, -1) for b in (1, -1)]:
            c = np.zeros(4)
            c[list(support)] = signs
            seen.add(sketch.decode(helper, r.T @ c).tobytes())
    assert len(seen) == math.comb(4, 2) * 4 == round(2 ** codebook_bits(4, 2))


# -- encode / decode ----------------------------------------------------------------------------------------
@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(8, 64),
    alpha=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
    fraction=st.floats(0.0, 0.97),
)
def test_probes_within_the_packing_radius_always_decode(n: int, alpha: int, seed: int, fraction: float) -> None:
    """Codewords are √(2/α) apart: a probe within chord 1/√(2α) of the template decodes to its codeword."""
    sketch = AngularSketch(dimension=n, alpha=alpha)
    rng = np.random.default_rng(seed)
    t = _unit(rng, n)
    secret = sketch.check_secret(3.0 * t)  # any scale: the template is a direction
    helper = sketch.encode(secret)
    # A unit probe at chord `fraction` of the guaranteed radius (less the fixed-point slack).
    chord = fraction * (1.0 / math.sqrt(2 * alpha) - 0.01)
    angle = 2.0 * math.asin(chord / 2.0)
    w = _unit(rng, n)
    w -= (w @ t) * t
    w /= np.linalg.norm(w)
    probe = math.cos(angle) * t + math.sin(angle) * w
    assert np.array_equal(sketch.decode(helper, probe), secret)
    assert sketch.secret_bytes(sketch.decode(helper, probe)) == sketch.secret_bytes(secret)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(4, 24), alpha=st.integers(1, 3), seed=st.integers(0, 2**32 - 1), noise=st.floats(0.0, 3.0))
def test_decode_succeeds_exactly_when_the_margin_is_positive(n: int, alpha: int, seed: int, noise: float) -> None:
    """On Haar helpers and probes at every angle: Dec returns c ⇔ min_S sign·y > max_off |y|."""
    sketch = AngularSketch(dimension=n, alpha=min(alpha, n - 1))
    rng = np.random.default_rng(seed)
    t = _unit(rng, n)
    secret = sketch.check_secret(t)
    helper = sketch.encode(secret)
    probe = t + noise * rng.normal(size=n)
    y = sketch.matrix(helper) @ quantise_probe(probe)
    margin = float(decoding_margin(y, secret))
    try:
        decoded = sketch.decode(helper, probe)
    except DecodeError:
        decoded = None
    assert (decoded is not None and np.array_equal(decoded, secret)) == (margin > 0)


def _permutation_helper(rng: np.random.Generator, n: int) -> np.ndarray:
    """A signed permutation in fixed point: exactly orthogonal, so y = 2^14·(σ ⊙ p̂ permuted) exactly."""
    matrix = np.zeros((n, n), dtype=np.int64)
    matrix[np.arange(n), rng.permutation(n)] = rng.choice([-1, 1], size=n) * 2**SCALE_BITS
    return matrix


@st.composite
def boundary_cases(draw: st.DrawFn) -> tuple[int, int, np.ndarray, np.ndarray, np.ndarray, int]:
    """A signed-permutation helper, a codeword and rotated coordinates z (in probe units) whose
    margin min_S sign·z − max_off |z| is exactly −1, 0 or +1 unit (the boundary and one step each side)."""
    n = draw(st.integers(3, 24))
    alpha = draw(st.integers(1, n - 1))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    step = draw(st.sampled_from([-1, 0, 1]))
    matrix = _permutation_helper(rng, n)
    support = rng.choice(n, size=alpha, replace=False)
    signs = rng.choice([-1, 1], size=alpha)
    word = np.zeros(n, dtype=np.int8)
    word[support] = signs
    top = 2**PROBE_BITS - 1  # the largest coordinate keeps 24 bits: the probe is its own quantisation
    edge = draw(st.integers(2**22, 2**23))
    z = rng.integers(-edge, edge + 1, size=n)
    off = np.setdiff1d(np.arange(n), support)
    z[off[0]] = edge * rng.choice([-1, 1])  # the largest off-support magnitude is exactly `edge`
    inside = rng.integers(edge + step, top + 1, size=alpha)
    inside[0] = edge + step  # the smallest support magnitude sits at the chosen margin
    z[support] = signs * inside
    if alpha > 1:
        z[support[-1]] = signs[-1] * top  # another support coordinate at the top of the 24 bits
    return n, alpha, matrix, word, z, step


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=boundary_cases())
def test_margin_rule_at_and_just_beyond_the_boundary(case: tuple) -> None:
    """Margin +1 unit decodes to c; margin 0 (a tie with an off-support coordinate) and −1 do not."""
    n, alpha, matrix, word, z, step = case
    sketch = AngularSketch(dimension=n, alpha=alpha)
    helper = _helper_of(sketch, matrix)
    probe = matrix.T @ z / 2**SCALE_BITS  # R̂ᵀ z / 2^14: R̂ p = 2^14 z exactly
    y = sketch.matrix(helper) @ quantise_probe(probe)
    scale = y[np.flatnonzero(z)[0]] / z[np.flatnonzero(z)[0]]  # quantisation multiplies by a power of 2
    assert np.array_equal(y, scale * z)
    assert np.sign(decoding_margin(y, word)) == step
    try:
        decoded = sketch.decode(helper, probe)
    except DecodeError:
        decoded = None
    accepted = decoded is not None and np.array_equal(decoded, word)
    assert accepted == (step > 0)


@settings(max_examples=100, deadline=None)
@given(n=st.integers(4, 24), seed=st.integers(0, 2**32 - 1), nudge=st.sampled_from([-1, 0, 1]))
def test_angle_check_at_and_just_beyond_min_cos(n: int, seed: int, nudge: int) -> None:
    """τ at the probe's exact decoded cosine (rounded to a double) and a few ulps either side: accepted
    iff τ²·α·‖p̂‖² ≤ (Σ_S |y_i| / 2^14)², in exact rational arithmetic."""
    rng = np.random.default_rng(seed)
    alpha = int(rng.integers(1, n))
    matrix = _permutation_helper(rng, n)
    word = np.zeros(n, dtype=np.int8)
    support = rng.choice(n, size=alpha, replace=False)
    word[support] = rng.choice([-1, 1], size=alpha)
    z = rng.integers(-(2**20), 2**20, size=n)
    z[support] = word[support] * rng.integers(2**21, 2**23, size=alpha)
    total, norm2 = int(np.abs(z[support]).sum()), int((z.astype(object) ** 2).sum())
    cos = total / math.sqrt(alpha * norm2)
    tau = cos
    for _ in range(4 if nudge else 0):  # 4 ulps: the rounded cosine itself is within ~1 ulp
        tau = float(np.nextafter(tau, 2.0 if nudge > 0 else -1.0))
    sketch = AngularSketch(dimension=n, alpha=alpha, min_cos=min(1.0, tau))
    helper = _helper_of(sketch, matrix)
    probe = matrix.T @ z / 2**SCALE_BITS
    exact = Fraction(sketch.min_cos) ** 2 * alpha * norm2 <= total * total
    try:
        decoded = sketch.decode(helper, probe)
    except DecodeError:
        decoded = None
    assert (decoded is not None and np.array_equal(decoded, word)) == exact
    if nudge < 0:
        assert exact
    if nudge > 0:
        assert not exact


@pytest.mark.parametrize(
    ("family", "min_cos", "cos", "accepted"),
    [
        (AngularSketch, 0.0, 0.8, True),  # well inside the sparse code's radius for alpha = 2
        (AngularSketch, 0.9, 0.8, False),
        (PolarAngularSketch, 0.0, 0.97, True),
        (PolarAngularSketch, 0.9, 0.97, True),
        (PolarAngularSketch, 0.99, 0.97, False),
    ],
)
def test_min_cos_accepts_the_same_person_and_refuses_a_wider_probe(
    family: type[AngularSketch], min_cos: float, cos: float, accepted: bool
) -> None:
    """Both families: a probe at angle ``arccos(cos)`` that the code decodes is accepted iff
    ``cos ≥ min_cos`` (64-D; the sparse code with ``α = 2``, the polar one with 8 bits)."""
    rng = np.random.default_rng(5)
    t = _unit(rng, 64)
    w = rng.normal(size=64)
    w -= (w @ t) * t
    probe = cos * t + math.sqrt(1 - cos**2) * w / np.linalg.norm(w)
    sketch = AngularSketch(64, 2, min_cos=min_cos) if family is AngularSketch else family(64, 8, min_cos=min_cos)
    secret = sketch.check_secret(t)
    helper = sketch.encode(secret)
    if accepted:
        assert np.array_equal(sketch.decode(helper, probe), secret)
    else:
        with pytest.raises(DecodeError, match="angle"):
            sketch.decode(helper, probe)


# -- secrets, captures, keys ------------------------------------------------------------------------
def test_the_secret_is_a_fresh_codeword_bound_to_the_template() -> None:
    sketch = AngularSketch(32, 3)
    t = np.linspace(-1.0, 1.0, 32)
    a, b = sketch.check_secret(t), sketch.check_secret(t)
    assert isinstance(a, Codeword) and a.template is not None
    assert np.count_nonzero(a) == 3 and set(np.unique(a)) <= {-1, 0, 1}
    assert sketch.check_secret(a) is a  # idempotent
    assert len(sketch.secret_bytes(a)) == 32
    assert not (np.array_equal(a, b) and np.array_equal(a, sketch.check_secret(t)))  # 2^-39 each
    with pytest.raises(SampleError, match="Codeword"):
        sketch.secret_bytes(t)
    decoded = sketch.decode(sketch.encode(a), t)
    assert decoded.template is None
    with pytest.raises(SampleError, match="cannot be enrolled again"):
        sketch.encode(decoded)


def test_enrol_verify_and_keys_come_from_the_codeword() -> None:
    rng = np.random.default_rng(7)
    sketch = AngularSketch(48, 2)
    t = _unit(rng, 48)
    record = enrol(sketch, t, password_hasher=TEST)
    near = [t + 0.05 * rng.normal(size=48) for _ in range(2)]
    assert all(verify(sketch, record, p, password_hasher=TEST) for p in near)
    assert not verify(sketch, record, _unit(rng, 48), password_hasher=TEST)
    keys = {derive_key(sketch, record, p, context=b"disk", password_hasher=TEST) for p in near}
    assert len(keys) == 1 and None not in keys  # two different genuine probes: one key
    assert derive_key(sketch, record, _unit(rng, 48), context=b"disk", password_hasher=TEST) is None


def test_mean_direction_fuses_captures() -> None:
    sketch = AngularSketch(8, 2)
    loud, quiet = np.array([10.0, 0, 0, 0, 0, 0, 0, 0]), np.array([0, 1.0, 0, 0, 0, 0, 0, 0])
    secret = mean_direction(sketch, [loud, quiet])
    assert secret.template is not None
    assert np.allclose(secret.template, np.array([1, 1, 0, 0, 0, 0, 0, 0]) / math.sqrt(2))
    assert mean_direction(sketch, (x for x in [loud])).template is not None  # one capture, a generator
    with pytest.raises(SampleError, match="cancel out"):
        mean_direction(sketch, [loud, -loud])
    with pytest.raises(SampleError, match="at least one"):
        mean_direction(sketch, [])


# -- inputs through the public doors --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ([1.0, float("nan"), 0, 0], "NaN or infinite value at coordinate 1"),
        ([1.0, 0, float("inf"), 0], "NaN or infinite"),
        ([0.0, 0.0, 0.0, 0.0], "zero vector"),
        ([1.0, 2.0, 3.0], "4 numbers"),
        ({1.0, 2.0, 3.0, 4.0}, "ordered"),
        ("abcd", "str"),
        ([[1.0, 2.0, 3.0, 4.0]], "4 numbers"),
        ([True, False, True, False], "real numbers"),
        ([1 + 1j, 0, 0, 0], "real numbers"),
    ],
)
def test_malformed_embeddings_are_refused_clearly(bad: object, match: str) -> None:
    sketch = AngularSketch(4, 1)
    helper = sketch.encode([1.0, 2.0, 3.0, 4.0])
    with pytest.raises(SampleError, match=match):
        sketch.check_secret(bad)
    with pytest.raises(SampleError, match=match):
        sketch.decode(helper, bad)


def test_natural_inputs_are_taken() -> None:
    sketch = AngularSketch(4, 1)
    t = [1.0, 2.0, 3.0, 4.0]
    secret = sketch.check_secret(t)
    helper = sketch.encode(secret)
    for same in (
        tuple(t),
        (x for x in t),
        np.array(t, dtype=np.float32),
        [np.float64(x) for x in t],
        [1, 2, 3, 4],
        np.array([2, 4, 6, 8], dtype=np.int16),
    ):
        assert np.array_equal(sketch.decode(helper, same), secret)


def test_parameters_are_checked() -> None:
    with pytest.raises(ParameterError, match="alpha"):
        AngularSketch(8, 8)
    with pytest.raises(ParameterError, match="dimension"):
        AngularSketch(4096, 8)
    with pytest.raises(ParameterError, match="min_cos"):
        AngularSketch(8, 2, min_cos=1.5)
    with pytest.raises(ParameterError, match="min_cos"):
        AngularSketch(8, 2, min_cos=float("nan"))
    assert AngularSketch(8, 2).params() == {"dimension": 8, "alpha": 2}
    assert AngularSketch.from_params({"dimension": 8, "alpha": 2, "min_cos": 0.5}).min_cos == 0.5


# -- untrusted helpers ------------------------------------------------------------------------------------
def _matrices(n: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(11)
    u = np.where(rng.random(n) < 0.5, -1, 1) * round(2**SCALE_BITS / math.sqrt(n))
    good = _permutation_helper(rng, n)
    return {
        "rank one, unit rows and columns": np.tile(u, (n, 1)),
        "half scale": good // 2,
        "a repeated row": np.vstack([good[:-1], good[:1]]),
        "all zero": np.zeros((n, n)),
    }


@pytest.mark.parametrize("kind", list(_matrices(16)))
def test_a_helper_that_is_not_orthogonal_is_refused(kind: str) -> None:
    sketch = AngularSketch(16, 2)
    helper = _helper_of(sketch, _matrices(16)[kind])
    with pytest.raises(SketchFormatError, match="orthogonal"):
        sketch.decode(helper, np.ones(16))
    with pytest.raises(SketchFormatError, match="orthogonal"):
        load_sketch(helper) and sketch.payload(helper)


def test_helper_size_and_loading() -> None:
    sketch = AngularSketch(32, 3, min_cos=0.2)
    helper = sketch.encode(np.arange(1.0, 33.0))
    assert load_sketch(helper) == sketch
    # compact: 32·31/2 int16 Householder coordinates and two 32-bit sign vectors
    assert len(sketch.payload(helper)) == 32 * 31 + 2 * 4 == sketch.report().extra["helper_bytes"]
    with pytest.raises(SketchFormatError, match="2048 bytes"):
        sketch.decode(_helper_of(sketch, np.zeros((16, 16))), np.ones(32))


def test_report_names_each_security_figure() -> None:
    report = AngularSketch(512, 8).report()
    assert report.randomness_bits == pytest.approx(64.6, abs=0.05)
    assert report.extra["codebook_bits"] == report.randomness_bits
    assert report.extra["helper_bytes"] == 512 * 511 + 2 * 64 <= 512 * 512 * 2 // 2
    assert report.extra["guaranteed_cos"] == pytest.approx(1 - 1 / (4 * 8))
    text = " ".join(report.notes)
    for name in ("(a) codebook work", "(b) information-theoretic", "(c) population attack", "decodes iff"):
        assert name in text


def test_helpers_hide_the_support_of_the_codeword() -> None:
    """Given c, over random templates the rows of R on supp(c) look like the others (no shift leak)."""
    sketch, n = AngularSketch(16, 2), 16
    rng = np.random.default_rng(13)
    word = np.zeros(n, dtype=np.int8)
    word[[3, 9]] = [1, -1]
    peaks = np.zeros(n)
    for _ in range(300):
        secret = sketch.check_secret(rng.normal(size=n))
        secret[:] = word  # the same codeword for every template
        matrix = sketch._matrix(sketch._encode_payload(secret, sketch.draw_randomness(secret)))
        peaks += np.abs(matrix).max(axis=1) / 2**SCALE_BITS
    peaks /= 300
    on, off = peaks[[3, 9]], np.delete(peaks, [3, 9])
    assert abs(on.mean() - off.mean()) < 4 * off.std() + 0.02


# -- mixing with a PIN ----------------------------------------------------------------------------------------
def test_a_pin_cascade_flips_rows_and_still_verifies() -> None:
    rng = np.random.default_rng(17)
    sketch = AngularSketch(24, 2)
    cascade = Cascade(sketch, pin=ExactKey("test"), warn=False)
    t = _unit(rng, 24)
    record = enrol(cascade, [t, "2468"], password_hasher=TEST)
    probe = t + 0.05 * rng.normal(size=24)
    assert verify(cascade, record, [probe, "2468"], password_hasher=TEST)
    assert not verify(cascade, record, [probe, "1357"], password_hasher=TEST)
    helper = sketch.encode(t)
    bits, _ = sketch.symbols(sketch.payload(helper))
    flipped = sketch.with_symbols(helper, bits ^ np.uint64(1))
    assert np.array_equal(sketch.matrix(flipped), -sketch.matrix(helper))


def test_ironmask_decodes_half_the_isotropic_probes_near_cos_one_half_at_512_dimensions() -> None:
    """C_8 in 512-D (64.6 bits): probes at cos 0.60 from the template mostly decode, at 0.40 (just
    above the 64-bit packing limit, 0.386) mostly do not: the code is well inside the limit."""
    sketch = AngularSketch(512, 8)
    rng = np.random.default_rng(21)
    t = _unit(rng, 512)
    secret = sketch.check_secret(t)
    matrix = sketch.matrix(sketch.encode(secret))
    rates = {}
    for cos in (0.40, 0.60):
        w = rng.normal(size=(400, 512))
        w -= np.outer(w @ t, t)
        w /= np.linalg.norm(w, axis=1, keepdims=True)
        probes = cos * t + math.sqrt(1 - cos * cos) * w
        y = np.stack([matrix @ quantise_probe(p) for p in probes])
        rates[cos] = float(np.mean(decoding_margin(y, secret) > 0))
    assert rates[0.40] < 0.2 and rates[0.60] > 0.8
