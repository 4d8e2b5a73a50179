"""Polar codes of any length on the sphere, with exact integer list decoding (the dense angular code).

A binary polar code (Arikan, "Channel polarization", IEEE Trans. IT 55(7), 2009) of mother length
``N = 2^m ≥ n``, *shortened* to length ``n``: the input bits of the last ``N − n`` indices are
frozen to 0, which forces the last ``N − n`` coded bits to 0 as well (the transform
``x = u·F^{⊗m}`` with ``F = [[1, 0], [1, 1]]`` is lower triangular), so those coded bits are known
to the decoder and are not sent (Wang and Liu, "A novel puncturing scheme for polar codes", IEEE
Comm. Letters 18(12), 2014). The ``k`` information bits sit at the most reliable of the remaining
indices by the polarisation weight ``Σ_b bit_b(i)·2^(b/4)`` (He et al., "β-expansion", Globecom
2017). A codeword ``x`` is sent as the unit vector ``(1 − 2x)/√n`` of ``R^n``.

Decoding is successive cancellation with a list of ``L`` paths (Tal and Vardy, "List decoding of
polar codes", IEEE Trans. IT 61(5), 2015) in the min-sum form:
``f(a, b) = sign(a)·sign(b)·min(|a|, |b|)``, ``g(a, b, u) = b + (1 − 2u)·a``, a path pays ``|λ|``
when its bit disagrees with the sign of its leaf value ``λ``, a subtree with no information bit
is settled at once (its penalty is the sum of ``|λ|`` over its negative values), and the ``L``
paths of least penalty survive each information bit (ties: the earlier path, then bit 0). The
decoder's inputs are integers (the rotated probe of the angular sketch, scaled by a power of two
to at most 2^28 in magnitude; known bits get 2^29) and every operation above maps integers to
integers below 2^53, so float64 computes the decoder **exactly**: the same decisions on every CPU,
for one probe or a batch. The numpy code here is the decoder's specification; where the optional
compiled extension is built, :func:`decode_batch` runs its twin (``_native.polar_scl``, the same
recursion on int64, about a hundred times faster for one probe), which the tests check returns the
same bits on every input.
"""

from __future__ import annotations

from typing import cast

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.sketches._backend import native_or_none

__all__ = [
    "CRC_POLYNOMIALS",
    "LLR_BITS",
    "PolarCode",
    "correlation",
    "decode_batch",
    "decode_paths",
    "decoder_inputs",
    "polar_transform",
    "signs",
]

#: Magnitude bits of the decoder's input values (known bits get one bit more).
LLR_BITS = 28

#: The compiled extension, or ``None`` where it is not built (tests set it to ``None`` to run numpy).
_NATIVE = native_or_none()
if _NATIVE is not None and not hasattr(_NATIVE, "polar_scl"):  # built from an older source: numpy
    _NATIVE = None
#: The compiled decoder's largest list and mother length (up to ``N = 4096`` every metric is an
#: integer below ``N²·2^29 ≤ 2^53``, exact in float64 and in int64 alike). The sketch offers lists
#: up to 128 (:data:`~sketchauth.sketches.angular_polar.MAX_LIST_SIZE`); longer ones are for measurement
#: (``benchmarks/bench_code_floor.py``: they do not bring the code nearer the capacity floor).
NATIVE_MAX_LIST, NATIVE_MAX_N = 1024, 4096
#: A subtree of information bits only forks on at most this many of its least reliable positions
#: (lists up to 32 fork on ``list − 1``, exactly as before; a longer list on these 31).
RATE_ONE_FORKS = 31
#: Generator polynomials (the ``x^r`` term implied; most significant bit first) of the outer
#: cyclic-redundancy check of ``r`` bits: CRC-4-ITU, CRC-6-ITU, CRC-8-CCITT, 5G NR's CRC11, CRC-16-CCITT.
CRC_POLYNOMIALS = {4: 0x3, 6: 0x03, 8: 0x07, 11: 0x621, 16: 0x1021}


def crc_matrix(k: int, r: int) -> np.ndarray:
    """The ``r × k`` GF(2) matrix ``H`` of the ``r``-bit CRC of ``k`` data bits (no initial value:
    linear, so ``H(a ⊕ b) = Ha ⊕ Hb``): column ``j`` is the remainder of ``x^(k−1−j)·x^r`` modulo the
    generator, most significant coefficient first.

    >>> crc_matrix(3, 4).astype(int).tolist()  # x^4 + x + 1: x^6, x^5, x^4 mod g
    [[1, 0, 0], [1, 1, 0], [0, 1, 1], [0, 0, 1]]
    """
    if r not in CRC_POLYNOMIALS:
        raise ValueError(f"no CRC of {r} bits; one of {sorted(CRC_POLYNOMIALS)}")
    generator = (1 << r) | CRC_POLYNOMIALS[r]
    H = np.zeros((r, k), dtype=np.uint8)
    for j in range(k):
        exponent = k - 1 - j + r
        value = 1 << exponent
        for bit in range(exponent, r - 1, -1):
            if value >> bit & 1:
                value ^= generator << (bit - r)
        H[:, j] = [(value >> (r - 1 - i)) & 1 for i in range(r)]
    return H


def polar_transform(u: np.ndarray) -> np.ndarray:
    """``x = u·F^{⊗m}`` over GF(2) along the last axis (an involution: applying it twice gives ``u``).

    >>> polar_transform(np.array([1, 0, 0, 0], dtype=np.uint8)).tolist()
    [1, 0, 0, 0]
    >>> polar_transform(np.array([0, 0, 0, 1], dtype=np.uint8)).tolist()
    [1, 1, 1, 1]
    """
    x = np.array(u, dtype=np.uint8, copy=True)
    size = x.shape[-1]
    half = 1
    while half < size:
        view = x.reshape(*x.shape[:-1], size // (2 * half), 2, half)
        view[..., 0, :] ^= view[..., 1, :]
        half *= 2
    return x


def _transform_columns(x: np.ndarray) -> np.ndarray:
    """:func:`polar_transform` of every column of ``x`` (``N × M``, ``uint8``), in place and returned."""
    size = x.shape[0]
    half = 1
    while half < size:
        view = x.reshape(size // (2 * half), 2, half, x.shape[1])
        view[:, 0] ^= view[:, 1]
        half *= 2
    return x


class PolarCode:
    """A shortened polar code: length ``n``, ``k`` information bits, mother length ``N = 2^⌈log2 n⌉``;
    with ``crc = r > 0``, concatenated with an outer ``r``-bit CRC of the ``k`` data bits.

    The CRC'd code puts its ``k`` data bits and their ``r`` CRC bits on the ``k + r`` most reliable
    indices (data first, CRC last, in index order): a linear code of ``2^k`` codewords, so the
    codebook and every security figure stay those of ``k`` bits, and the list decoder can pick among
    its final paths the best one that *is* a codeword (:func:`decode_batch`). No secret is involved:
    the CRC is part of the public code, like its frozen set.
    """

    def __init__(self, n: int, k: int, crc: int = 0) -> None:
        if n < 2 or not 1 <= k < n or crc < 0 or k + crc >= n:
            raise ValueError(f"a polar code needs 1 <= k < n, n >= 2 and k + crc < n, got n={n}, k={k}, crc={crc}")
        self.n, self.k, self.crc = n, k, crc
        self.N = 1 << (n - 1).bit_length()
        m = self.N.bit_length() - 1
        index = np.arange(self.N)
        weight = sum(((index >> b) & 1) * 2.0 ** (b / 4.0) for b in range(m))
        weight[n:] = -1.0  # shortened: frozen
        order = np.argsort(-weight, kind="stable")
        #: Every unfrozen index: the data bits', then the CRC bits' (``data`` and ``check``).
        self.info = np.sort(order[: k + crc])
        self.data, self.check = self.info[:k], self.info[k:]
        self.parity = crc_matrix(k, crc) if crc else np.zeros((0, k), dtype=np.uint8)
        self.frozen = np.ones(self.N, dtype=bool)
        self.frozen[self.info] = False

    def encode(self, bits: np.ndarray) -> np.ndarray:
        """The ``n`` coded bits (``uint8``) of ``k`` data bits (``... × k``)."""
        bits = np.asarray(bits, dtype=np.uint8)
        u = np.zeros((*bits.shape[:-1], self.N), dtype=np.uint8)
        u[..., self.data] = bits
        if self.crc:
            u[..., self.check] = (bits.astype(np.int64) @ self.parity.T.astype(np.int64)) & 1
        return polar_transform(u)[..., : self.n]

    def valid(self, coded: np.ndarray) -> np.ndarray:
        """Which words of coded bits (``... × n``) are codewords (frozen inputs 0, CRC right)."""
        coded = np.asarray(coded, dtype=np.uint8)
        shape = coded.shape[:-1]
        # The transform with the words on the last (contiguous) axis: each butterfly XORs whole rows.
        x = np.zeros((self.N, int(np.prod(shape, dtype=np.int64))), dtype=np.uint8)
        x[: self.n] = coded.reshape(-1, self.n).T
        u = _transform_columns(x)
        ok = ~np.any(u[self.frozen], axis=0)
        if self.crc:
            # float32 products of 0/1 sums of at most k < 2^24 terms are exact (BLAS, not integer loops).
            check = np.remainder(self.parity.astype(np.float32) @ u[self.data].astype(np.float32), 2.0)
            ok &= np.all(check == u[self.check], axis=0)
        return cast("np.ndarray", ok.reshape(shape))

    def information(self, coded: np.ndarray) -> np.ndarray | None:
        """The ``k`` data bits of ``n`` coded bits, or ``None`` if they are not a codeword."""
        x = np.zeros(self.N, dtype=np.uint8)
        x[: self.n] = np.asarray(coded, dtype=np.uint8)
        if not bool(self.valid(x[: self.n])):
            return None
        return polar_transform(x)[self.data]


def _settle_frozen(alpha: np.ndarray, metric: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    penalty = np.where(alpha < 0, -alpha, 0.0).sum(axis=-1)
    return np.zeros(alpha.shape, dtype=np.uint8), metric + penalty


def _gather(a: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``a[i, index[i, j]]`` for every probe ``i`` (``a`` is ``B × P (× m)``, ``index`` is ``B × P'``)."""
    return cast("np.ndarray", a[np.arange(a.shape[0])[:, None], index])


def _prune(
    bits: np.ndarray, parents: np.ndarray, metric: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keep the ``size`` candidates of least metric per probe (ties: the earlier candidate)."""
    if metric.shape[1] <= size:
        return bits, parents, metric
    keep = np.argsort(metric, axis=1, kind="stable")[:, :size]
    return _gather(bits, keep), _gather(parents, keep), _gather(metric, keep)


def _repetition(alpha: np.ndarray, metric: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A subtree whose only information bit is its last: its codewords are all 0s and all 1s."""
    b, p, m = alpha.shape
    zeros = metric + np.where(alpha < 0, -alpha, 0.0).sum(axis=-1)
    ones = metric + np.where(alpha > 0, alpha, 0.0).sum(axis=-1)
    both = np.concatenate([zeros, ones], axis=1)
    bits = np.broadcast_to(
        np.concatenate([np.zeros((p, m), dtype=np.uint8), np.ones((p, m), dtype=np.uint8)]), (b, 2 * p, m)
    )
    parents = np.broadcast_to(np.concatenate([np.arange(p), np.arange(p)]), (b, 2 * p))
    return _prune(bits, parents, both, size)


def _rate_one(alpha: np.ndarray, metric: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A subtree of information bits only: every word of its length is a codeword. Each path takes
    the hard decision, then forks on its ``min(size − 1, m, RATE_ONE_FORKS)`` least reliable positions in turn
    (flip: pay ``|λ|``; keep: pay nothing), pruned to ``size`` after each fork."""
    b, p, m = alpha.shape
    bits = (alpha < 0).astype(np.uint8)
    magnitude = np.abs(alpha)
    parents = np.broadcast_to(np.arange(p), (b, p))
    order = np.argsort(magnitude, axis=-1, kind="stable")[..., : min(size - 1, m, RATE_ONE_FORKS)]
    weakest = np.take_along_axis(magnitude, order, axis=-1)
    rows = np.arange(b)[:, None]
    for step in range(order.shape[-1]):
        cur = bits.shape[1]
        position = order[rows, parents, step]  # b × cur
        cost = weakest[rows, parents, step]
        flipped = bits.copy()
        flipped[rows, np.arange(cur)[None, :], position] ^= 1
        bits, parents, metric = _prune(
            np.concatenate([bits, flipped], axis=1),
            np.concatenate([parents, parents], axis=1),
            np.concatenate([metric, metric + cost], axis=1),
            size,
        )
    return bits, parents, metric


def _node(
    alpha: np.ndarray, frozen: np.ndarray, metric: np.ndarray, size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode one subtree for ``B`` probes × ``P`` paths: ``alpha`` is ``B × P × m``.

    Returns ``(beta, parents, metric)``: the subtree's coded bits per surviving path
    (``B × P' × m``), each survivor's parent path index (``B × P'``) and the path metrics.
    """
    b, p, m = alpha.shape
    if frozen.all():
        beta, metric = _settle_frozen(alpha, metric)
        return beta, np.broadcast_to(np.arange(p), (b, p)), metric
    if m > 1 and not frozen.any():
        return _rate_one(alpha, metric, size)
    if m > 1 and frozen[:-1].all():
        return _repetition(alpha, metric, size)
    if m == 1:
        a = alpha[..., 0]
        both = np.concatenate([metric + np.where(a < 0, -a, 0.0), metric + np.where(a >= 0, a, 0.0)], axis=1)
        parents = np.concatenate([np.arange(p), np.arange(p)])
        bits = np.concatenate([np.zeros(p, dtype=np.uint8), np.ones(p, dtype=np.uint8)])
        if 2 * p <= size:
            return np.broadcast_to(bits, (b, 2 * p))[..., None], np.broadcast_to(parents, (b, 2 * p)), both
        keep = np.argsort(both, axis=1, kind="stable")[:, :size]
        return bits[keep][..., None], parents[keep], _gather(both, keep)
    h = m // 2
    a1, a2 = alpha[..., :h], alpha[..., h:]
    left = np.sign(a1) * np.sign(a2) * np.minimum(np.abs(a1), np.abs(a2))
    beta_l, par_l, metric = _node(left, frozen[:h], metric, size)
    a1, a2 = _gather(a1, par_l), _gather(a2, par_l)
    right = a2 + (1.0 - 2.0 * beta_l) * a1
    beta_r, par_r, metric = _node(right, frozen[h:], metric, size)
    beta_l, parents = _gather(beta_l, par_r), _gather(par_l, par_r)
    return np.concatenate([beta_l ^ beta_r, beta_r], axis=-1), parents, metric


def decoder_inputs(y: np.ndarray, code: PolarCode) -> np.ndarray:
    """The decoder's integer inputs of integer-valued rows ``y`` (``B × n``): each row scaled by a
    power of two to at most ``2^LLR_BITS`` in magnitude and rounded; shortened positions ``2^(LLR_BITS+1)``."""
    y = np.asarray(y, dtype=np.float64)
    _, exponent = np.frexp(np.max(np.abs(y), axis=-1, keepdims=True))
    shift = np.maximum(exponent - LLR_BITS, 0)
    llr = np.rint(np.ldexp(y, -shift))
    known = np.full((y.shape[0], code.N - code.n), float(1 << (LLR_BITS + 1)))
    return np.concatenate([llr, known], axis=1)


def _native_for(llr: np.ndarray, code: PolarCode, list_size: int, backend: str) -> object | None:
    """The compiled module where ``backend`` allows it and it applies, else ``None`` (or an error for ``"native"``)."""
    if backend not in ("auto", "native", "numpy"):
        raise ParameterError(f"backend must be one of auto, native, numpy, got {backend!r}")
    if backend == "numpy":
        return None
    module = _NATIVE if 1 <= list_size <= NATIVE_MAX_LIST and code.N <= NATIVE_MAX_N else None
    if module is not None and bool(np.isfinite(llr).all()):
        return module
    if backend == "native":
        raise ParameterError(
            f"the compiled polar decoder needs the extension, list_size <= {NATIVE_MAX_LIST}, "
            f"N <= {NATIVE_MAX_N} and finite inputs"
        )
    return None


def decode_paths(
    y: np.ndarray, code: PolarCode, list_size: int, *, backend: str = "auto"
) -> tuple[np.ndarray, np.ndarray]:
    """Every path the list decoder keeps to the end, for each row of ``y`` (``B × n``).

    Returns ``(bits, metrics)``: ``B × q × n`` coded bits (``uint8``) and ``B × q`` path metrics
    (float64, exact integers; the least is the plain decoder's choice), in the decoder's path order;
    ``q ≤ list_size`` depends on the code and the list only. ``backend`` as :func:`decode_batch`.
    """
    llr = decoder_inputs(y, code)
    module = _native_for(llr, code, list_size, backend)
    if module is not None:
        raw, metrics, q = module.polar_scl(llr, code.frozen.astype(np.uint8).tobytes(), code.n, list_size, True)  # type: ignore[attr-defined]
        bits = np.frombuffer(raw, dtype=np.uint8).reshape(llr.shape[0], q, code.n).copy()
        return bits, np.frombuffer(metrics, dtype=np.int64).reshape(llr.shape[0], q).astype(np.float64)
    metric = np.zeros((llr.shape[0], 1))
    beta, _, metric = _node(llr[:, None, :], code.frozen, metric, list_size)
    return np.ascontiguousarray(beta[..., : code.n]), np.ascontiguousarray(metric)


def decode_batch(y: np.ndarray, code: PolarCode, list_size: int, *, backend: str = "auto") -> np.ndarray:
    """The coded bits (``B × n``, ``uint8``) the list decoder picks for each row of ``y`` (``B × n``).

    Without a CRC (``code.crc == 0``), the path of least metric (ties: the first). With one, the
    path of least metric among those whose CRC holds (ties: the first): the list is *scored by the
    probe* — a path's min-sum metric is ``Σ |y_i|`` over the positions where it disagrees with the
    sign of ``y_i``, i.e. ``(Σ|y_i| − ⟨y, c⟩)/2``, so the least metric is the largest correlation
    with the rotated probe — and *filtered by the code*; where no path holds its CRC, the least
    metric path, which is no codeword (:meth:`PolarCode.information` refuses it).

    ``backend``: ``"auto"`` runs the compiled decoder when the extension is built and applies
    (``list_size ≤ 1024``, ``N ≤ 4096``, finite inputs), else the numpy one; ``"numpy"`` and
    ``"native"`` ask for one (``"native"`` raises :class:`~sketchauth.errors.ParameterError` where
    it cannot run). Both return the same bits.

    >>> code = PolarCode(6, 2)
    >>> word = code.encode(np.array([1, 0]))
    >>> y = (1.0 - 2.0 * word) * 1000 + np.array([30, -50, 20, 0, 10, -40])
    >>> bool(np.array_equal(decode_batch(y[None, :], code, 4)[0], word))
    True
    """
    if code.crc:
        bits, metrics = decode_paths(y, code, list_size, backend=backend)
        ok = code.valid(bits)
        pick = np.argmin(np.where(ok, metrics, np.inf), axis=1)
        pick = np.where(ok.any(axis=1), pick, np.argmin(metrics, axis=1))
        return np.ascontiguousarray(bits[np.arange(bits.shape[0]), pick])
    llr = decoder_inputs(y, code)
    module = _native_for(llr, code, list_size, backend)
    if module is not None:
        coded = module.polar_scl(llr, code.frozen.astype(np.uint8).tobytes(), code.n, list_size)  # type: ignore[attr-defined]
        return np.frombuffer(coded, dtype=np.uint8).reshape(llr.shape[0], code.n).copy()
    return _decode_numpy(llr, code, list_size)


def _decode_numpy(llr: np.ndarray, code: PolarCode, list_size: int) -> np.ndarray:
    """The specification: :func:`_node` on the whole tree, then the path of least metric."""
    metric = np.zeros((llr.shape[0], 1))
    beta, _, metric = _node(llr[:, None, :], code.frozen, metric, list_size)
    best = np.argmin(metric, axis=1)  # ties: the first (lowest index) path
    return np.ascontiguousarray(beta[np.arange(beta.shape[0]), best, : code.n])


def signs(coded: np.ndarray) -> np.ndarray:
    """Coded bits as the codeword's signs ``1 − 2x`` (``int8`` ±1), along the last axis.

    >>> signs(np.array([0, 1, 1], dtype=np.uint8)).tolist()
    [1, -1, -1]
    """
    return (1 - 2 * np.asarray(coded, dtype=np.int8)).astype(np.int8)


def correlation(words: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``Σ_i (1 − 2x_i)·y_i`` per row: the rotated probe's correlation with the decoded codeword."""
    return cast("np.ndarray", np.einsum("ij,ij->i", 1.0 - 2.0 * words.astype(np.float64), y))
