"""The payload of a mixed helper, and the randomness of one encoding.

Per component in order: ``u32 length ‖ inner helper`` for a fuzzy secret (the mixed ``Q`` or the
clear sketch: itself a complete helper of the component's scheme), then a 16-byte nonce if that
sketch is mixed and ``u32 length ‖ seed`` if its key mixes something; a 16-byte argon2 salt for an
exact key. Parsing is strict (:class:`SketchFormatError` on any defect): the payload is untrusted.
"""

from __future__ import annotations

import struct
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from sketchauth.errors import ParameterError, SketchFormatError
from sketchauth.mixing.keys import SALT_BYTES, SecretKey
from sketchauth.mixing.pads import NONCE_BYTES

__all__ = ["MixRandomness", "pack_payload", "unpack_payload"]

_U32 = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class MixRandomness:
    """Everything random in one encoding: each sketch's randomness and the public values."""

    inner: tuple[Any, ...]
    nonces: tuple[bytes | None, ...]
    salts: tuple[bytes | None, ...]
    seeds: tuple[bytes | None, ...]

    def key_material(self, index: int) -> bytes:
        """Component ``index``'s public key material: its argon2 salt or its extractor seed."""
        material = self.salts[index] if self.salts[index] is not None else self.seeds[index]
        if material is None:
            raise ParameterError(f"component {index} has no salt or extractor seed: its key mixes nothing")
        return material


class _Reader:
    """Strict sequential reader of a mixed payload (``SketchFormatError`` on any defect)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise SketchFormatError("mixed payload truncated")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def prefixed(self) -> bytes:
        (n,) = _U32.unpack(self.take(4))
        return self.take(n)

    def done(self) -> None:
        if self.pos != len(self.data):
            raise SketchFormatError("trailing bytes after the mixed payload")


def pack_payload(components: Sequence[SecretKey], stored: Sequence[bytes | None], r: MixRandomness) -> bytes:
    """The payload of the stored sketches and public values, in component order."""
    out = []
    for index, c in enumerate(components):
        if c.sketch is None:
            out.append(r.key_material(index))
            continue
        helper = stored[index]
        if helper is None:
            raise ParameterError(f"component {index} has no stored sketch")
        out.append(_U32.pack(len(helper)) + helper)
        nonce, seed = r.nonces[index], r.seeds[index]
        if nonce is not None:
            out.append(nonce)
        if seed is not None:
            out.append(_U32.pack(len(seed)) + seed)
    return b"".join(out)


def unpack_payload(
    components: Sequence[SecretKey], mixed: Collection[int], key_owners: Collection[int], payload: bytes
) -> tuple[list[bytes | None], MixRandomness]:
    """Parse ``payload`` strictly: each stored sketch must be a valid helper of its component's scheme.

    ``mixed``: the indices of the sketches some key mixes (they carry a nonce); ``key_owners``:
    the indices of the secrets whose key mixes something (a fuzzy one carries its seed). The
    sketches' own randomness is not stored: ``inner`` comes back as ``None`` each.
    """
    reader = _Reader(payload)
    stored: list[bytes | None] = []
    nonces: list[bytes | None] = []
    salts: list[bytes | None] = []
    seeds: list[bytes | None] = []
    for index, c in enumerate(components):
        if c.sketch is None:
            salt = reader.take(SALT_BYTES)
            c.check_key_material(salt)
            stored.append(None)
            nonces.append(None)
            salts.append(salt)
            seeds.append(None)
            continue
        helper = reader.prefixed()
        c.sketch.payload(helper)  # strict: same scheme, same parameters, valid payload
        stored.append(helper)
        nonces.append(reader.take(NONCE_BYTES) if index in mixed else None)
        salts.append(None)
        if index in key_owners:
            seed = reader.prefixed()
            c.check_key_material(seed)
            seeds.append(seed)
        else:
            seeds.append(None)
    reader.done()
    return stored, MixRandomness(tuple([None] * len(stored)), tuple(nonces), tuple(salts), tuple(seeds))
