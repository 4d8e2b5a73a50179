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
  float64 (``O(n³)``, once per helper).

Convention (LAPACK's ``dgeqrf``/``dlarfg`` one, except that a reflection is never the identity):
``H_k`` acts on coordinates ``k..n−1`` as ``I − 2vvᵀ/‖v‖²`` with ``v = (1, w_k)``,
``w_k ∈ R^(n−k−1)``; for the unit vector ``x`` it is built from, ``β = −sign(x_0)`` (``+1`` at
``x_0 = 0``) and ``w_k = x_{1:}/(x_0 − β)``, so ``H_k x = β e_0`` and ``|w_k,i| ≤ 1``.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_limits

#: Fixed-point scale of a stored Householder coordinate (``|w| ≤ 1``; ``int16``).
W_SCALE = 1 << 15
#: Below this norm a remaining target is zero: the constraint leaves the column free.
_TINY = 1e-12


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
    with threadpool_limits(limits=1, user_api="blas"):
        return _expand(flat, s, r, block)


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
