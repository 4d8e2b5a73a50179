"""Write pinsketch_kat.json: PinSketch known answers over GF(2^8), computed with galois.

galois is an independent oracle here (its own GF(2^8) arithmetic modulo the same polynomial
x^8 + x^4 + x^3 + x^2 + 1 = 0x11d); sketchauth's code is not imported. The small cases can be
checked by hand: for A = {1, 2}, s_1 = 1 + 2 = 3, s_3 = 1 + 8 = 9, s_5 = 1 + 32 = 33 (no
reduction needed below x^8); for A = {2^7} = {x^7}, s_3 = x^21 needs reduction modulo 0x11d.

Run: ``python3 tests/core/sketches/vectors/make_pinsketch_kat.py`` (rewrites the JSON beside it).
"""

from __future__ import annotations

import json
from pathlib import Path

import galois
import numpy as np

M, T, POLY = 8, 3, 0x11D
GF = galois.GF(2**M, irreducible_poly=POLY)

SETS = [
    [],
    [1],
    [1, 2],
    [128],
    [3, 5, 7, 11],
    [17, 34, 51, 68, 85, 102, 119, 136, 153, 170],
    [200, 201, 255],
    list(range(1, 256, 7)),
]

# (enrolled set index, sample) pairs: within t decode exactly; the last ones are > t away.
DECODES = [
    (2, [1, 2]),
    (2, [1]),
    (2, [2, 9, 10]),
    (4, [3, 5, 7, 11, 12]),
    (4, [5, 7, 11, 250]),
    (5, [17, 34, 51, 68, 85, 102, 119, 136]),
    (6, [200, 201, 254, 255, 1, 2]),
    (7, [x for x in range(1, 256, 7) if x not in (1, 8, 15)]),
]
TOO_FAR = [
    (4, [3, 5, 100, 101, 102]),
    (5, [17, 34, 51, 68, 85, 102]),
]


def odd_power_sums(elements: list[int]) -> list[int]:
    values = GF(np.array(elements, dtype=np.int64)) if elements else GF([])
    out = []
    for i in range(1, 2 * T, 2):
        total = GF(0)
        for v in values:
            total += v**i
        out.append(int(total))
    return out


def nothing_within_t(sample: list[int], syndromes: list[int]) -> bool:
    """Brute force with galois: no set D, |D| <= 3, has power sums ``syndromes − sums(sample)``.

    Then no set within distance t of the sample has this sketch and decode must fail.
    """
    target = [GF(a) + GF(b) for a, b in zip(syndromes, odd_power_sums(sample), strict=False)]
    if all(int(v) == 0 for v in target):
        return False
    s1, s3, s5 = target
    e = GF(np.arange(1, 2**M))
    if np.any((e == s1) & (e**3 == s3) & (e**5 == s5)):  # |D| = 1
        return False
    a, b = e[:, None], e[None, :]
    distinct = np.asarray(a != b)
    if np.any(distinct & (a + b == s1) & (a**3 + b**3 == s3) & (a**5 + b**5 == s5)):  # |D| = 2
        return False
    c = s1 + a + b  # |D| = 3: the third element is forced by s_1
    ok = distinct & (c != 0) & (c != a) & (c != b) & (a**3 + b**3 + c**3 == s3) & (a**5 + b**5 + c**5 == s5)
    return not np.any(ok)


def main() -> None:
    cases = []
    for elements in SETS:
        sums = odd_power_sums(elements)
        cases.append({"set": elements, "syndromes": sums, "payload_hex": bytes(sums).hex()})
    decodes = [{"set": SETS[i], "sample": sample, "expected": sorted(SETS[i])} for i, sample in DECODES]
    far = []
    for i, sample in TOO_FAR:
        distance = len(set(SETS[i]) ^ set(sample))
        assert distance > T and nothing_within_t(sample, odd_power_sums(SETS[i]))
        far.append({"set": SETS[i], "sample": sample, "distance": distance, "outcome": "DecodeError"})
    out = {
        "about": (
            "PinSketch(m=8, t=3) known answers; field GF(2^8) modulo 0x11d; made by make_pinsketch_kat.py with galois"
        ),
        "m": M,
        "t": T,
        "polynomial": POLY,
        "encode": cases,
        "decode": decodes,
        "too_far": far,
    }
    path = Path(__file__).with_name("pinsketch_kat.json")
    path.write_text(_readable_json(out))


def _readable_json(out: dict) -> str:
    """One JSON object per line inside each list, so the vectors read (and diff) as a table."""
    lines = ["{"]
    items = list(out.items())
    for n, (key, value) in enumerate(items):
        comma = "," if n < len(items) - 1 else ""
        if isinstance(value, list):
            lines.append(f"  {json.dumps(key)}: [")
            lines += [f"    {json.dumps(v)}" + ("," if k < len(value) - 1 else "") for k, v in enumerate(value)]
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    return "\n".join([*lines, "}"]) + "\n"


if __name__ == "__main__":
    main()
