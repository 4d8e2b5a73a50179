"""The versioned, self-describing binary format of helper data (every scheme uses it).

Layout (all integers big-endian)::

    offset  size  field
    0       4     magic  b"SKAH"
    4       1     format version (1)
    5       2     scheme id (see ``sketchauth.sketches.base.SCHEME_IDS``)
    7       2     P = length of the parameters
    9       P     parameters: canonical JSON object (sorted keys, no spaces, UTF-8, no NaN)
    9+P     4     L = length of the payload
    13+P    L     payload: scheme-defined, parsed strictly by the scheme
    13+P+L  16    BLAKE2b-128 digest of every preceding byte

The digest is not a MAC (helper data is public and anyone can recompute it): it turns accidental
corruption and naive edits into a clean :class:`SketchFormatError` instead of a wrong decode.
Helper data is untrusted input: every length is checked against the bytes actually present and
against ``max_bytes`` before anything is allocated.
"""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth.errors import SketchFormatError

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_HELPER_BYTES",
    "HelperRecord",
    "pack_helper",
    "pack_uints",
    "parse_helper",
    "uint_width",
    "unpack_uints",
]

MAGIC = b"SKAH"
FORMAT_VERSION = 1
#: Default upper bound on the size of one helper record (a complete vault over F_65521 with
#: 16-bit values is ~128 KiB; weighted vaults over larger fields stay well below this).
MAX_HELPER_BYTES = 16 * 1024 * 1024
_HEAD = struct.Struct(">4sBHH")
_PAYLOAD_LEN = struct.Struct(">I")
_DIGEST_BYTES = 16


@dataclass(frozen=True, slots=True)
class HelperRecord:
    """A parsed helper record: which scheme, with which parameters, and its payload."""

    scheme_id: int
    params: dict[str, Any]
    payload: bytes


def canonical_params(params: dict[str, Any]) -> bytes:
    """Canonical JSON encoding of a parameters mapping (the same mapping gives the same bytes)."""
    try:
        return json.dumps(params, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise SketchFormatError(f"parameters are not canonically encodable: {exc}") from None


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=_DIGEST_BYTES).digest()


def pack_helper(scheme_id: int, params: dict[str, Any], payload: bytes) -> bytes:
    """Serialise one helper record."""
    p = canonical_params(params)
    if len(p) > 0xFFFF:
        raise SketchFormatError(f"parameters too long to encode ({len(p)} bytes)")
    body = _HEAD.pack(MAGIC, FORMAT_VERSION, scheme_id, len(p)) + p
    body += _PAYLOAD_LEN.pack(len(payload)) + payload
    return body + _digest(body)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-finite number {name} in parameters")


def _parse_params(raw: bytes) -> dict[str, Any]:
    try:
        params = json.loads(raw.decode("utf-8", errors="strict"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError) as exc:
        raise SketchFormatError(f"helper parameters are not valid JSON: {exc}") from None
    except RecursionError:
        # 64 KiB of "[[[[..." nests deeper than the interpreter allows.
        raise SketchFormatError("helper parameters are nested too deeply") from None
    if not isinstance(params, dict):
        raise SketchFormatError("helper parameters must be a JSON object")
    if canonical_params(params) != raw:
        raise SketchFormatError("helper parameters are not canonically encoded")
    return params


def parse_helper(data: bytes, *, max_bytes: int = MAX_HELPER_BYTES) -> HelperRecord:
    """Parse and check one helper record; raise :class:`SketchFormatError` on any defect."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise SketchFormatError(f"helper data must be bytes, not {type(data).__name__}")
    size = data.nbytes if isinstance(data, memoryview) else len(data)
    if size > max_bytes:  # checked before copying anything
        raise SketchFormatError(f"helper data is {size} bytes, more than the {max_bytes} allowed")
    data = bytes(data)
    minimum = _HEAD.size + _PAYLOAD_LEN.size + _DIGEST_BYTES
    if len(data) < minimum:
        raise SketchFormatError(f"helper data truncated: {len(data)} bytes, header needs {minimum}")
    magic, version, scheme_id, plen = _HEAD.unpack_from(data, 0)
    if magic != MAGIC:
        raise SketchFormatError("not sketchauth helper data (bad magic)")
    if version != FORMAT_VERSION:
        raise SketchFormatError(f"unsupported helper format version {version}")
    pos = _HEAD.size + plen
    if pos + _PAYLOAD_LEN.size + _DIGEST_BYTES > len(data):
        raise SketchFormatError("helper data truncated inside the parameters")
    (paylen,) = _PAYLOAD_LEN.unpack_from(data, pos)
    end = pos + _PAYLOAD_LEN.size + paylen
    if end + _DIGEST_BYTES != len(data):
        raise SketchFormatError(
            f"helper data length mismatch: header announces {end + _DIGEST_BYTES} bytes, got {len(data)}"
        )
    if _digest(data[:end]) != data[end:]:
        raise SketchFormatError("helper data digest mismatch (corrupted or tampered)")
    params = _parse_params(data[_HEAD.size : pos])
    return HelperRecord(scheme_id, params, data[pos + _PAYLOAD_LEN.size : end])


def uint_width(max_value: int) -> int:
    """Bytes per symbol (1, 2, 4 or 8) needed to store integers in ``[0, max_value]``."""
    for width in (1, 2, 4, 8):
        if max_value < 1 << (8 * width):
            return width
    raise SketchFormatError(f"value {max_value} does not fit in 64 bits")


def pack_uints(values: Any, width: int) -> bytes:
    """Big-endian fixed-width encoding of non-negative integers (a numpy array or sequence)."""

    return np.asarray(values, dtype=np.uint64).astype(f">u{width}").tobytes()


def unpack_uints(data: bytes, width: int, count: int | None = None) -> Any:
    """Inverse of :func:`pack_uints`; checks the byte length strictly. Returns a uint64 array."""

    if len(data) % width or (count is not None and len(data) != count * width):
        expected = "a multiple of" if count is None else "exactly"
        size = width if count is None else count * width
        raise SketchFormatError(f"payload is {len(data)} bytes, expected {expected} {size}")
    return np.frombuffer(data, dtype=f">u{width}").astype(np.uint64)
