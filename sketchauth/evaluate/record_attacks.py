"""Linkage attacks on two *stored records*: each attack of the project prepared once per record, and on sealed records.

One home for the attacks the real-data evaluations run on stored helpers
(:mod:`sketchauth.evaluate.unlinkability_report`, :mod:`sketchauth.evaluate.renewability`); the
scores themselves live with their scheme's analysis — residue distance, difference decoding and
the vault differential in :mod:`sketchauth.evaluate.unlinkability`
(:data:`~sketchauth.evaluate.unlinkability.LINKAGE_ATTACKS`), the asymmetric adversaries (s1
tolerances, similar intervals, their even-interval variant, parity) in
:mod:`sketchauth.evaluate.linkage`:

* :class:`PairAttack` — an attack as ``prepare(sketch, record)`` (what it reads from one record,
  once) and ``compare(a, b, tau)``; :func:`registered_attack` wraps a whole-helper attack of the
  registry; :data:`PIPELINE_ATTACKS` lists every attack that applies to each feature pipeline;
* :func:`sealed_attack` — an attack on records that may be sealed by a pepper
  (:func:`sketchauth.pepper.wrap`): the attack itself where both records parse as helpers of the
  scheme, else :func:`byte_agreement`;
* :func:`attack_ready` — the PinSketch whose syndromes the difference-decoding attack can read
  as a group.

Example::

    >>> byte_agreement(b"abcd", b"abzd"), byte_agreement(b"ab", b"abc")
    (3, -1)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sketchauth.errors import SketchAuthError
from sketchauth.evaluate.linkage import (
    partition_parity_bits,
    s1_linkage_score,
    s2_similar_intervals,
    similar_even_intervals,
)
from sketchauth.evaluate.unlinkability import attack_for_key
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.pinsketch import PinSketch

__all__ = [
    "PIPELINE_ATTACKS",
    "PairAttack",
    "attack_ready",
    "byte_agreement",
    "parses_as_helper",
    "registered_attack",
    "sealed_attack",
]


# -- the attacks -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class PairAttack:
    """One linkage attack on two stored helpers.

    ``prepare(sketch, helper)`` reads what the attack looks at from one helper (its partition,
    its clear tolerances, or the helper itself) once per helper; ``compare(a, b, tau)`` scores
    two prepared helpers.
    """

    name: str
    description: str
    higher_is_mated: bool
    prepare: Callable[[SecureSketch[Any, Any], bytes], Any]
    compare: Callable[[Any, Any, int], float]


def registered_attack(key: str) -> PairAttack:
    """A whole-helper attack (:func:`~sketchauth.evaluate.unlinkability.attack_for_key`)."""
    attack = attack_for_key(key)
    return PairAttack(
        attack.name,
        attack.description,
        attack.higher_is_mated,
        lambda sketch, helper: (sketch, helper),
        lambda a, b, tau: float(attack.score(a[0], a[1], b[1], tau=tau)),
    )


def _partition(sketch: SecureSketch[Any, Any], helper: bytes) -> list[np.ndarray]:
    return cast("list[np.ndarray]", sketch.partition(helper))  # type: ignore[attr-defined]


def _named(
    key: str, prepare: Callable[[SecureSketch[Any, Any], bytes], Any], compare: Callable[[Any, Any, int], float]
) -> PairAttack:
    """A registered attack's name and direction with a prepare/compare split of its score."""
    attack = attack_for_key(key)
    return PairAttack(attack.name, attack.description, attack.higher_is_mated, prepare, compare)


_S1 = _named(
    "asymmetric-interval/s1",
    lambda sketch, helper: sketch.published_tolerances(helper),  # type: ignore[attr-defined]
    lambda a, b, tau: float(s1_linkage_score(a, b, tau)),
)
_EVEN = PairAttack(
    "similar-even-intervals",
    "similar even-length intervals of the two partitions (tau)",
    True,
    _partition,
    lambda a, b, tau: float(similar_even_intervals(a, b, tau)),
)
_PARITY = PairAttack(
    "parity",
    "features whose majority boundary parity agrees",
    True,
    lambda sketch, helper: partition_parity_bits(_partition(sketch, helper)),
    lambda a, b, tau: float(np.count_nonzero(a == b)),
)


def _similar(key: str) -> PairAttack:
    return _named(key, _partition, lambda a, b, tau: float(s2_similar_intervals(a, b, tau)))


#: Every linkage attack of the project that applies to each pipeline's scheme.
PIPELINE_ATTACKS: dict[str, tuple[PairAttack, ...]] = {
    "interval": (registered_attack("interval"),),
    "thermometer": (registered_attack("pinsketch"),),
    "code-offset": (registered_attack("code-offset"),),
    "s1": (_S1,),
    "s2": (_similar("asymmetric-interval/s2"), _EVEN, _PARITY),
    "s3": (_similar("asymmetric-interval/s3"), _EVEN, _PARITY),
}


def byte_agreement(a: bytes, b: bytes) -> int:
    """Equal bytes at equal positions of two stored records; ``-1`` when their lengths differ.

    The generic linkage score of sealed records: for two records sealed under independent
    keystreams it is binomial ``(len, 1/256)`` whoever they belong to; any dependence of the
    sealed bytes on the template would show as a mated/non-mated difference.
    """
    if len(a) != len(b):
        return -1
    return sum(x == y for x, y in zip(a, b, strict=True))


def parses_as_helper(sketch: SecureSketch[Any, Any], record: bytes) -> bool:
    """Whether ``record`` parses as a helper of ``sketch``'s scheme (a sealed record practically never does)."""
    try:
        sketch.payload(record)
    except (SketchAuthError, ValueError):
        return False
    return True


def sealed_attack(attack: PairAttack) -> PairAttack:
    """``attack`` on stored records that may be sealed: the attack itself where both records parse
    as helpers of the scheme, else :func:`byte_agreement` (same name and direction, so the report's
    rows line up; ``D↔sys`` does not depend on the direction of the scores)."""

    def prepare(sketch: SecureSketch[Any, Any], record: bytes) -> tuple[bool, Any]:
        if parses_as_helper(sketch, record):
            return True, attack.prepare(sketch, record)
        return False, record

    def compare(a: tuple[bool, Any], b: tuple[bool, Any], tau: int) -> float:
        (parsed_a, x), (parsed_b, y) = a, b
        if parsed_a and parsed_b:
            return attack.compare(x, y, tau)
        if parsed_a or parsed_b:  # one parses, the other does not
            return -1.0
        return float(byte_agreement(x, y))

    return PairAttack(attack.name, attack.description, attack.higher_is_mated, prepare, compare)


def attack_ready(sketch: SecureSketch[Any, Any]) -> SecureSketch[Any, Any]:
    """``sketch``, or for a PinSketch whose syndromes are not independent (``|S| < t·m``) the one of
    the smallest larger ``m`` whose are: the same sets, the same set-difference tolerance ``t``, a
    larger field. The difference-decoding attack reads the syndromes as a group
    (:meth:`SecureSketch.symbols`) and needs them independent; the seal itself takes any helper.
    Other schemes are returned as they are."""
    if not isinstance(sketch, PinSketch):
        return sketch
    m = sketch.m
    while PinSketch(m, sketch.t).report().sketch_bits < sketch.t * m:
        m += 1
    return sketch if m == sketch.m else PinSketch(m, sketch.t)
