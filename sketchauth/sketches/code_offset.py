"""Code-offset sketch (fuzzy commitment) for the Hamming metric over bytes (Dodis–Ostrovsky–Reyzin–Smith §5).

The secret ``w`` is a string of ``n`` bytes; ``C`` is the ``[n, k = n − 2t]`` Reed–Solomon code
over GF(2^8) (primitive polynomial 0x11d, shortened from length 255), which corrects ``t`` byte
errors. The codec is ``creedsolo`` where it is installed (compiled; the ``fast`` extra, shipped in
reedsolo 2.x wheels), else the pure-Python ``reedsolo``: the same maintainer's two implementations
of one algorithm, which give byte-identical codewords and corrections (tested), so a helper made
with one decodes with the other. ``codec="reedsolo"`` or ``"creedsolo"`` asks for one explicitly.

Enc picks a uniformly random message ``x ∈ GF(2^8)^k`` with
:mod:`secrets` and outputs ``S = w ⊕ C(x)``. Dec(``w'``): decode ``w' ⊕ S = C(x) ⊕ (w ⊕ w')`` to
``C(x)`` and return ``S ⊕ C(x)``.

Accounting: ``S`` takes ``256^n`` values and the recoverable randomness ``x`` has ``8k`` bits of
min-entropy, so the loss is at most ``8(n − k) = 16t`` bits.

Secrets and samples are ``n`` bytes: ``bytes``, ``bytearray``, ``memoryview``, or any ordered
collection of integers in ``[0, 255]`` (a list, tuple, numpy array, generator read once);
a ``str`` or a set (no order) is refused with a :class:`SampleError` saying what to pass.

Closeness is the number of differing *bytes*. Up to ``t`` errors decode always succeeds. Beyond
``t`` the decoder usually detects the failure (``DecodeError``) but, like every bounded-distance
decoder, may land on another codeword and return a different secret; the caller's hash check
rejects it.

Example::

    >>> sk = CodeOffsetSketch(n=16, t=2)
    >>> w = bytes(range(16))
    >>> noisy = bytes([99]) + w[1:15] + bytes([0])
    >>> sk.decode(sk.encode(w), noisy) == w
    True
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Iterable, Mapping, Sized
from types import ModuleType
from typing import Any, cast

import numpy as np

from sketchauth._lazy import LazyModule
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches.base import EntropyReport, SchemeDescriptor, SecureSketch, SymbolSpace
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int
from sketchauth.sketches.samples import as_integers
from sketchauth.sketches.types import ByteString

# secrets loads hmac, hashlib and OpenSSL: on first use (sketchauth._lazy).
_secrets = LazyModule("secrets")

__all__ = ["CODECS", "CodeOffsetSketch", "reed_solomon"]

#: Reed–Solomon implementations, fastest first: compiled creedsolo, pure-Python reedsolo.
CODECS = ("creedsolo", "reedsolo")

#: ``randomness_space`` enumerates at most this many messages (exact evaluation only).
MAX_ENUMERATED_MESSAGES = 1 << 16


def _as_bytes(value: Any, n: int, name: str) -> bytes:
    """``n`` bytes from bytes-likes or any ordered collection of integers in ``[0, 255]`` (read once)."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        data = bytes(value)
    elif isinstance(value, str):
        raise SampleError(
            f"{name} must be bytes or integers in [0, 255], not a str: encode text first, e.g. text.encode()"
        )
    else:
        if isinstance(value, Sized) and not isinstance(value, np.ndarray) and len(value) != n:
            raise SampleError(f"{name} must be {n} bytes long, got {len(value)}")
        values = as_integers(value, name, low=0, high=256, max_size=n, ordered=True)
        data = values.astype(np.uint8).tobytes()
    if len(data) != n:
        raise SampleError(f"{name} must be {n} bytes long, got {len(data)}")
    return data


def reed_solomon(codec: str = "auto") -> ModuleType:
    """The Reed–Solomon module a sketch uses: the first of :data:`CODECS` installed, or the one named.

    >>> reed_solomon("reedsolo").__name__
    'reedsolo'
    """
    if codec not in ("auto", *CODECS):
        raise ParameterError(f"codec must be one of auto, {', '.join(CODECS)}, got {codec!r}")
    for name in CODECS if codec == "auto" else (codec,):
        try:
            return importlib.import_module(name)  # first use only: later calls are a dictionary lookup
        except ImportError:
            if codec != "auto":
                raise ParameterError(
                    f"codec={codec!r} is not installed: pip install 'sketchauth[fast]', or use codec='auto'"
                ) from None
    raise ParameterError("no Reed-Solomon codec is installed: pip install reedsolo")


def _xor(a: bytes, b: bytes) -> bytes:
    return (np.frombuffer(a, dtype=np.uint8) ^ np.frombuffer(b, dtype=np.uint8)).tobytes()


#: Reed–Solomon codewords over GF(2^8) have at most 2^8 − 1 symbols (bytes).
MAX_N = 255
#: At least one message symbol beside ``2t ≥ 2`` parity symbols.
MIN_N = 3

#: The parameters and their limits (published as they are by the service).
PARAMETERS = ParameterSpec.of(
    Parameter("n", "int", "bytes per sample", low=MIN_N, high=MAX_N),
    Parameter("t", "int", "byte errors corrected (2t < n)", low=1, high=(MAX_N - 1) // 2),
)


def _default_sweep(params: Mapping[str, Any]) -> list[int]:
    """Byte errors corrected, from 10% to all of the ``⌊(n − 1)/2⌋`` the code can correct."""
    top = (int(params.get("n", 8)) - 1) // 2
    return sorted({max(1, round(top * f)) for f in (0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0)})


def _small_instance(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """RS[3,1]: 256 messages per secret; 32 secrets differing in the first two bytes keep the
    enumeration at 8192 encodings."""
    return {"n": 3, "t": 1}, [bytes([a, b, 0]) for a in range(4) for b in range(8)]


def _rebuild(n: int, t: int, codec: str) -> CodeOffsetSketch:
    """The sketch a pickled :class:`CodeOffsetSketch` stands for, with the same codec."""
    return CodeOffsetSketch(n, t, codec=codec)


class CodeOffsetSketch(SecureSketch[ByteString, ByteString]):
    """Code-offset sketch of ``n``-byte strings correcting ``t`` byte errors (``n ≤ 255``)."""

    descriptor = SchemeDescriptor(
        name="code-offset",
        sample_kind="bytes",
        summary="code-offset sketch with Reed-Solomon over GF(2^8) (Dodis-Ostrovsky-Reyzin-Smith): close iff at "
        "most t of n bytes differ",
        parameters=PARAMETERS,
        length_parameters=("n",),
        sweep="t",
        default_sweep=_default_sweep,
        small_instance=_small_instance,
        linkage_attacks={"code-offset": "difference-decoding"},
        repeated_attacks={"code-offset": "difference-decoding"},
        example=({"n": 16, "t": 2}, [list(range(16))], [99, *range(1, 15), 0]),
    )

    def __init__(self, n: int, t: int, *, codec: str = "auto") -> None:
        self.n = check_int("n", n, MIN_N, MAX_N)
        self.t = check_int("t", t, 1)
        self.k = self.n - 2 * self.t
        if self.k < 1:
            raise ParameterError(f"t={self.t} leaves no message symbols for n={self.n} (need 2t < n)")
        module = reed_solomon(codec)
        #: The Reed–Solomon implementation in use (``creedsolo`` or ``reedsolo``); not a parameter.
        self.codec: str = module.__name__
        self._codec = module.RSCodec(2 * self.t, nsize=255)
        self._codec_error: type[Exception] = module.ReedSolomonError

    def __reduce__(self) -> tuple[Any, ...]:
        # creedsolo's compiled codec cannot be pickled: a copy (worker processes) builds its own.
        return (_rebuild, (self.n, self.t, self.codec))

    def params(self) -> dict[str, Any]:
        return {"n": self.n, "t": self.t}

    # -- secrets and randomness -------------------------------------------------------------------
    def check_secret(self, secret: Any) -> bytes:
        return _as_bytes(secret, self.n, "secret")

    def secret_bytes(self, secret: Any) -> bytes:
        return self.check_secret(secret)

    def draw_randomness(self, secret: Any) -> bytes:
        return cast("bytes", _secrets.token_bytes(self.k))

    def randomness_space(self, secret: Any) -> Iterable[tuple[bytes, float]]:
        count = 256**self.k
        if count > MAX_ENUMERATED_MESSAGES:
            raise ParameterError(f"2^{8 * self.k} messages is too many to enumerate")
        return ((bytes(m), 1.0 / count) for m in itertools.product(range(256), repeat=self.k))

    def _codeword(self, message: bytes) -> bytes:
        return bytes(self._codec.encode(bytearray(message)))  # creedsolo takes writable buffers only

    # -- encode / decode ----------------------------------------------------------------------------
    def _encode_payload(self, secret: bytes, randomness: Any) -> bytes:
        if not isinstance(randomness, bytes) or len(randomness) != self.k:
            raise ParameterError(f"randomness must be {self.k} bytes")
        return _xor(secret, self._codeword(randomness))

    def _check_payload(self, payload: bytes) -> None:
        if len(payload) != self.n:
            raise SketchFormatError(f"code-offset payload must be {self.n} bytes, got {len(payload)}")

    def _decode_payload(self, payload: bytes, sample: Any) -> bytes:
        noisy = _xor(_as_bytes(sample, self.n, "sample"), payload)
        try:
            # The decoder returns the corrected codeword C(x) itself: no re-encoding needed.
            _, codeword, errata = self._codec.decode(bytearray(noisy))
        except self._codec_error:
            raise DecodeError(f"more than {self.t} byte errors") from None
        if len(errata) > self.t or len(codeword) != self.n:
            raise DecodeError(f"more than {self.t} byte errors")
        return _xor(payload, bytes(codeword))

    # -- accounting -----------------------------------------------------------------------------------
    def report(self) -> EntropyReport:
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=8.0 * self.n,
            randomness_bits=8.0 * self.k,
            notes=(f"RS[{self.n},{self.k}] over GF(2^8) corrects {self.t} byte errors; loss <= 16t bits",),
        )

    # -- symbols (for mixing) ----------------------------------------------------------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        return np.frombuffer(payload, dtype=np.uint8).astype(np.uint64), SymbolSpace("xor", bits=8)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        return symbols.astype(np.uint8).tobytes()
