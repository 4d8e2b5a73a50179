"""Renewability of stored references (ISO/IEC 24745, ISO/IEC 30136): is a renewed reference unlinkable to the old one?

ISO/IEC 24745 asks that a protected reference can be **revoked and renewed**: from the same
person's biometric, a new reference that cannot be linked to the old one. ISO/IEC 30136 measures
this as unlinkability between the old and the renewed references. Here every identity's two
enrolments from disjoint samples with fresh randomness
(:func:`~sketchauth.evaluate.unlinkability.link_pairs`) are the old and the renewed reference, and
the two stored records are attacked
as a thief holding the database *before* and *after* the renewal would:

* ``pepper_rotation`` — the old record sealed under one pepper, the renewed one under a new
  pepper (sealed as :func:`sketchauth.pepper.wrap` seals, a fresh per-enrolment nonce each): a
  rotation after a suspected leak, with re-enrolment;
* ``pin_change`` — both sealed under the *same* pepper with fresh nonces, as a re-enrolment or
  PIN change inside one deployment stores them (the nonce is new at every enrolment and PIN
  change).

The score is the scheme's own linkage attack where both records parse as helpers, else byte
agreement (:func:`~sketchauth.evaluate.unlinkability_report.sealed_attack`); ``D↔sys`` comes with
its chance level (:func:`~sketchauth.evaluate.unlinkability.chance_level`, labels permuted), and a
scenario is *renewable* unless its permutation p-value is below :data:`LINKED_P_VALUE`. Renewal
by fresh sketch randomness alone, without a pepper (or with the pepper stolen too), is the
report's unlinkability measurement itself; deterministic sketches (interval, PinSketch, s1) fail
it by construction.

The peppers' seal keys are drawn from :mod:`secrets` per run and never leave this function
(:class:`~sketchauth.evaluate.sealing.DrawnSealer`: the records a pepper's seal key makes, without
the 128 MiB argon2id evaluation that deriving it from a pepper secret costs).

Example::

    >>> from sketchauth.evaluate.data import VectorModel, synthetic_vectors
    >>> from sketchauth.evaluate.error_rates import adapter
    >>> from sketchauth.evaluate.unlinkability import link_pairs
    >>> from sketchauth.sketches.interval import IntervalSketch
    >>> data = synthetic_vectors(12, 2, 4, seed=1, model=VectorModel(noise=1.0))
    >>> sketch = IntervalSketch(256, 3, features=4)
    >>> pairs = link_pairs(sketch, adapter("interval").enrol, data)
    >>> out = evaluate_renewability(sketch, pairs, permutations=20)
    >>> sorted(out["scenarios"])
    ['pepper_rotation', 'pin_change']
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sketchauth.evaluate.sealing import DrawnSealer
from sketchauth.evaluate.unlinkability import LinkagePairs, chance_level, linkage_attack
from sketchauth.evaluate.unlinkability_report import registered_attack, sealed_attack
from sketchauth.pepper import new_nonce
from sketchauth.sketches.base import SecureSketch

__all__ = ["LINKED_P_VALUE", "RENEWAL_SCENARIOS", "evaluate_renewability"]

#: A renewal is reported linkable when its ``D↔sys`` is this unlikely under the permutation null
#: (1%: with two scenarios per report, a 5% test would flag an unlinkable renewal in ~1 report of 10).
LINKED_P_VALUE = 0.01

#: The renewals measured, and what each stores.
RENEWAL_SCENARIOS = {
    "pepper_rotation": "old reference sealed under one pepper, renewed reference under a new pepper (fresh nonces)",
    "pin_change": "old and renewed references sealed under the same pepper with fresh per-enrolment nonces",
}


def evaluate_renewability(
    sketch: SecureSketch[Any, Any],
    pairs: LinkagePairs,
    *,
    omega: float = 1.0,
    tau: int = 2,
    permutations: int = 200,
    seed: int = 0,
) -> dict[str, Any]:
    """Old and renewed references of every identity, attacked per scenario (module docstring).

    ``pairs``: two enrolments of every identity with fresh randomness
    (:func:`~sketchauth.evaluate.unlinkability.link_pairs`): the first is the old reference, the
    second the renewed one. Returns the attack, the pair counts and per scenario ``d_sys``,
    ``chance_d_sys_mean``, ``chance_d_sys_p95``, ``p_value`` and ``renewable``
    (``p_value ≥ LINKED_P_VALUE``).
    """
    key, attack = linkage_attack(sketch)
    scored = sealed_attack(registered_attack(key))
    first, second = DrawnSealer(), DrawnSealer()
    people = len(pairs.first_helpers)
    mated = [(i, i) for i in range(people)]
    nonmated = list(zip(pairs.nonmated[0].tolist(), pairs.nonmated[1].tolist(), strict=True))
    scenarios: dict[str, Any] = {}
    for name, renewed_pepper in (("pepper_rotation", second), ("pin_change", first)):
        old = [scored.prepare(sketch, first.seal(h, new_nonce(), b"")) for h in pairs.first_helpers]
        new = [scored.prepare(sketch, renewed_pepper.seal(h, new_nonce(), b"")) for h in pairs.second_helpers]
        m = np.array([scored.compare(old[i], new[j], tau) for i, j in mated])
        n = np.array([scored.compare(old[i], new[j], tau) for i, j in nonmated])
        chance = chance_level(m, n, omega=omega, permutations=permutations, seed=seed)
        scenarios[name] = {
            "stores": RENEWAL_SCENARIOS[name],
            **chance,
            "renewable": chance["p_value"] >= LINKED_P_VALUE,
        }
    return {
        "attack": attack.name,
        "score": "the attack where both records parse as helpers, else byte agreement of the sealed records",
        "mated_pairs": people,
        "nonmated_pairs": len(nonmated),
        "omega": omega,
        "scenarios": scenarios,
    }
