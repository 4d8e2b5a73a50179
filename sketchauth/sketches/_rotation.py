"""Compact Haar rotations for the angular sketches: Householder vectors instead of ``n²`` entries.

Private module of :mod:`sketchauth.sketches.angular` (the math and the security argument are in
that module's docstring). Three pieces:

* :func:`conditioned_householder` draws, in ``O(n²)``, the Householder factors of a Haar rotation
  ``R0 ∈ O(n)`` conditioned on ``R0 t = b`` (the subgroup algorithm: Diaconis and Shahshahani,
  "The subgroup algorithm for generating uniform random variables", Probability in the
  Engineering and Informational Sciences 1, 1987, §2; Stewart, "The efficient generation of
  random orthogonal matrices with an application to condition estimators", SIAM J. Numer. Anal.
  17, 1980, §3, for the unconditioned case): column ``k`` of the trailing block is uniform on the
  sphere subject to the constraint, which fixes its cosine to the remaining target.
* :func:`pack` / :func:`unpack` write and strictly read the stored form: the ``n(n−1)/2``
  free Householder coordinates as ``int16`` fixed point (``2^15`` per unit) and two sign vectors.
* :func:`expand` multiplies the reflections out into ``R' = diag(r)·H_0 ⋯ H_{n−2}·diag(s)`` in
  float64 (``O(n³)``, once per helper), and :class:`Reflections` applies them to a probe or gives a
  few rows of ``R'`` without expanding (``O(n²)`` each: the sparse family's decoder).

Convention (LAPACK's ``dgeqrf``/``dlarfg`` one, except that a reflection is never the identity):
``H_k`` acts on coordinates ``k..n−1`` as ``I − 2vvᵀ/‖v‖²`` with ``v = (1, w_k)``,
``w_k ∈ R^(n−k−1)``; for the unit vector ``x`` it is built from, ``β = −sign(x_0)`` (``+1`` at
``x_0 = 0``) and ``w_k = x_{1:}/(x_0 − β)``, so ``H_k x = β e_0`` and ``|w_k,i| ≤ 1``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import cast

import numpy as np
from threadpoolctl import ThreadpoolController

#: Fixed-point scale of a stored Householder coordinate (``|w| ≤ 1``; ``int16``).
W_SCALE = 1 << 15
#: Below this norm a remaining target is zero: the constraint leaves the column free.
_TINY = 1e-12
#: Largest ``‖v_k‖² = 1 + ‖w_k‖²`` of a reflection the encoder makes (``‖w_k‖ ≤ 1`` before rounding;
#: rounding adds at most ``√n·2^−16 < 10^−3`` to the norm for ``n ≤ 2048``).
HONEST_NORM2 = 2.01
#: Largest entry of a block's ``T`` accepted by the fast decoder (encoder-made rotations: about 2).
HONEST_T = 16.0
#: Distance to a half-integer under which a fixed-point entry computed by :meth:`Reflections.fixed_rows`
#: is not trusted to round as :func:`expand`'s does (the two float64 errors are near ``10^−11`` here).
ROUNDING_GUARD = 2.0**-20


def compact_bytes(n: int) -> int:
    """Bytes of the stored form: ``n(n−1)/2`` ``int16`` coordinates and two ``n``-bit sign vectors."""
    return n * (n - 1) + 2 * ((n + 7) // 8)


def conditioned_householder(t: np.ndarray, b: np.ndarray, gaussians: np.ndarray) -> tuple[list[np.ndarray], np.ndarray]:
    """``(w, s)``: the Householder factors of a Haar ``R0`` conditioned on ``R0 t = b`` (unit vectors).

    ``gaussians`` holds :func:`gaussian_count` standard normals: ``n − k`` of them are the fresh
    direction of step ``k`` and the last one the last sign when ``t`` ends in zeros. Step ``k``:
    with ``a = t_{k:}`` and the remaining target ``b_k`` (same norm), the first column ``x`` of the
    trailing block must satisfy ``⟨x, b_k⟩ = a_0``; uniform among such unit vectors it is
    ``x = (a_0/‖a‖)·b̂ + √(1 − a_0²/‖a‖²)·u`` with ``u`` uniform on the unit sphere of ``b̂^⊥``
    (the normalised projection of a Gaussian vector ``g``). Then ``H_k x = β e_0``, ``s_k = β`` and
    the next target is ``(H_k b_k)_{1:}``.
    """
    n = t.shape[0]
    tails = np.sqrt(np.cumsum((t * t)[::-1])[::-1])  # ‖t_{k:}‖, accurate for small tails
    target = b.astype(np.float64).copy()
    ws: list[np.ndarray] = []
    s = np.empty(n)
    start = 0
    for k in range(n - 1):
        g = gaussians[start : start + n - k]
        start += n - k
        gg, gb, bb = float(g @ g), float(g @ target), float(target @ target)
        if tails[k] <= _TINY or bb <= _TINY * _TINY:
            alpha, gamma = 0.0, 1.0 / np.sqrt(gg)
        else:
            cos = min(1.0, max(-1.0, float(t[k]) / float(tails[k])))
            gamma = np.sqrt(1.0 - cos * cos) / np.sqrt(max(gg - gb * gb / bb, 1e-300))
            alpha = cos / np.sqrt(bb) - gamma * gb / bb
        x0 = alpha * float(target[0]) + gamma * float(g[0])
        beta = -1.0 if x0 >= 0 else 1.0
        w = (alpha * target[1:] + gamma * g[1:]) / (x0 - beta)
        ws.append(w)
        s[k] = beta
        scale = 2.0 * (float(target[0]) + float(w @ target[1:])) / (1.0 + float(w @ w))
        target = target[1:] - scale * w
    last = float(t[n - 1])
    if abs(last) <= _TINY or abs(float(target[0])) <= _TINY:
        s[n - 1] = 1.0 if gaussians[start] >= 0 else -1.0
    else:
        s[n - 1] = 1.0 if (last > 0) == (float(target[0]) > 0) else -1.0
    return ws, s


def gaussian_count(n: int) -> int:
    """Standard normals :func:`conditioned_householder` consumes: ``n + (n − 1) + … + 2`` and one."""
    return n * (n + 1) // 2


def _bits(signs: np.ndarray) -> bytes:
    return np.packbits(signs < 0).tobytes()


def pack(ws: list[np.ndarray], s: np.ndarray, r: np.ndarray) -> bytes:
    """The stored form: ``w_0 … w_{n−2}`` as big-endian ``int16`` (``round(2^15·w)``, clipped to the
    ``int16`` range), then the bits of ``s`` and of ``r`` (1: ``−1``; big-endian bit order, zero padding)."""
    flat = np.concatenate(ws) if ws else np.zeros(0)
    fixed = np.clip(np.rint(flat * W_SCALE), -W_SCALE, W_SCALE - 1).astype(">i2")
    return bytes(fixed.tobytes()) + _bits(s) + _bits(r)


def _signs(data: bytes, n: int, name: str) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
    if np.any(bits[n:]):
        raise ValueError(f"the padding bits after the {n} {name} signs are not zero")
    return np.where(bits[:n] == 1, -1.0, 1.0)


def unpack(payload: bytes, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(W, s, r)`` from a stored form of exactly :func:`compact_bytes` bytes: ``W`` the
    ``n(n−1)/2`` coordinates as float64 multiples of ``2^−15``. Every ``int16`` value is a valid
    coordinate (any ``v = (1, w)`` gives a reflection), so only the length and the sign padding
    can be wrong (``ValueError``)."""
    if len(payload) != compact_bytes(n):
        raise ValueError(f"a compact rotation of dimension {n} is {compact_bytes(n)} bytes, got {len(payload)}")
    count = n * (n - 1) // 2
    flat = np.frombuffer(payload, dtype=">i2", count=count).astype(np.float64) / W_SCALE
    sign_bytes = (n + 7) // 8
    s = _signs(payload[2 * count : 2 * count + sign_bytes], n, "column")
    r = _signs(payload[2 * count + sign_bytes :], n, "row")
    return flat, s, r


def expand(flat: np.ndarray, s: np.ndarray, r: np.ndarray, block: int = 32) -> np.ndarray:
    """``R' = diag(r)·H_0 ⋯ H_{n−2}·diag(s)`` in float64, applying the reflections from the last.

    ``block`` consecutive reflections at a time in the compact WY form ``I − V T Vᵀ`` (Schreiber
    and Van Loan, "A storage-efficient WY representation for products of Householder
    transformations", SIAM J. Sci. Stat. Comput. 10, 1989, §2; LAPACK ``dlarft``): two matrix
    products per block. The block ``[k0, k1)`` acts on rows ``k0..`` of ``H_{k1} ⋯ diag(s)``,
    which are non-zero only in columns ``k0..``: about ``4n³/3`` flops in all.
    """
    with _blas_controller().limit(limits=1, user_api="blas"):
        return _expand(flat, s, r, block)


@lru_cache(maxsize=1)
def _blas_controller() -> ThreadpoolController:
    """The process's thread pools, found once: a fresh ``threadpool_limits`` walks every loaded shared
    library each time (3 ms of CPU, 14 ms of wall on a loaded machine, per expansion in a calibration)."""
    return ThreadpoolController()


def _expand(flat: np.ndarray, s: np.ndarray, r: np.ndarray, block: int) -> np.ndarray:
    """:func:`expand`'s work, under one BLAS thread: OpenBLAS's default threads, on a loaded
    shared machine, make these ``(n−k0) × block`` products many times slower, not faster."""
    n = s.shape[0]
    m = np.diag(s)
    offsets = np.concatenate(([0], np.cumsum(np.arange(n - 1, 0, -1))))
    for k0 in range(((n - 2) // block) * block, -1, -block):
        k1 = min(k0 + block, n - 1)
        size = n - k0
        v = np.zeros((size, k1 - k0))
        for j in range(k0, k1):
            v[j - k0, j - k0] = 1.0
            v[j - k0 + 1 :, j - k0] = flat[offsets[j] : offsets[j + 1]]
        tau = 2.0 / np.einsum("ij,ij->j", v, v)
        gram = v.T @ v
        tri = np.zeros((k1 - k0, k1 - k0))
        for j in range(k1 - k0):
            tri[:j, j] = -tau[j] * (tri[:j, :j] @ gram[:j, j])
            tri[j, j] = tau[j]
        sub = m[k0:, k0:]
        sub -= v @ (tri @ (v.T @ sub))
    m *= r[:, None]
    return m


@lru_cache(maxsize=8)
def _layout(n: int) -> np.ndarray:
    """Where the stored coordinates go in the ``(n−1) × n`` matrix ``Vᵀ`` (row ``k``: ``v_k``): above
    the diagonal, row by row — the order of :func:`pack`."""
    return np.triu(np.ones((n - 1, n), dtype=bool), 1)


class Reflections:
    """The rotation ``R' = diag(r)·H_0 ⋯ H_{n−2}·diag(s)`` kept as its reflections, to apply without expanding.

    Blocks of ``block`` consecutive reflections in the compact WY form ``H_{k0} ⋯ H_{k1−1} = I − V T Vᵀ``
    (Schreiber and Van Loan 1989, §2), ``T`` from ``T⁻¹ = ½·diag(VᵀV) + strict_upper(VᵀV)``
    (Puglisi, "Modification of the Householder method based on the compact WY representation",
    SIAM J. Sci. Stat. Comput. 13, 1992; Joffrain et al., "Accumulating Householder transformations,
    revisited", ACM TOMS 32, 2006, §2). Setting up costs ``O(block·n²)``; :meth:`apply` (``R'x``)
    about ``2n²`` flops per vector and :meth:`rows` (rows of ``R'``) about ``2n²`` per row, against
    ``4n³/3`` for :func:`expand`.
    """

    def __init__(self, flat: np.ndarray, s: np.ndarray, r: np.ndarray, block: int = 32) -> None:
        n = s.shape[0]
        vt = np.zeros((n - 1, n))
        vt[_layout(n)] = flat
        diagonal = np.arange(n - 1)
        vt[diagonal, diagonal] = 1.0
        self.s, self.r = s, r
        starts = list(range(0, n - 1, block))
        views = [vt[k0 : k0 + block, k0:] for k0 in starts]
        grams = np.tile(2.0 * np.eye(block), (len(starts), 1, 1))  # the last block may be short: identity padding
        for gram, v in zip(grams, views, strict=True):
            gram[: v.shape[0], : v.shape[0]] = v @ v.T
        inverses = np.triu(grams, 1) + grams * (np.eye(block) / 2.0)
        ts = np.linalg.inv(inverses)  # one batched call (T is upper triangular)
        self.blocks = [(k0, v, t[: v.shape[0], : v.shape[0]]) for k0, v, t in zip(starts, views, ts, strict=True)]
        norms = np.einsum("ij,ij->i", vt, vt)
        residual = np.abs(inverses @ ts - np.eye(block)).max()
        #: Whether the reflections are the well-conditioned ones the encoder makes (module docstring of
        #: :mod:`sketchauth.sketches.angular`: the error bounds of the fast decoder assume it).
        self.honest = bool(norms.max() <= HONEST_NORM2 and np.abs(ts).max() <= HONEST_T and residual <= 2.0**-40)

    def apply(self, x: np.ndarray) -> np.ndarray:
        """``R'x`` in float64 (the blocks from the last, on the vector ``s∘x``)."""
        y = self.s * x
        for k0, v, t in reversed(self.blocks):
            tail = y[k0:]
            tail -= v.T @ (t @ (v @ tail))
        return cast("np.ndarray", self.r * y)

    def rows(self, index: np.ndarray) -> np.ndarray:
        """Rows ``index`` of ``R'`` in float64: ``r_i·e_iᵀ·H_0 ⋯ H_{n−2}·diag(s)``, the blocks from the first."""
        n = self.s.shape[0]
        out = np.zeros((index.shape[0], n))
        out[np.arange(index.shape[0]), index] = self.r[index]
        for k0, v, t in self.blocks:
            tail = out[:, k0:]
            tail -= ((tail @ v.T) @ t) @ v
        return cast("np.ndarray", out * self.s)

    def fixed_rows(self, index: np.ndarray, scale: float) -> np.ndarray | None:
        """``clip(rint(scale·R'[index]), ±scale)`` — the rows of :func:`expand`'s fixed-point matrix — or
        ``None`` if an entry lies within :data:`ROUNDING_GUARD` of a half-integer (then two float64
        computations of it, this one and :func:`expand`'s, might round it differently)."""
        scaled = scale * self.rows(index)
        if np.any(np.abs(scaled - np.floor(scaled) - 0.5) <= ROUNDING_GUARD):
            return None
        return np.clip(np.rint(scaled), -scale, scale)
