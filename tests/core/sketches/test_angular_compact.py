"""The compact stored rotation of the angular sketches: Householder factors drawn in O(n²).

Conditioned Haar draw (R t = c exactly before quantisation, uniform given that), the stored form
read strictly, decoding identical to the dense ``int16`` representation of the same rotation,
old (dense) helpers still read, and 512-D enrolment time.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError, SketchFormatError
from sketchauth.sketches import _rotation
from sketchauth.sketches.angular import SCALE_BITS, AngularSketch, Codeword
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.format import pack_helper


def _dense_helper(sketch: AngularSketch, matrix: np.ndarray) -> bytes:
    """Today's (dense ``int16``) helper record of the fixed-point matrix ``matrix``."""
    return pack_helper(sketch.scheme_id, sketch.params(), np.asarray(matrix, dtype=">i2").tobytes())


def _outcome(sketch: AngularSketch, helper: bytes, probe: np.ndarray) -> bytes | None:
    try:
        return bytes(sketch.secret_bytes(sketch.decode(helper, probe)))
    except DecodeError:
        return None


def _template(rng: np.random.Generator, n: int, zeros: int) -> np.ndarray:
    t = rng.normal(size=n)
    t[n - zeros :] = 0.0  # trailing zeros: the constraint leaves the last columns free
    if not np.any(t):
        t[0] = 1.0
    return t / np.linalg.norm(t)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(2, 48), seed=st.integers(0, 2**32 - 1), zeros=st.integers(0, 3))
def test_the_exact_draw_maps_the_template_onto_the_target_and_is_orthogonal(n: int, seed: int, zeros: int) -> None:
    rng = np.random.default_rng(seed)
    t, b = _template(rng, n, min(zeros, n - 1)), _template(rng, n, 0)
    ws, s = _rotation.conditioned_householder(t, b, rng.normal(size=_rotation.gaussian_count(n)))
    assert [w.shape[0] for w in ws] == list(range(n - 1, 0, -1)) and np.all(np.abs(s) == 1)
    assert all(np.all(np.abs(w) <= 1.0 + 1e-12) for w in ws)  # the int16 range is enough
    flat = np.concatenate(ws) if ws else np.zeros(0)
    r0 = _rotation.expand(flat, s, np.ones(n), block=3)
    assert np.allclose(r0 @ r0.T, np.eye(n), atol=1e-12)
    assert np.allclose(r0 @ t, b, atol=1e-10)
    assert np.allclose(_rotation.expand(flat, s, np.ones(n), block=64), r0, atol=1e-13)  # any block size


def test_the_draw_is_uniform_given_the_constraint() -> None:
    """For fixed ``t`` and ``b``, ``R0 z`` (``z ⊥ t`` a unit vector) must be uniform on the unit sphere
    of ``b^⊥``: mean 0 and covariance ``(I − bbᵀ)/(n − 1)`` over 6,000 draws (n = 4)."""
    rng = np.random.default_rng(5)
    n, draws = 4, 6000
    t, b = _template(rng, n, 0), _template(rng, n, 0)
    z = rng.normal(size=n)
    z -= (z @ t) * t
    z /= np.linalg.norm(z)
    images = np.empty((draws, n))
    for k in range(draws):
        ws, s = _rotation.conditioned_householder(t, b, rng.normal(size=_rotation.gaussian_count(n)))
        images[k] = _rotation.expand(np.concatenate(ws), s, np.ones(n)) @ z
    assert np.allclose(images @ b, 0.0, atol=1e-8)
    assert np.all(np.abs(images.mean(axis=0)) < 4.5 / math.sqrt(draws))
    cov = images.T @ images / draws
    assert np.allclose(cov, (np.eye(n) - np.outer(b, b)) / (n - 1), atol=0.02)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(2, 40),
    seed=st.integers(0, 2**32 - 1),
    spread=st.sampled_from([0.05, 0.3, 0.8, 1.5]),
    zeros=st.integers(0, 2),
)
def test_decoding_is_that_of_the_dense_form_of_the_same_rotation(n: int, seed: int, spread: float, zeros: int) -> None:
    """The compact helper and today's dense ``int16`` helper of its rotation give the same decoded
    codeword (or the same refusal) on every probe, near and far; the template itself decodes."""
    rng = np.random.default_rng(seed)
    alpha = int(rng.integers(1, n))
    sketch = AngularSketch(n, alpha, min_cos=float(rng.choice([0.0, 0.3])))
    t = _template(rng, n, min(zeros, n - 1))
    secret = sketch.check_secret(t)
    compact = sketch.encode(secret)
    matrix = sketch.matrix(compact)
    dense = _dense_helper(sketch, matrix)
    assert np.array_equal(sketch.matrix(dense), matrix)
    c = np.asarray(secret, dtype=np.float64) / math.sqrt(alpha)
    assert np.linalg.norm(matrix @ t / 2**SCALE_BITS - c) < 2e-3  # R' t = c up to the stored precision
    for probe in [t] + [t + spread * rng.normal(size=n) / math.sqrt(n) for _ in range(8)]:
        if not np.any(probe):
            continue
        assert _outcome(sketch, compact, probe) == _outcome(sketch, dense, probe)


def test_polar_decoding_is_that_of_the_dense_form_too() -> None:
    rng = np.random.default_rng(8)
    sketch = PolarAngularSketch(64, 16, list_size=4)
    t = _template(rng, 64, 0)
    secret = sketch.check_secret(t)
    compact = sketch.encode(secret)
    dense = _dense_helper(sketch, sketch.matrix(compact))
    assert np.array_equal(sketch.decode(compact, t), secret)
    outcomes = [
        (_outcome(sketch, compact, p), _outcome(sketch, dense, p))
        for p in (t + spread * rng.normal(size=64) for spread in (0.1, 0.2, 0.3) for _ in range(20))
    ]
    assert all(a == b for a, b in outcomes)
    right = sketch.secret_bytes(secret)
    assert any(a == right for a, _ in outcomes) and any(a != right for a, _ in outcomes)


def test_the_compact_helper_is_at_most_half_of_the_dense_one() -> None:
    for n in (2, 7, 8, 192, 512, 2048):
        assert _rotation.compact_bytes(n) <= n * n  # half of 2n²
    sketch = AngularSketch(512, 8)
    helper = sketch.encode(np.random.default_rng(1).normal(size=512))
    assert len(sketch.payload(helper)) == 261_760 == sketch.report().extra["helper_bytes"]


def test_the_compact_form_is_read_strictly() -> None:
    sketch = AngularSketch(10, 2)
    payload = sketch.payload(sketch.encode(np.arange(1.0, 11.0)))
    assert len(payload) == 10 * 9 + 4
    for bad in (payload[:-1], payload + b"\0"):
        with pytest.raises(SketchFormatError, match="bytes"):
            sketch.decode(pack_helper(sketch.scheme_id, sketch.params(), bad), np.ones(10))
    for at in (len(payload) - 3, len(payload) - 1):  # a padding bit of either sign vector
        flipped = bytearray(payload)
        flipped[at] |= 1
        with pytest.raises(SketchFormatError, match="padding"):
            sketch.decode(pack_helper(sketch.scheme_id, sketch.params(), bytes(flipped)), np.ones(10))


@settings(max_examples=30, deadline=None)
@given(data=st.binary(min_size=90, max_size=90), signs=st.binary(min_size=2, max_size=2))
def test_any_well_formed_compact_payload_is_an_orthogonal_matrix(data: bytes, signs: bytes) -> None:
    """Every ``int16`` value is a valid coordinate: an attacker's helper is still a rotation (no
    rank-deficient "accept anyone" matrix can be written in this form)."""
    sketch = AngularSketch(10, 2)
    payload = data + bytes([signs[0] & 0xC0, 0, signs[1] & 0xC0, 0])
    helper = pack_helper(sketch.scheme_id, sketch.params(), payload)
    r = sketch.matrix(helper) / 2**SCALE_BITS
    assert np.allclose(r @ r.T, np.eye(10), atol=2e-3)


def test_row_sign_symbols_of_the_compact_form_flip_rows() -> None:
    sketch = AngularSketch(24, 3)
    helper = sketch.encode(np.random.default_rng(2).normal(size=24))
    bits, _ = sketch.symbols(sketch.payload(helper))
    flip = np.zeros(24, dtype=np.uint64)
    flip[[0, 5, 23]] = 1
    flipped = sketch.with_symbols(helper, bits ^ flip)
    expected = sketch.matrix(helper) * np.where(flip == 1, -1.0, 1.0)[:, None]
    assert np.array_equal(sketch.matrix(flipped), expected)


def test_512_dimensional_enrolment_is_fast_whatever_the_blas_threads() -> None:
    """The old encoder (QR of a 512 × 512 Gaussian matrix) took 1.1–1.3 s wall on a loaded 2-core
    machine with OpenBLAS's default threads; the conditioned Householder draw uses no matrix
    product. Generous bound (best of 3, wall): 0.5 s (benchmarks/bench_angular_enrol.py measures it)."""
    sketch = AngularSketch(512, 8)
    template = np.random.default_rng(3).normal(size=512)
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        secret = sketch.check_secret(template)
        sketch.encode(secret)
        best = min(best, time.perf_counter() - start)
    assert best < 0.5
    assert isinstance(secret, Codeword)


# -- the fast decoder: the reflections applied to the probe, exact rows only where they matter -----------
@settings(max_examples=40, deadline=None)
@given(n=st.integers(2, 70), block=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_the_reflections_apply_and_give_the_rows_of_the_expanded_rotation(n: int, block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    flat = rng.uniform(-1.0, 1.0, n * (n - 1) // 2)
    s, r = rng.choice([-1.0, 1.0], n), rng.choice([-1.0, 1.0], n)
    expanded = _rotation.expand(flat, s, r)
    reflections = _rotation.Reflections(flat, s, r, block=block)
    x = rng.normal(size=(n, 3))
    assert np.allclose(np.stack([reflections.apply(x[:, j]) for j in range(3)], axis=1), expanded @ x, atol=1e-11)
    index = rng.permutation(n)[: max(1, n // 3)]
    assert np.allclose(reflections.rows(index), expanded[index], atol=1e-12)


class _Spy:
    """Counts how :meth:`AngularSketch.decode` went: fast (and how many exact rows), or expanded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.fast = self.expanded = 0
        self.rows: list[int] = []
        fixed_rows, matrix = _rotation.Reflections.fixed_rows, AngularSketch._matrix

        def spy_rows(reflections: _rotation.Reflections, index: np.ndarray, scale: float) -> np.ndarray | None:
            self.rows.append(int(index.shape[0]))
            out = fixed_rows(reflections, index, scale)
            self.fast += out is not None
            return out

        def spy_matrix(sketch: AngularSketch, payload: bytes) -> np.ndarray:
            self.expanded += 1
            return matrix(sketch, payload)

        monkeypatch.setattr(_rotation.Reflections, "fixed_rows", spy_rows)
        monkeypatch.setattr(AngularSketch, "_matrix", spy_matrix)


def _near_ties(sketch: AngularSketch, helper: bytes, rng: np.random.Generator, count: int) -> list[np.ndarray]:
    """Probes whose rotated image has its ``α``-th and ``(α+1)``-th largest coordinates about
    ``10^−4`` apart (below the fixed-point error of ``R̂``): the decision hangs on exact rows."""
    n, a = sketch.dimension, sketch.alpha
    rotation = sketch.matrix(helper) / 2**SCALE_BITS
    out = []
    for _ in range(count):
        y = 0.05 * rng.normal(size=n)
        rows = rng.permutation(n)[: a + 1]
        y[rows] = rng.choice([-1.0, 1.0], a + 1) * np.concatenate([1.0 + rng.uniform(0, 1, a - 1), [0.6, 0.6]])
        y[rows[-1]] *= 1.0 + 1e-4 * rng.normal()
        out.append(rotation.T @ y)
    return out


@pytest.mark.parametrize("n", [128, 192, 256, 512])
def test_fast_decoding_decides_as_the_expanded_matrix_on_every_probe(n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded sweep: genuine probes at several noise levels, impostors, and probes at a near-tie of
    the ``α``-th coordinate; the compact helper (fast path) and the dense helper of its ``R̂`` (the
    expansion, the decoder before the fast path) give the same codeword or both refuse, every time."""
    rng = np.random.default_rng(n)
    spy = _Spy(monkeypatch)
    checked = differ = 0
    for alpha, min_cos in ((8, 0.0), (4, 0.3), (16, 0.0)):
        sketch = AngularSketch(n, alpha, min_cos=min_cos)
        for _ in range(3):
            t = _template(rng, n, 0)
            compact = sketch.encode(sketch.check_secret(t))
            dense = _dense_helper(sketch, sketch.matrix(compact))
            probes = [
                t + spread * rng.normal(size=n) / math.sqrt(n) for spread in (0.3, 0.8, 1.2, 2.0) for _ in range(3)
            ]
            probes += [rng.normal(size=n) for _ in range(3)] + _near_ties(sketch, compact, rng, 6)
            for probe in probes:
                differ += _outcome(sketch, compact, probe) != _outcome(sketch, dense, probe)
                checked += 1
    assert checked == 3 * 3 * 21 and differ == 0
    assert spy.fast >= 0.9 * checked  # the fast path decided nearly all of them...
    assert max(spy.rows) > 16  # ...near-ties included: more exact rows than the codeword's support


def test_fast_decoding_falls_back_to_the_expansion_when_it_cannot_certify(monkeypatch: pytest.MonkeyPatch) -> None:
    """A payload the encoder cannot make (reflection vectors of norm > 1) and, with the rounding
    guard widened to every entry, an encoder-made one: both are decided on the expanded ``R̂``."""
    rng = np.random.default_rng(12)
    sketch = AngularSketch(64, 4)
    t = _template(rng, 64, 0)
    honest = sketch.payload(sketch.encode(sketch.check_secret(t)))
    count = 64 * 63 // 2
    wild = np.full(count, 30000, dtype=">i2").tobytes() + honest[2 * count :]
    for payload in (honest, wild):
        helper = sketch._wrap(payload)
        dense = _dense_helper(sketch, sketch.matrix(helper))
        for probe in [t, rng.normal(size=64), t + 0.5 * rng.normal(size=64) / 8]:
            assert _outcome(sketch, helper, probe) == _outcome(sketch, dense, probe)
    flat, s, r = _rotation.unpack(wild, 64)
    assert not _rotation.Reflections(flat, s, r).honest
    spy = _Spy(monkeypatch)
    monkeypatch.setattr(_rotation, "ROUNDING_GUARD", 0.5)
    assert _outcome(sketch, sketch._wrap(honest), t) is not None
    assert spy.fast == 0 and spy.expanded == 1 and spy.rows == [4]
