"""CodeOffsetSketch.decode takes the corrected codeword from the Reed–Solomon decoder itself.

reedsolo's ``RSCodec.decode`` returns ``(message, codeword, errata)``; the codeword is ``C(x)``, so
re-encoding the message (what decode used to do, 1.2–1.6× the decoder's own cost) is never
needed. These tests go through the public ``decode`` and check the result against the secret
and against the codeword the encoder would have produced.
"""

from __future__ import annotations

import random

import pytest
import reedsolo
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError
from sketchauth.sketches.code_offset import CodeOffsetSketch


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 80), st.integers(1, 8), st.integers(0, 2**32), st.data())
def test_decoded_codeword_is_the_encoders_codeword(n: int, t: int, seed: int, data: st.DataObject) -> None:
    if 2 * t >= n:
        return
    sketch = CodeOffsetSketch(n=n, t=t)
    rng = random.Random(seed)
    secret = bytes(rng.randrange(256) for _ in range(n))
    message = bytes(rng.randrange(256) for _ in range(sketch.k))
    helper = sketch.encode_with(secret, message)
    errors = data.draw(st.integers(0, t))
    noisy = bytearray(secret)
    for i in rng.sample(range(n), errors):
        noisy[i] ^= rng.randrange(1, 256)
    assert sketch.decode(helper, bytes(noisy)) == secret
    # the codeword the decoder hands back is exactly the encoder's C(x)
    codec = reedsolo.RSCodec(2 * t, nsize=255)
    payload = sketch.payload(helper)
    _, codeword, _ = codec.decode(bytearray(a ^ b for a, b in zip(noisy, payload, strict=False)))
    assert bytes(codeword) == bytes(codec.encode(message))


def test_decode_never_re_encodes(monkeypatch: pytest.MonkeyPatch) -> None:
    sketch = CodeOffsetSketch(n=32, t=4)
    secret = bytes(range(32))
    helper = sketch.encode_with(secret, bytes(range(100, 124)))  # fixed message: deterministic

    def forbidden(self: CodeOffsetSketch, message: bytes) -> bytes:
        raise AssertionError("decode re-encoded the message")

    monkeypatch.setattr(CodeOffsetSketch, "_codeword", forbidden)
    noisy = bytes([99, 98, 97]) + secret[3:]
    assert sketch.decode(helper, noisy) == secret
    with pytest.raises(DecodeError):
        sketch.decode(helper, bytes(32 - i for i in range(32)))
