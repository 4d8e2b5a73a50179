"""The format-preserving mixing function ``f`` and the extractor that keys it (Fang's thesis, ch. 7).

``f(S, K, R_f)`` adds a keyed pad to a sketch's symbols (:meth:`SecureSketch.symbols`): modulo
each symbol's modulus (``SymbolSpace("mod")``) or by XOR on each word (``SymbolSpace("xor")``).
Every key, right or wrong, inverts ``Q`` to a *valid* sketch of the same scheme, so a wrong key
is never recognisable by a malformed result. The pad is SHAKE-256 of
``("sketchauth/mix-pad/v1", sketch index, R_f, K)``, each symbol drawn exactly uniformly by
rejection sampling of 64-bit words. :func:`toeplitz_extract` turns a second biometric's canonical
bytes into a key (a universal hash, hence a strong extractor by the leftover hash lemma).
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.sketches.base import SecureSketch, SymbolSpace

__all__ = [
    "NONCE_BYTES",
    "derive_pad",
    "extractor_seed_bytes",
    "mix_helper",
    "mix_symbols",
    "toeplitz_extract",
    "unmix_helper",
    "unmix_symbols",
]

#: Length of the public nonce ``R_f`` stored beside each mixed sketch.
NONCE_BYTES = 16
_PAD_TAG = b"sketchauth/mix-pad/v1\x00"
_U32 = struct.Struct(">I")


def _words(xof: Any, start: int, count: int) -> np.ndarray:
    data = xof.digest(8 * (start + count))[8 * start :]
    return np.frombuffer(data, dtype=">u8").astype(np.uint64)


def derive_pad(key: bytes, nonce: bytes, space: SymbolSpace, count: int, *, domain: int = 0) -> np.ndarray:
    """The pad of ``count`` group elements for ``key`` and ``nonce``, exactly uniform per symbol.

    SHAKE-256 over ``tag ‖ u32 domain ‖ u32 |nonce| ‖ nonce ‖ key`` is read as 64-bit words.
    ``xor``: each word masked to ``bits`` (exact, since ``2^bits`` divides ``2^64``). ``mod m``:
    a word is accepted iff it is below ``2^64 − (2^64 mod m)`` and reduced mod ``m``; rejected
    symbols draw the next words of the stream (probability ``< m/2^64`` each).
    """
    xof = hashlib.shake_256(_PAD_TAG + _U32.pack(domain) + _U32.pack(len(nonce)) + nonce + key)
    words = _words(xof, 0, count)
    if space.kind == "xor":
        if space.bits >= 64:
            return words
        return words & np.uint64((1 << space.bits) - 1)
    moduli = np.asarray(space.moduli, dtype=np.uint64)
    if moduli.shape != (count,) or np.any(moduli == 0):
        raise ParameterError("moduli must be positive, one per symbol")
    excess = (np.uint64(0) - moduli) % moduli  # 2^64 mod m, computed in wrapping uint64
    pad = np.zeros(count, dtype=np.uint64)
    pending = np.arange(count)
    offset = count
    while pending.size:
        m, e = moduli[pending], excess[pending]
        ok = (e == 0) | (words < np.uint64(0) - e)
        pad[pending[ok]] = words[ok] % m[ok]
        pending = pending[~ok]
        words = _words(xof, offset, pending.size)
        offset += pending.size
    return pad


def mix_symbols(symbols: np.ndarray, pad: np.ndarray, space: SymbolSpace) -> np.ndarray:
    """``symbols + pad`` in the group (mod each modulus without overflow, or XOR)."""
    s = np.asarray(symbols, dtype=np.uint64)
    p = np.asarray(pad, dtype=np.uint64)
    if space.kind == "xor":
        return s ^ p
    m = np.asarray(space.moduli, dtype=np.uint64)
    room = m - p  # s + p ≥ m  ⇔  s ≥ m − p
    return np.where(s >= room, s - room, s + p)


def unmix_symbols(symbols: np.ndarray, pad: np.ndarray, space: SymbolSpace) -> np.ndarray:
    """``symbols − pad`` in the group: the inverse of :func:`mix_symbols`."""
    s = np.asarray(symbols, dtype=np.uint64)
    p = np.asarray(pad, dtype=np.uint64)
    if space.kind == "xor":
        return s ^ p
    m = np.asarray(space.moduli, dtype=np.uint64)
    return np.where(s >= p, s - p, s + (m - p))


def mix_helper(sketch: SecureSketch[Any, Any], helper: bytes, key: bytes, nonce: bytes, *, domain: int = 0) -> bytes:
    """``Q``: the helper of the same scheme whose symbols carry the keyed pad."""
    symbols, space = sketch.symbols(sketch.payload(helper))
    pad = derive_pad(key, nonce, space, symbols.shape[0], domain=domain)
    return sketch.with_symbols(helper, mix_symbols(symbols, pad, space))


def unmix_helper(sketch: SecureSketch[Any, Any], helper: bytes, key: bytes, nonce: bytes, *, domain: int = 0) -> bytes:
    """The inverse of :func:`mix_helper`; any key yields a valid helper of the same scheme."""
    symbols, space = sketch.symbols(sketch.payload(helper))
    pad = derive_pad(key, nonce, space, symbols.shape[0], domain=domain)
    return sketch.with_symbols(helper, unmix_symbols(symbols, pad, space))


def toeplitz_extract(seed: bytes, data: bytes, out_bits: int) -> bytes:
    """``T·x`` over GF(2) for the Toeplitz matrix ``T[i, j] = seed_bit[i + n − 1 − j]``.

    ``x`` is the ``n = 8·len(data)`` bits of ``data``; ``seed`` must carry ``n + out_bits − 1``
    bits (rounded up to bytes). Toeplitz hashing is a universal family (collision probability
    exactly ``2^−out_bits``), hence a strong extractor by the leftover hash lemma.
    """
    x = np.unpackbits(np.frombuffer(data, dtype=np.uint8)).astype(bool)
    n = x.size
    bits = np.unpackbits(np.frombuffer(seed, dtype=np.uint8)).astype(bool)
    if bits.size < n + out_bits - 1:
        raise ParameterError(f"seed has {bits.size} bits, needs {n + out_bits - 1}")
    # y_i = XOR_j seed[i + n − 1 − j]·x[j] = parity(seed[i : i + n] · reversed(x)): with the seed
    # and reversed x as integers (bit k = k-th bit), row i is (seed >> i) & x_rev. Never builds
    # the out_bits × n matrix (4096 × 2^19 bits = 2 GiB for a crafted 64 KiB extractor seed).
    seed_int = int.from_bytes(np.packbits(bits[: n + out_bits - 1], bitorder="little").tobytes(), "little")
    x_rev = int.from_bytes(np.packbits(x[::-1], bitorder="little").tobytes(), "little")
    y = np.array([((seed_int >> i) & x_rev).bit_count() & 1 for i in range(out_bits)], dtype=bool)
    return np.packbits(y).tobytes()


def extractor_seed_bytes(input_bytes: int, out_bits: int) -> int:
    """Bytes of Toeplitz seed for ``input_bytes`` of input and ``out_bits`` of output (``n + out_bits − 1`` bits)."""
    return input_bytes + (out_bits - 1 + 7) // 8
