"""Write gf2m_wide_kat.json: GF(2^m) and PinSketch known answers for m = 33, 48, 63, 64, from galois.

galois is the independent oracle (sketchauth is not imported): for each m the field polynomial is
``galois.primitive_poly(2, m, terms="min")`` — the lexicographically first primitive polynomial
with the fewest terms, the rule sketchauth's table follows — and every answer is galois' own
polynomial arithmetic over GF(2): products ``(a·b) mod P`` with ``galois.Poly``, inverses from
``galois.egcd`` (``s·a + u·P = 1``), odd power sums by repeated products. (galois' field class
``GF(2**63)`` keeps elements in int64 and its products overflow there, a ValueError; its
``GF(2**33)`` and ``GF(2**48)`` agree with the polynomial answers, which this script checks.) The inputs
are drawn from a seeded generator and include the edge elements 1, x, x^(m-1) and 2^m - 1; at
m = 64 half of the set elements are at least 2^63.

Decoding answers follow from the construction: each decode case is an enrolled set and a sample
within t of it (expected: the enrolled set) or more than t away (expected: null, a DecodeError).

Run: ``python3 tests/sketches/vectors/make_gf2m_wide_kat.py`` (rewrites the JSON beside it; about a
minute, most of it galois compiling its arithmetic).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import galois

MS = (33, 48, 63, 64)
T = 8
SEED = 20261206


def _element(rng: random.Random, m: int) -> int:
    return rng.randrange(1, 1 << m)


class _Field:
    """GF(2^m) = GF(2)[x] / P by galois' GF(2) polynomials (elements as ints, bit i = x^i)."""

    def __init__(self, poly: Any) -> None:
        self.poly = poly

    def mul(self, a: int, b: int) -> int:
        return int((galois.Poly.Int(a) * galois.Poly.Int(b)) % self.poly)

    def inv(self, a: int) -> int:
        d, s, _ = galois.egcd(galois.Poly.Int(a), self.poly)  # type: ignore[arg-type]  # stubs say int
        assert d == galois.Poly.Int(1)
        return int(s % self.poly)


def _power_sums(field: _Field, elements: list[int]) -> list[int]:
    sums = [0] * T
    for a in elements:
        square, power = field.mul(a, a), a
        for k in range(T):
            sums[k] ^= power
            power = field.mul(power, square)
    return sums


def _swap(rng: random.Random, m: int, elements: list[int], removed: int, added: int) -> list[int]:
    out = sorted(elements)[removed:]
    while len(out) < len(elements) - removed + added:
        v = _element(rng, m)
        if v not in elements and v not in out:
            out.append(v)
    return sorted(out)


def field_vectors(m: int, rng: random.Random) -> dict[str, Any]:
    poly = galois.primitive_poly(2, m, terms="min")
    field = _Field(poly)
    edges = [1, 2, 1 << (m - 1), (1 << m) - 1]
    left = edges + [_element(rng, m) for _ in range(8)]
    right = [(1 << m) - 1, 1 << (m - 1), 2, 1] + [_element(rng, m) for _ in range(8)]
    width = (m + 7) // 8
    sets = [
        [1],
        sorted({_element(rng, m) for _ in range(5)}),
        sorted({_element(rng, m) for _ in range(40)} | {(1 << m) - 1, 1 << (m - 1)}),
    ]
    encodes = []
    for s in sets:
        syndromes = _power_sums(field, s)
        encodes.append(
            {
                "set": s,
                "syndromes": syndromes,
                "payload_hex": b"".join(v.to_bytes(width, "big") for v in syndromes).hex(),
            }
        )
    decodes = [
        {"set": 1, "sample": _swap(rng, m, sets[1], 2, 2), "expected": sets[1]},
        {"set": 2, "sample": _swap(rng, m, sets[2], 3, 5), "expected": sets[2]},
        {"set": 2, "sample": _swap(rng, m, sets[2], 0, 8), "expected": sets[2]},
        {"set": 2, "sample": _swap(rng, m, sets[2], 5, 5), "expected": None},
    ]
    if m < 63:  # galois' field class as a second opinion where it computes correctly
        gf = galois.GF(2**m, irreducible_poly=poly)
        assert all(int(gf(a) * gf(b)) == field.mul(a, b) for a, b in zip(left, right, strict=True))
        assert all(int(gf(1) / gf(a)) == field.inv(a) for a in left)
    return {
        "m": m,
        "polynomial": int(poly),
        "polynomial_text": str(poly),
        "mul": [{"a": a, "b": b, "product": field.mul(a, b)} for a, b in zip(left, right, strict=True)],
        "inv": [{"a": a, "inverse": field.inv(a)} for a in left],
        "t": T,
        "encode": encodes,
        "decode": decodes,
    }


def main() -> None:
    rng = random.Random(SEED)
    document = {
        "about": "GF(2^m) products and inverses, PinSketch(m, t=8) syndromes and decodings for m = 33, 48, 63, 64; "
        "made by make_gf2m_wide_kat.py with galois " + str(getattr(galois, "__version__", "?")),
        "fields": [field_vectors(m, rng) for m in MS],
    }
    path = Path(__file__).with_name("gf2m_wide_kat.json")
    path.write_text(json.dumps(document, indent=1) + "\n")
    print(f"written {path}")


if __name__ == "__main__":
    main()
