"""The shortened polar code and its exact integer list decoder (sketchauth.sketches.polar).

The decoder's min-sum path metric of a codeword ``x`` is exactly its discrepancy
``Σ_{i: x_i ≠ [λ_i < 0]} |λ_i|`` against the decoder's integer inputs ``λ`` (the kernel identity
``|f(a, b)| − s₁·f(a, b) + |b + s₁a| = |a| + |b|`` for ``s₁ = ±1``, applied at every level), and
``Σ_i (1 − 2x_i)·λ_i = Σ|λ| − 2·discrepancy``: a list that keeps every path (``list_size ≥ 2^k``)
returns a codeword of maximal correlation — maximum-likelihood decoding, checked here against
brute force. Smaller lists carry one guarantee, also checked: when the signs of ``λ`` are a
codeword, that codeword (metric 0, the least possible) is returned. The decoder's tests run on the
numpy specification and, where the extension is built, on the compiled decoder too.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.sketches import polar
from sketchauth.sketches.polar import (
    LLR_BITS,
    PolarCode,
    correlation,
    decode_batch,
    decoder_inputs,
    polar_transform,
)

#: Both decoders: the numpy specification and, where the extension is built, its compiled twin.
BACKENDS = [
    "numpy",
    pytest.param(
        "native", marks=pytest.mark.skipif(polar._NATIVE is None, reason="the compiled extension is not built")
    ),
]
#: (n, k) with n a power of two and not (shortened), tiny to 100 coordinates.
SHAPES = [(2, 1), (4, 2), (8, 4), (12, 3), (16, 8), (24, 12), (32, 5), (48, 20), (64, 32), (100, 40), (100, 99)]


def _all_words(code: PolarCode) -> np.ndarray:
    """Every codeword (``2^k × n`` coded bits), in the order of their information bits."""
    info = np.array(list(itertools.product([0, 1], repeat=code.k)), dtype=np.uint8)
    return code.encode(info)


def _signs(words: np.ndarray) -> np.ndarray:
    return 1.0 - 2.0 * words.astype(np.float64)


# -- the transform and the code -----------------------------------------------------------------------------
@settings(max_examples=50, deadline=None)
@given(m=st.integers(0, 9), seed=st.integers(0, 2**32 - 1), rows=st.integers(1, 4))
def test_the_transform_is_a_linear_involution(m: int, seed: int, rows: int) -> None:
    rng = np.random.default_rng(seed)
    u = rng.integers(0, 2, size=(rows, 1 << m), dtype=np.uint8)
    v = rng.integers(0, 2, size=(rows, 1 << m), dtype=np.uint8)
    before = u.copy()
    x = polar_transform(u)
    assert np.array_equal(u, before)  # not in place
    assert x.dtype == np.uint8 and x.shape == u.shape
    assert np.array_equal(polar_transform(x), u)
    assert np.array_equal(polar_transform(u ^ v), x ^ polar_transform(v))
    for row in range(rows):  # batch rows are independent
        assert np.array_equal(polar_transform(u[row]), x[row])


def test_the_transform_is_the_kronecker_power_of_the_kernel() -> None:
    kernel = np.array([[1, 0], [1, 1]], dtype=np.int64)
    g = np.ones((1, 1), dtype=np.int64)
    for m in range(1, 6):
        g = np.kron(g, kernel)
        identity = np.eye(1 << m, dtype=np.uint8)
        assert np.array_equal(polar_transform(identity), g % 2)  # row i is u = e_i


@pytest.mark.parametrize(("n", "k"), SHAPES)
def test_the_information_set_and_its_frozen_complement(n: int, k: int) -> None:
    code = PolarCode(n, k)
    mother = 1 << (n - 1).bit_length()
    assert mother == code.N
    assert code.N // 2 < n <= code.N
    assert len(code.info) == k == len(set(code.info.tolist()))
    assert np.all(np.diff(code.info) > 0) and np.all(code.info < n)  # sorted; never a shortened index
    assert code.frozen.shape == (code.N,) and code.frozen.sum() == code.N - k
    assert not code.frozen[code.info].any() and code.frozen[n:].all()
    if k > 1:  # the information sets of one length are nested: a larger k adds the next most reliable
        assert set(PolarCode(n, k - 1).info.tolist()) < set(code.info.tolist())


@pytest.mark.parametrize(("n", "k"), SHAPES)
def test_encode_and_information_round_trip(n: int, k: int) -> None:
    code = PolarCode(n, k)
    rng = np.random.default_rng(n * 1000 + k)
    bits = rng.integers(0, 2, size=(20, k), dtype=np.uint8)
    words = code.encode(bits)
    assert words.shape == (20, n) and words.dtype == np.uint8
    for b, w in zip(bits, words, strict=True):
        assert np.array_equal(code.information(w), b)
    assert not code.encode(np.zeros(k, dtype=np.uint8)).any()
    assert np.array_equal(code.encode(bits[0] ^ bits[1]), words[0] ^ words[1])  # linear


@pytest.mark.parametrize(("n", "k"), SHAPES)
def test_shortened_coded_bits_are_zero_so_dropping_them_loses_nothing(n: int, k: int) -> None:
    """The mother codeword's last N − n bits are 0 for every choice of information bits."""
    code = PolarCode(n, k)
    rng = np.random.default_rng(k)
    u = np.zeros((64, code.N), dtype=np.uint8)
    u[:, code.info] = rng.integers(0, 2, size=(64, k), dtype=np.uint8)
    u[0, code.info] = 1  # every information bit set
    mother = polar_transform(u)
    assert not mother[:, n:].any()
    assert np.array_equal(mother[:, :n], code.encode(u[:, code.info]))
    assert np.array_equal(polar_transform(np.pad(mother[:, :n], ((0, 0), (0, code.N - n)))), u)


@pytest.mark.parametrize("n", [4, 7, 8, 12])
def test_information_refuses_every_word_that_is_not_a_codeword(n: int) -> None:
    code = PolarCode(n, n // 2)
    words = {w.tobytes() for w in _all_words(code)}
    assert len(words) == 2**code.k  # the encoding is injective
    for x in itertools.product([0, 1], repeat=n):
        arr = np.array(x, dtype=np.uint8)
        assert (code.information(arr) is not None) == (arr.tobytes() in words)


@pytest.mark.parametrize(("n", "k"), [(24, 12), (100, 40)])
def test_one_flipped_bit_is_never_a_codeword(n: int, k: int) -> None:
    """k < n keeps index 0 (polarisation weight 0) frozen, so no codeword has weight 1."""
    code = PolarCode(n, k)
    rng = np.random.default_rng(n)
    for word in code.encode(rng.integers(0, 2, size=(5, k), dtype=np.uint8)):
        for i in range(n):
            flipped = word.copy()
            flipped[i] ^= 1
            assert code.information(flipped) is None


@pytest.mark.parametrize(("n", "k"), [(1, 1), (0, 0), (2, 0), (2, 2), (8, 8), (8, 9), (8, -1), (-4, 1)])
def test_bad_lengths_and_dimensions_are_refused(n: int, k: int) -> None:
    with pytest.raises(ValueError, match="1 <= k < n"):
        PolarCode(n, k)


# -- the decoder: noiseless and exact ---------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(("n", "k"), SHAPES)
@pytest.mark.parametrize("list_size", [1, 4, 32])
def test_a_noiseless_codeword_decodes_to_itself(n: int, k: int, list_size: int, backend: str) -> None:
    code = PolarCode(n, k)
    rng = np.random.default_rng(n + k)
    words = code.encode(rng.integers(0, 2, size=(16, k), dtype=np.uint8))
    for amplitude in (1, 1000, 2**40):  # below, at and far above the decoder's 28 bits
        assert np.array_equal(decode_batch(amplitude * _signs(words), code, list_size, backend=backend), words)


@st.composite
def tiny_codes(draw: st.DrawFn) -> tuple[PolarCode, np.ndarray]:
    """A code of length 2..16 with at most 5 information bits and integer inputs below 2^28."""
    n = draw(st.integers(2, 16))
    k = draw(st.integers(1, min(5, n - 1)))
    rows = draw(st.integers(1, 6))
    high = draw(st.sampled_from([1, 3, 100, 2**27]))
    values = draw(st.lists(st.integers(-high, high), min_size=rows * n, max_size=rows * n))
    return PolarCode(n, k), np.array(values, dtype=np.float64).reshape(rows, n)


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=300, deadline=None)
@given(case=tiny_codes())
def test_a_full_list_is_maximum_likelihood(case: tuple[PolarCode, np.ndarray], backend: str) -> None:
    """list_size ≥ 2^k: the decoded word has the largest correlation of all 2^k codewords (ties
    included: small ranges make many), and is that codeword when the maximum is unique."""
    code, y = case
    words = _all_words(code)
    scores = _signs(words) @ y.T  # 2^k × rows, exact integers
    decoded = decode_batch(y, code, 1 << code.k, backend=backend)
    got = correlation(decoded, y)
    assert np.array_equal(got, scores.max(axis=0))
    for row in range(y.shape[0]):
        assert code.information(decoded[row]) is not None
        best = np.flatnonzero(scores[:, row] == scores[:, row].max())
        if best.size == 1:
            assert np.array_equal(decoded[row], words[best[0]])


@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=200, deadline=None)
@given(
    n=st.integers(2, 40),
    k_fraction=st.floats(0.0, 1.0),
    list_size=st.sampled_from([1, 2, 3, 8]),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_list_returns_a_codeword_and_the_one_the_signs_spell(
    n: int, k_fraction: float, list_size: int, seed: int, backend: str
) -> None:
    """Every list size returns a codeword; when the inputs' signs are a codeword c (no zero input),
    c is returned: its path metric is 0 and every other path pays a positive |λ|."""
    k = 1 + int(k_fraction * (n - 2))
    code = PolarCode(n, k)
    rng = np.random.default_rng(seed)
    words = code.encode(rng.integers(0, 2, size=(8, k), dtype=np.uint8))
    magnitudes = rng.integers(1, 2**20, size=words.shape).astype(np.float64)
    spelled = decode_batch(_signs(words) * magnitudes, code, list_size, backend=backend)
    assert np.array_equal(spelled, words)
    noisy = rng.integers(-(2**20), 2**20, size=words.shape).astype(np.float64)
    for word in decode_batch(noisy, code, list_size, backend=backend):
        assert code.information(word) is not None


def test_a_full_list_is_never_worse_than_a_short_one() -> None:
    """Both are codewords; the full list's correlation is the maximum, so never below the short list's."""
    rng = np.random.default_rng(5)
    code = PolarCode(24, 5)
    words = code.encode(rng.integers(0, 2, size=(400, 5), dtype=np.uint8))
    y = np.rint(1000 * _signs(words) + 1500 * rng.normal(size=words.shape))
    full = correlation(decode_batch(y, code, 32), y)
    assert np.array_equal(full, (_signs(_all_words(code)) @ y.T).max(axis=0))
    for list_size in (1, 2, 4):
        assert np.all(full >= correlation(decode_batch(y, code, list_size), y))
    assert np.any(full > correlation(decode_batch(y, code, 1), y))  # plain SC does miss some


def _reference_scl(llr: np.ndarray, frozen: np.ndarray, list_size: int) -> np.ndarray:
    """Plain bit-by-bit min-sum SC list decoding (Tal and Vardy; Balatsoukas-Stimming et al.'s
    LLR path metric), one path at a time, without the decoder's subtree shortcuts: u_i's value is
    computed from the inputs and the path's earlier bits, a path pays |λ_i| when its bit is not
    λ_i's hard decision, the list_size paths of least metric survive each information bit. Returns
    the best path's coded bits (length N)."""

    def leaf(alpha: list[float], prefix: list[int]) -> float:
        if len(alpha) == 1:
            return alpha[0]
        h = len(alpha) // 2
        a, b = alpha[:h], alpha[h:]
        if len(prefix) < h:
            return leaf(
                [float(np.sign(x) * np.sign(z) * min(abs(x), abs(z))) for x, z in zip(a, b, strict=True)], prefix
            )
        v = polar_transform(np.array(prefix[:h], dtype=np.uint8)).tolist()
        return leaf([z + (1 - 2 * bit) * x for x, z, bit in zip(a, b, v, strict=True)], prefix[h:])

    values = [float(x) for x in llr]
    paths: list[tuple[float, list[int]]] = [(0.0, [])]
    for i in range(len(values)):
        grown = []
        for metric, prefix in paths:
            lam = leaf(values, prefix)
            cost = {0: -lam if lam < 0 else 0.0, 1: lam if lam > 0 else 0.0}
            for bit in (0,) if frozen[i] else (0, 1):
                grown.append((metric + cost[bit], [*prefix, bit]))
        grown.sort(key=lambda path: path[0])
        paths = grown[:list_size]
    return polar_transform(np.array(paths[0][1], dtype=np.uint8))


@pytest.mark.parametrize(
    ("n", "k"), [(8, 4), (12, 6), (16, 3), (16, 12), (24, 10), (32, 16), (32, 26), (40, 20), (64, 52)]
)
@pytest.mark.parametrize("list_size", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_decoder_is_plain_successive_cancellation_list_decoding(
    n: int, k: int, list_size: int, backend: str
) -> None:
    """Its shortcuts (settled frozen subtrees, repetition and rate-one subtrees forking on their
    list_size − 1 least reliable positions) change nothing: the same word as bit-by-bit SCL on noisy
    inputs (magnitudes up to 2^20, so that no two candidate metrics tie and the order of ties is moot)."""
    code = PolarCode(n, k)
    rng = np.random.default_rng(100 * n + k)
    words = code.encode(rng.integers(0, 2, size=(24, k), dtype=np.uint8))
    noise = rng.normal(size=words.shape) * np.linspace(0.2, 1.5, 24)[:, None]  # few errors to many
    y = np.rint(2**19 * _signs(words) + 2**19 * noise)
    llr = decoder_inputs(y, code)
    decoded = decode_batch(y, code, list_size, backend=backend)
    for row in range(len(y)):
        assert np.array_equal(decoded[row], _reference_scl(llr[row], code.frozen, list_size)[:n])


# -- determinism and exactness ---------------------------------------------------------------------------
@pytest.mark.parametrize("backend", BACKENDS)
@settings(max_examples=30, deadline=None)
@given(
    shape=st.sampled_from([(12, 3), (16, 8), (24, 12), (48, 20), (100, 40)]),
    list_size=st.sampled_from([1, 2, 8, 32]),
    seed=st.integers(0, 2**32 - 1),
)
def test_a_batch_decodes_as_its_rows_do_in_any_order(
    shape: tuple[int, int], list_size: int, seed: int, backend: str
) -> None:
    n, k = shape
    code = PolarCode(n, k)
    rng = np.random.default_rng(seed)
    words = code.encode(rng.integers(0, 2, size=(12, k), dtype=np.uint8))
    y = np.rint(2**30 * _signs(words) + 2**31 * rng.normal(size=words.shape))
    y[0] = 0.0  # an all-zero row: every path ties
    y[1, : n // 2] = 0.0
    batch = decode_batch(y, code, list_size, backend=backend)
    rows = np.vstack([decode_batch(y[i : i + 1], code, list_size, backend=backend) for i in range(len(y))])
    assert np.array_equal(batch, rows)
    order = rng.permutation(len(y))
    assert np.array_equal(decode_batch(y[order], code, list_size, backend=backend), batch[order])
    assert np.array_equal(decode_batch(y, code, list_size, backend=backend), batch)  # and again: no hidden state


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(2, 2048),
    exponent=st.integers(0, 60),
    seed=st.integers(0, 2**32 - 1),
)
def test_decoder_inputs_are_integers_of_at_most_28_bits(n: int, exponent: int, seed: int) -> None:
    """Each row is scaled by a power of two (never up) to below 2^28 and rounded; the shortened
    positions get 2^29; every path metric then stays below 2^53 (N·2^29·2^log2(N) at N = 2048)."""
    code = PolarCode(n, max(1, n // 2))
    rng = np.random.default_rng(seed)
    y = np.rint(rng.uniform(-1.0, 1.0, size=(3, n)) * 2.0**exponent)
    y[0, 0] = 2.0**exponent  # the row's largest magnitude sits at a power of two
    llr = decoder_inputs(y, code)
    assert llr.shape == (3, code.N)
    assert np.array_equal(llr, np.rint(llr)) and np.abs(llr[:, :n]).max() <= 2**LLR_BITS
    assert np.all(llr[:, n:] == 2 ** (LLR_BITS + 1))
    for row in range(3):
        peak = np.abs(y[row]).max()
        if peak < 2**LLR_BITS:
            assert np.array_equal(llr[row, :n], y[row])  # small integers pass unchanged
        else:
            shift = float(2 ** (int(peak).bit_length() - LLR_BITS))  # a power of two
            assert np.array_equal(llr[row, :n], np.rint(y[row] / shift))
    assert code.N * 2.0 ** (LLR_BITS + 1) * code.N < 2**53


def test_correlation_is_the_signed_sum() -> None:
    words = np.array([[0, 1, 1], [0, 0, 0]], dtype=np.uint8)
    y = np.array([[3.0, -2.0, 5.0], [1.0, 1.0, -1.0]])
    assert correlation(words, y).tolist() == [3.0 + 2.0 - 5.0, 1.0]


def _valid_by_transform(code: PolarCode, coded: np.ndarray) -> np.ndarray:
    """The definition of :meth:`PolarCode.valid`: polar-transform each word, frozen inputs 0, CRC right."""
    x = np.zeros((*coded.shape[:-1], code.N), dtype=np.uint8)
    x[..., : code.n] = coded
    u = polar_transform(x)
    ok = ~np.any(u[..., code.frozen], axis=-1)
    if code.crc:
        check = (u[..., code.data].astype(np.int64) @ code.parity.T.astype(np.int64)) & 1
        ok &= np.all(check == u[..., code.check], axis=-1)
    return ok


@settings(max_examples=100, deadline=None)
@given(
    n=st.integers(8, 600),
    k_share=st.floats(0.05, 0.6),
    crc=st.sampled_from([0, 4, 6, 8, 11, 16]),
    seed=st.integers(0, 2**32 - 1),
    rows=st.integers(1, 5),
    paths=st.integers(1, 6),
)
def test_valid_equals_the_transform_definition(
    n: int, k_share: float, crc: int, seed: int, rows: int, paths: int
) -> None:
    """The column-wise :meth:`PolarCode.valid` equals the definition on random words, on codewords,
    on codewords with one bit flipped, on decoded words, and for a single word (any leading shape)."""
    k = max(1, int(n * k_share))
    if k + crc >= n:
        return
    code = PolarCode(n, k, crc)
    rng = np.random.default_rng(seed)
    noise = rng.integers(0, 2, (rows, paths, n), dtype=np.uint8)
    words = code.encode(rng.integers(0, 2, (rows, paths, k)))
    flipped = words.copy()
    flipped[..., rng.integers(n)] ^= 1
    y = (1.0 - 2.0 * words[:, 0]) + rng.normal(0.0, 0.8, (rows, n))
    decoded = decode_batch(y, code, 4)
    for coded in (noise, words, flipped, decoded, words[0, 0], noise[0]):
        assert np.array_equal(code.valid(coded), _valid_by_transform(code, coded))
    assert code.valid(words).all() and not code.valid(flipped).any()
