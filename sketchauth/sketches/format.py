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

import functools
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

from sketchauth._lazy import LazyModule
from sketchauth.errors import SketchFormatError

# Loaded on first use (sketchauth._lazy): a helper is parsed or written long after import.
hashlib = LazyModule("hashlib")
json = LazyModule("json")

__all__ = [
    "FORMAT_VERSION",
    "MAGIC",
    "MAX_HELPER_BYTES",
    "HelperRecord",
    "helper_prefix",
    "pack_helper",
    "pack_prefixed",
    "pack_uints",
    "parse_helper",
    "prefix_parses_to",
    "prefixed_payload",
    "record_head",
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
        text: str = json.dumps(params, sort_keys=True, separators=(",", ":"), allow_nan=False)
        return text.encode()
    except (TypeError, ValueError, RecursionError) as exc:
        raise SketchFormatError(f"parameters are not canonically encodable: {exc}") from None


def _digest(data: bytes | memoryview) -> bytes:
    digest: bytes = _blake2b()(data, digest_size=_DIGEST_BYTES).digest()
    return digest


@functools.cache
def _blake2b() -> Any:
    """``hashlib.blake2b``, imported on first use and then held (a read through the lazy proxy
    costs about a microsecond, as much as the digest of a small record)."""
    return hashlib.blake2b


def record_head(prefix: bytes, payload_len: int) -> tuple[bytes, Any]:
    """The bytes before the payload of every record with this :func:`helper_prefix` and payload
    length, and the digest state after them.

    For a scheme whose payloads all have one length: a record is ``head + payload + digest``
    where ``digest`` is a copy of the state updated with the payload — the same bytes as
    :func:`pack_prefixed`, without hashing the header again for each record.
    """
    head = prefix + _PAYLOAD_LEN.pack(payload_len)
    return head, _blake2b()(head, digest_size=_DIGEST_BYTES)


def helper_prefix(scheme_id: int, params: dict[str, Any]) -> bytes:
    """The bytes every helper record of one scheme and parameter set starts with.

    Magic, version, scheme id, parameter length and the canonical parameters: everything before
    the payload length. A sketch object computes it once and reuses it for every record it writes
    (:func:`pack_prefixed`) and reads (:func:`prefixed_payload`).
    """
    p = canonical_params(params)
    if len(p) > 0xFFFF:
        raise SketchFormatError(f"parameters too long to encode ({len(p)} bytes)")
    return _HEAD.pack(MAGIC, FORMAT_VERSION, scheme_id, len(p)) + p


def pack_prefixed(prefix: bytes, payload: bytes) -> bytes:
    """Serialise one helper record from its :func:`helper_prefix` and payload."""
    body = b"".join((prefix, _PAYLOAD_LEN.pack(len(payload)), payload))
    return body + _digest(body)


def pack_helper(scheme_id: int, params: dict[str, Any], payload: bytes) -> bytes:
    """Serialise one helper record."""
    return pack_prefixed(helper_prefix(scheme_id, params), payload)


def prefixed_payload(prefix: bytes, data: Any, max_bytes: int = MAX_HELPER_BYTES) -> bytes | None:
    """The payload of ``data`` if it is a sound record that starts with ``prefix``, else ``None``.

    The fast path of a sketch reading its own records: ``prefix`` is its :func:`helper_prefix`
    (whose parameters the caller has checked to parse back to its own), so matching it byte for
    byte stands for the magic, version, scheme and parameter checks of :func:`parse_helper`; the
    size bound, the announced lengths and the digest are checked here exactly as there. ``None``
    means "not decided here" — another type than ``bytes``, another prefix, or any defect — and
    the caller then runs :func:`parse_helper`, which gives the one error message for each defect.
    """
    if type(data) is not bytes:
        return None
    size = len(data)
    start = len(prefix) + _PAYLOAD_LEN.size
    if size > max_bytes or size < start + _DIGEST_BYTES or not data.startswith(prefix):
        return None
    end = start + _PAYLOAD_LEN.unpack_from(data, len(prefix))[0]
    if end + _DIGEST_BYTES != size:
        return None
    view = memoryview(data)
    if _digest(view[:end]) != data[end:]:
        return None
    return data[start:end]


def prefix_parses_to(prefix: bytes, params: dict[str, Any]) -> bool:
    """Whether the parameters inside ``prefix`` parse (strictly) back to exactly ``params``.

    Only then may :func:`prefixed_payload` stand in for :func:`parse_helper` followed by a
    comparison of the parsed parameters with ``params`` (a tuple, say, would come back a list).
    """
    try:
        return _parse_params(prefix[_HEAD.size :]) == params
    except SketchFormatError:
        return False


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
