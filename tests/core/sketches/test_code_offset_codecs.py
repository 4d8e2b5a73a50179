"""creedsolo (compiled) and reedsolo (pure Python) agree byte for byte, so the code-offset sketch
may use either: the same codewords, the same corrections, the same failures, and helpers made by
one decode with the other. ``auto`` takes creedsolo where it is installed."""

from __future__ import annotations

import importlib.util
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.sketches.code_offset import CodeOffsetSketch, reed_solomon

HAS_CREEDSOLO = importlib.util.find_spec("creedsolo") is not None
needs_both = pytest.mark.skipif(not HAS_CREEDSOLO, reason="creedsolo is not installed (extra 'fast')")

#: (n, t) with 2t < n ≤ 255, then the error count: up to t (always corrected) and beyond (either
#: detected by both codecs or miscorrected by both to the same codeword).
PROBLEMS = st.integers(3, 255).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(1, (n - 1) // 2)).flatmap(
        lambda nt: st.tuples(st.just(nt[0]), st.just(nt[1]), st.integers(0, min(nt[0], 2 * nt[1] + 2)))
    )
)


def _outcome(name: str, t: int, received: bytes) -> tuple[str, bytes, bytes, bytes]:
    module = reed_solomon(name)
    try:
        message, codeword, errata = module.RSCodec(2 * t, nsize=255).decode(bytearray(received))
    except module.ReedSolomonError:
        return ("error", b"", b"", b"")
    return ("ok", bytes(message), bytes(codeword), bytes(errata))


@needs_both
@settings(max_examples=150, deadline=None)
@given(PROBLEMS, st.integers(0, 2**64))
def test_codecs_encode_and_decode_identically(problem: tuple[int, int, int], seed: int) -> None:
    n, t, errors = problem
    rng = random.Random(seed)
    fast = reed_solomon("creedsolo").RSCodec(2 * t, nsize=255)
    slow = reed_solomon("reedsolo").RSCodec(2 * t, nsize=255)
    message = bytearray(rng.randrange(256) for _ in range(n - 2 * t))
    codeword = bytes(fast.encode(bytearray(message)))
    assert codeword == bytes(slow.encode(bytearray(message)))
    received = bytearray(codeword)
    for i in rng.sample(range(n), errors):
        received[i] ^= rng.randrange(1, 256)
    got = _outcome("creedsolo", t, bytes(received))
    assert got == _outcome("reedsolo", t, bytes(received))
    if errors <= t:
        assert got[0] == "ok" and got[2] == codeword


@needs_both
@settings(max_examples=60, deadline=None)
@given(st.integers(3, 255), st.integers(0, 2**64), st.data())
def test_helpers_cross_decode_between_codecs(n: int, seed: int, data: st.DataObject) -> None:
    t = data.draw(st.integers(1, (n - 1) // 2))
    rng = random.Random(seed)
    fast, slow = CodeOffsetSketch(n, t, codec="creedsolo"), CodeOffsetSketch(n, t, codec="reedsolo")
    secret = bytes(rng.randrange(256) for _ in range(n))
    randomness = bytes(rng.randrange(256) for _ in range(fast.k))
    helper = fast.encode_with(secret, randomness)
    assert helper == slow.encode_with(secret, randomness)
    noisy = bytearray(secret)
    for i in rng.sample(range(n), data.draw(st.integers(0, t))):
        noisy[i] ^= rng.randrange(1, 256)
    assert fast.decode(helper, bytes(noisy)) == slow.decode(helper, bytes(noisy)) == secret


@needs_both
def test_both_codecs_refuse_what_they_cannot_correct() -> None:
    secret = bytes(range(32))
    far = bytes(255 - b for b in secret)
    for codec in ("creedsolo", "reedsolo"):
        sketch = CodeOffsetSketch(32, 2, codec=codec)
        with pytest.raises(DecodeError):
            sketch.decode(sketch.encode(secret), far)


def test_auto_takes_the_fastest_installed_codec() -> None:
    assert CodeOffsetSketch(16, 2).codec == ("creedsolo" if HAS_CREEDSOLO else "reedsolo")
    assert CodeOffsetSketch(16, 2, codec="reedsolo").codec == "reedsolo"
    assert CodeOffsetSketch(16, 2).params() == {"n": 16, "t": 2}  # not a parameter of the scheme


def test_unknown_or_missing_codec_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ParameterError, match="codec must be one of"):
        CodeOffsetSketch(16, 2, codec="zfec")
    import builtins

    real_import = builtins.__import__

    def no_creedsolo(name: str, *args: object, **kwargs: object) -> object:
        if name == "creedsolo":
            raise ImportError(name)
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.delitem(__import__("sys").modules, "creedsolo", raising=False)
    monkeypatch.setattr(builtins, "__import__", no_creedsolo)
    with pytest.raises(ParameterError, match=r"sketchauth\[fast\]"):
        CodeOffsetSketch(16, 2, codec="creedsolo")
    assert CodeOffsetSketch(16, 2).codec == "reedsolo"  # the fallback


@pytest.mark.parametrize("codec", ["reedsolo", "creedsolo"])
def test_a_sketch_pickles_with_its_codec(codec: str) -> None:
    """Worker processes receive sketches by pickling; the compiled codec itself cannot be pickled."""
    import pickle

    if codec == "creedsolo":
        pytest.importorskip("creedsolo")
    sketch = CodeOffsetSketch(16, 2, codec=codec)
    copy = pickle.loads(pickle.dumps(sketch))
    assert (copy.n, copy.t, copy.codec) == (16, 2, codec)
    secret = bytes(range(16))
    helper = sketch.encode(secret)
    assert copy.decode(helper, bytes([99, *secret[1:15], 0])) == secret
