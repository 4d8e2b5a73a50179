"""``check_secret`` is idempotent for every scheme: normalising twice is normalising once.

``enrol`` normalises a secret and then encodes it (``encode`` normalises again); a cascade
normalises its components' secrets and hands them to the components' ``encode_with``, which
normalise once more; the evaluation does the same. A real-valued interval secret used to be
quantised at each of those steps (``[1.25, 2.5, 3.75]`` with step 0.5 became ``[3, 5, 8]``, then
``[6, 10, 16]``), so the enrolment sample never verified. This checks the contract every scheme
must keep, on one secret per registered scheme (the mixed structures included).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from sketchauth.mixing import Cascade, Concatenate, ExactKey, FuzzySecret
from sketchauth.sketches.angular import AngularSketch
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.registry import registrations
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault


def _quiet(build: Any) -> SecureSketch:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return build()


REAL = IntervalSketch(n=256, v=8, features=3, step=0.5)
#: The angular sketch's secret is the codeword check_secret draws for a template (a raw template
#: is a new draw each time), so its case starts from that checked secret.
ANGULAR = AngularSketch(dimension=8, alpha=2)
POLAR = PolarAngularSketch(dimension=16, bits=4, list_size=4)
SIGNED = IntervalSketch.for_range(-4.0, 4.0, step=0.05, v=6, features=3)
CASES: list[tuple[str, SecureSketch, Any]] = [
    ("interval", IntervalSketch(n=100, v=3, features=4), [10, 20, 30, 40]),
    ("interval-step", REAL, [1.25, 2.5, 3.75]),
    ("interval-signed", SIGNED, [-3.9, 0.02, 3.3]),
    ("interval-int-offset", IntervalSketch(n=256, v=4, features=2, offset=-128), [-100, 90]),
    ("code-offset", CodeOffsetSketch(n=16, t=2), bytes(range(16))),
    ("pinsketch", PinSketch(m=9, t=3), [3, 70, 100, 511]),
    ("fuzzy-vault", FuzzyVault(p=13, m=5, t=1), [1, 4, 6, 9, 11]),
    ("asymmetric-s1", AsymmetricIntervalSketch(n=64, q=4, scheme="s1", features=3, step=0.5), ([5, 30, 60], [1, 4, 2])),
    (
        "asymmetric-s2",
        AsymmetricIntervalSketch(n=64, q=4, scheme="s2", features=3, step=0.1, offset=-3.2),
        ([5, 30, 60], [1, 4, 2]),
    ),
    ("weighted-vault", WeightedFuzzyVault(p=50, q=4, g=9, t=3), ([3, 17, 40], [3, 3, 3])),
    ("chaff-point", ChaffPointSketch(universe=30, min_distance=3, points=2), [4, 12]),
    ("angular", ANGULAR, ANGULAR.check_secret([1.0, -2.0, 0.5, 0.0, 3.0, -1.0, 0.25, 2.0])),
    ("angular-polar", POLAR, POLAR.check_secret([float((-1) ** i * (i + 1)) for i in range(16)])),
    ("mixed-cascade", _quiet(lambda: Cascade(REAL, pin=ExactKey("test"))), [[1.25, 2.5, 3.75], "2468"]),
    (
        "mixed-concatenate",
        _quiet(lambda: Concatenate(SIGNED, FuzzySecret(IntervalSketch(n=64, v=2, features=2, step=0.25)))),
        [[-3.9, 0.02, 3.3], [1.3, 2.6]],
    ),
]


def test_every_registered_scheme_is_covered() -> None:
    assert {sketch.scheme_name for _, sketch, _ in CASES} == {r.name for r in registrations()}


@pytest.mark.parametrize("name, sketch, secret", CASES, ids=[c[0] for c in CASES])
def test_check_secret_is_idempotent(name: str, sketch: SecureSketch, secret: Any) -> None:
    once = sketch.check_secret(secret)
    twice = sketch.check_secret(once)
    assert sketch.secret_bytes(twice) == sketch.secret_bytes(once) == sketch.secret_bytes(secret)
    randomness = sketch.draw_randomness(once)
    assert (
        sketch.encode_with(twice, randomness)
        == sketch.encode_with(once, randomness)
        == sketch.encode_with(secret, randomness)
    )
