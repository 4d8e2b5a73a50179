"""A test-only sketch family, defined outside the library and registered in one place.

:func:`toy_registered` adds it to the library's registry (:func:`sketchauth.sketches.registry.registered`)
for the duration of a ``with`` block: the one step a new family needs besides its module and
tests. The tests of the evaluation (tests/evaluate/test_adapters.py) and of every door
(tests/core/test_every_door.py) use it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np

from sketchauth.errors import DecodeError, SketchFormatError
from sketchauth.sketches import registry
from sketchauth.sketches.base import EntropyReport, SchemeDescriptor, SecureSketch, SymbolSpace
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int

TOY = "toy-clear"


def _toy_sweep(params: Mapping[str, Any]) -> list[int]:
    return list(range(1, (int(params.get("n", 8)) - 1) // 2 + 1))


class ToyClearSketch(SecureSketch):
    """A test-only family: the helper is the secret in clear; close iff at most ``t`` bytes differ.

    Insecure on purpose (no hiding at all); its acceptance rule is code-offset's, so its error
    rates on the same data must be code-offset's.
    """

    descriptor = SchemeDescriptor(
        name=TOY,
        sample_kind="bytes",
        summary="test only: the secret in clear, close iff at most t of n bytes differ",
        parameters=ParameterSpec.of(
            Parameter("n", "int", "bytes per sample", low=2, high=64),
            Parameter("t", "int", "byte errors tolerated", low=0, high=64),
        ),
        length_parameters=("n",),
        sweep="t",
        default_sweep=_toy_sweep,
        example=({"n": 4, "t": 1}, [[1, 2, 3, 4]], [1, 2, 3, 9]),
    )

    def __init__(self, n: int, t: int) -> None:
        self.n = check_int("n", n, 2, 64)
        self.t = check_int("t", t, 0, self.n)

    def params(self) -> dict[str, Any]:
        return {"n": self.n, "t": self.t}

    def check_secret(self, secret: Any) -> bytes:
        data = bytes(secret) if isinstance(secret, (bytes, bytearray)) else bytes(np.asarray(secret, dtype=np.uint8))
        if len(data) != self.n:
            raise DecodeError(f"need {self.n} bytes")
        return data

    def secret_bytes(self, secret: Any) -> bytes:
        return self.check_secret(secret)

    def _encode_payload(self, secret: Any, randomness: Any) -> bytes:
        return bytes(secret)

    def _decode_payload(self, payload: bytes, sample: Any) -> bytes:
        differ = sum(a != b for a, b in zip(payload, self.check_secret(sample), strict=True))
        if differ > self.t:
            raise DecodeError(f"more than {self.t} bytes differ")
        return payload

    def _check_payload(self, payload: bytes) -> None:
        if len(payload) != self.n:
            raise SketchFormatError("wrong length")

    def report(self) -> EntropyReport:
        return EntropyReport.from_bits(self.scheme_name, sketch_bits=8.0 * self.n, randomness_bits=0.0)

    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        return np.frombuffer(payload, dtype=np.uint8).astype(np.uint64), SymbolSpace("xor", bits=8)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        return symbols.astype(np.uint8).tobytes()


#: Its registry line: a helper-format id no built-in family uses.
TOY_LINE = registry.Registration(TOY, 99, f"{__name__}:ToyClearSketch")


@contextmanager
def toy_registered() -> Iterator[registry.Registration]:
    """The toy family in the registry while inside the block (removed after, whatever happens)."""
    with registry.registered(TOY_LINE) as line:
        yield line
