"""Security of a configured pipeline on real data, told four ways side by side.

On real features the provable loss bound often exceeds the bits the secret carries (a thermometer
pipeline at FMR 1%: a 216-bit bound on a 44-bit secret), so "loss bound / secret bits" alone
guarantees nothing. For one configuration this module reports:

(a) **provable residual min-entropy** ``H̃∞(d|S) ≥ H∞(d) − (|S| − H∞(R))`` (Dodis–Ostrovsky–Reyzin–
    Smith, Lemma 4.1/the sketch bound), with ``H∞(d)`` the secret's bits under the background
    (equal-probability, independent levels: a *declared*, optimistic source entropy), floored at 0;
(b) the **zero-effort false-accept cost** ``log2(1/FMR)`` measured on the evaluation data (with no
    observed false match only the bound from the 95% Wilson upper FMR);
(c) an **empirical offline attack** (:func:`offline_attack`): an attacker holding the database (the
    helper data and the argon2id hash of every enrolled person) tries samples of a background
    population through the helper data — decode, then one argon2 evaluation per decoded
    candidate — until the hash matches. Reported: argon2 evaluations until the first success,
    median over the enrolled people (a decode failure costs no hash). The simulation uses the
    cheap ``"test"`` argon2 profile and *counts* evaluations; it never times them;
(d) what a **PIN cascade** adds (Fang's thesis ch. 7, Theorem 7): mixing the sketch with a key of
    ``H∞(k)`` bits gives ``H̃∞(d|Q) ≥ H∞(d) + H∞(k) − |S| − β`` (randomness recoverable and
    uniform), ``β`` the key-recoverability of the pad (:func:`sketchauth.mixing.bounds.key_recoverability_bits`);
    the difference to (a) is the loss *diverted* to the PIN.

:func:`tuning_view` walks a pipeline's setting and lists FNMR/FMR against the guaranteed bits;
:func:`recommend` picks the lowest-FNMR setting with at least :data:`GUARANTEE_BITS` guaranteed bits
(without, else with, the PIN), or says that the data does not allow it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import argon2
import numpy as np

from sketchauth.enrolment import hasher, secret_message
from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.evaluate.leakage import false_accept_cost
from sketchauth.features.pipeline import Pipeline
from sketchauth.mixing.bounds import key_recoverability_bits, mixed_secret_bound

__all__ = [
    "CODEBOOK",
    "GUARANTEE_BITS",
    "MAX_RECOMMENDED_FNMR",
    "PIN_DIGITS",
    "PROVABLE",
    "OfflineAttack",
    "SecurityFigures",
    "attack_record",
    "helper_bits",
    "offline_attack",
    "pin_cascade",
    "pin_cascade_bits",
    "recommend",
    "security_figures",
    "tuning_view",
]

#: Guaranteed bits a recommended configuration should keep.
GUARANTEE_BITS = 20.0
#: Digits of the PIN assumed for the cascade figure (uniform: log2 10^6 ≈ 19.9 bits).
PIN_DIGITS = 6
#: A recommended setting rejects at most this share of genuine attempts (the bar of an unusable pipeline).
MAX_RECOMMENDED_FNMR = 0.5
#: How the bits a helper leaves are established: a min-entropy bound, or the codebook work of the
#: angular pipeline's code (computational, exact for templates uniform on the sphere).
PROVABLE, CODEBOOK = "provable", "codebook"


@dataclass(frozen=True)
class OfflineAttack:
    """Argon2 evaluations until the first success per attacked person (``None``: not within the budget)."""

    evaluations: tuple[int | None, ...]
    spent: tuple[int, ...]
    attempts: int
    background_samples: int
    profile: str

    @property
    def successes(self) -> int:
        return sum(e is not None for e in self.evaluations)

    @property
    def median(self) -> float | None:
        """Median evaluations to first success; ``None`` when over half the people resisted the budget."""
        if not self.evaluations:
            return None
        ranked = sorted(math.inf if e is None else float(e) for e in self.evaluations)
        n = len(ranked)
        mid = ranked[n // 2] if n % 2 else (ranked[n // 2 - 1] + ranked[n // 2]) / 2
        return None if math.isinf(mid) else mid

    def describe(self) -> str:
        med = self.median
        if med is None:
            return f"> {self.attempts} tries for most people ({self.successes}/{len(self.evaluations)} broken)"
        return (
            f"{med:g} argon2 evaluation{'' if med == 1 else 's'} "
            f"(median; {self.successes}/{len(self.evaluations)} broken within {self.attempts} tries)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "median_argon2_evaluations": self.median,
            "per_person": list(self.evaluations),
            "argon2_evaluations_spent": list(self.spent),
            "people": len(self.evaluations),
            "broken": self.successes,
            "tries_per_person": self.attempts,
            "background_samples": self.background_samples,
            "hash_profile": self.profile,
        }


def offline_attack(
    pipeline: Pipeline,
    enrolments: Sequence[np.ndarray],
    background: np.ndarray,
    *,
    attempts: int = 200,
    seed: int = 0,
    profile: str = "test",
    background_labels: Any = None,
    labels: Sequence[Any] | None = None,
) -> OfflineAttack:
    """Attack every enrolment with up to ``attempts`` background samples (module docstring, (c)).

    ``enrolments`` are raw enrolment samples of each person (``m × d``); ``background`` raw samples
    of other people (``N × d``), tried in a seeded random order (the same order for everyone).
    With ``labels`` (one per enrolment) and ``background_labels`` (one per background row), a
    person's own background samples are never tried against them (a closed-set background holds
    the enrolled people too: their own samples would be genuine attempts, not an attack). Each
    person is enrolled for real (:meth:`Pipeline.enrol`, argon2id).
    """
    if attempts < 1:
        raise ParameterError(f"attempts must be >= 1, got {attempts}")
    background = np.asarray(background, dtype=np.float64)
    owners = None if background_labels is None else np.asarray(background_labels).astype(str)
    ph = hasher(profile)
    order = np.random.default_rng(seed).permutation(background.shape[0])
    transformed: dict[int, Any] = {}
    sketch = pipeline.sketch
    found: list[int | None] = []
    spent: list[int] = []
    tried = 0
    for person, samples in enumerate(enrolments):
        mine = order if owners is None or labels is None else order[owners[order] != str(labels[person])]
        mine = mine[:attempts]
        tried = max(tried, int(mine.size))
        record = pipeline.enrol(samples, password_hasher=ph)

        def probes(rows: np.ndarray = mine) -> Iterable[Any]:
            for row in rows.tolist():
                if row not in transformed:
                    transformed[row] = pipeline.sample_transform(background[row])
                yield transformed[row]

        hit, evaluations = attack_record(sketch, record, probes(), ph)
        found.append(hit)
        spent.append(evaluations)
    return OfflineAttack(tuple(found), tuple(spent), tried, int(background.shape[0]), profile)


def pin_cascade_bits(
    source_bits: float, sketch_bits: float, loss_bound_bits: float, pin_digits: int = PIN_DIGITS
) -> dict[str, float]:
    """Theorem 7 of Fang's thesis ch. 7: a sketch of ``|S|`` bits mixed with a uniform ``pin_digits``-digit PIN.

    ``H̃∞(d|Q) ≥ H∞(d) + H∞(k) − |S| − β`` (randomness recoverable and uniform), floored at 0 and
    capped at ``H∞(d)``; ``diverted_bits`` is its difference to the bound without the PIN.
    """
    pin_bits = pin_digits * math.log2(10)
    beta = key_recoverability_bits(pin_bits, sketch_bits)
    without = max(0.0, source_bits - loss_bound_bits)
    with_pin = min(source_bits, max(0.0, mixed_secret_bound(source_bits, pin_bits, sketch_bits, beta)))
    return {"pin_bits": pin_bits, "beta": beta, "residual_bits": with_pin, "diverted_bits": with_pin - without}


def pin_cascade(pipeline: Pipeline, pin_digits: int = PIN_DIGITS) -> dict[str, float]:
    """:func:`pin_cascade_bits` for a pipeline (its secret's bits under the background as ``H∞(d)``)."""
    report = pipeline.sketch.report()
    return pin_cascade_bits(pipeline.secret_bits, report.sketch_bits, report.loss_bound_bits, pin_digits)


def attack_record(sketch: Any, record: Any, probes: Iterable[Any], ph: argon2.PasswordHasher) -> tuple[int | None, int]:
    """(argon2 evaluations until the first success or ``None``, evaluations spent) for one stored record."""
    evaluations = 0
    for probe in probes:
        try:
            candidate = sketch.decode(record.helper, probe)
        except (DecodeError, SampleError):
            continue  # nothing to hash: the attacker moves on for free
        evaluations += 1
        try:
            if ph.verify(record.secret_hash, secret_message(sketch, candidate)):
                return evaluations, evaluations
        except argon2.exceptions.VerificationError:
            pass
    return None, evaluations


@dataclass(frozen=True)
class SecurityFigures:
    """The four figures of the module docstring for one configuration."""

    name: str
    setting: float
    fnmr: float
    fmr: float
    secret_bits: float
    loss_bound_bits: float
    residual_bits: float
    false_accept: dict[str, Any]
    attack: OfflineAttack | None
    pin: dict[str, float]
    #: :data:`PROVABLE` (a min-entropy bound) or :data:`CODEBOOK` (the angular code's codebook work).
    basis: str = PROVABLE

    def to_dict(self) -> dict[str, Any]:
        return {
            "pipeline": self.name,
            "setting": self.setting,
            "fnmr": self.fnmr,
            "fmr": self.fmr,
            "secret_bits": self.secret_bits,
            "loss_bound_bits": self.loss_bound_bits,
            "a_provable_residual_bits": self.residual_bits,
            "a_basis": self.basis,
            "b_false_accept_bits": self.false_accept["bits"],
            "b_false_accept_bits_lower": self.false_accept["bits_ci"][0],
            "c_offline_attack": None if self.attack is None else self.attack.to_dict(),
            "d_pin_cascade": dict(self.pin),
        }

    def row(self) -> str:
        fa = self.false_accept
        b = f"{fa['bits']:.1f}" if fa["bits"] is not None else f"≥ {fa['bits_ci'][0]:.1f} (no false match)"
        c = "not run" if self.attack is None else self.attack.describe()
        d = f"{self.pin['residual_bits']:.1f} (+{self.pin['diverted_bits']:.1f} diverted, β = {self.pin['beta']:.1f})"
        if self.basis == CODEBOOK:
            d = "— (no cascade bound for a rotation helper)"
        a = (
            f"{self.residual_bits:.1f} codebook work (computational; no provable bound)"
            if self.basis == CODEBOOK
            else f"{self.residual_bits:.1f} (of {self.secret_bits:.0f}; bound {self.loss_bound_bits:.0f})"
        )
        return f"| {self.name} | {self.fnmr:.4f} / {self.fmr:.4f} | {a} | {b} | {c} | {d} |"


def security_figures(
    name: str,
    pipeline: Pipeline,
    *,
    setting: float,
    fnmr: float,
    false_matches: int,
    impostor_trials: int,
    attack: OfflineAttack | None,
    pin_digits: int = PIN_DIGITS,
) -> SecurityFigures:
    report = pipeline.sketch.report()
    residual, basis = helper_bits(pipeline)
    return SecurityFigures(
        name,
        float(setting),
        float(fnmr),
        false_matches / impostor_trials,
        float(pipeline.secret_bits),
        float(report.loss_bound_bits),
        residual,
        false_accept_cost(false_matches, impostor_trials),
        attack,
        pin_cascade(pipeline, pin_digits),
        basis,
    )


def helper_bits(pipeline: Pipeline) -> tuple[float, str]:
    """The bits a thief holding one helper (no matching sample, no pepper) must still search, and their basis.

    Quantising pipelines: the provable residual min-entropy ``H∞(d) − loss bound`` (floored at 0).
    The angular pipeline: its codebook bits — the DORS bound of a rotation helper is vacuous, and
    the work to find the codeword from one helper is ``log2`` of the codebook's size when the
    centred templates are spread over the sphere (``docs/schemes/angular.md``) — labelled ``codebook``.
    """
    if pipeline.kind == "angular":
        return float(pipeline.secret_bits), CODEBOOK
    report = pipeline.sketch.report()
    return max(0.0, pipeline.secret_bits - report.loss_bound_bits), PROVABLE


def tuning_view(
    name: str,
    genuine: np.ndarray,
    impostor: np.ndarray,
    settings: Sequence[float],
    build: Callable[[float], Pipeline],
    *,
    pin_digits: int = PIN_DIGITS,
) -> list[dict[str, Any]]:
    """FNMR and FMR (accept iff score ≤ setting) against guaranteed bits, without and with the PIN."""
    rows = []
    g, i = np.sort(genuine), np.sort(impostor)
    for s in settings:
        try:
            pipeline = build(s)
        except ParameterError:
            continue
        bits, basis = helper_bits(pipeline)
        rows.append(
            {
                "pipeline": name,
                "setting": float(s),
                "fnmr": 1.0 - np.searchsorted(g, s, side="right") / g.size,
                "fmr": np.searchsorted(i, s, side="right") / i.size,
                "guaranteed_bits": bits,
                "basis": basis,
                # A PIN never lowers the codebook work; Theorem 7's cascade bound is vacuous for a rotation helper.
                "guaranteed_bits_with_pin": max(
                    bits if basis == CODEBOOK else 0.0, pin_cascade(pipeline, pin_digits)["residual_bits"]
                ),
            }
        )
    return rows


def recommend(
    rows: Sequence[dict[str, Any]],
    *,
    max_fmr: float = 1e-2,
    bits: float = GUARANTEE_BITS,
    max_fnmr: float = MAX_RECOMMENDED_FNMR,
) -> dict[str, Any]:
    """The lowest-FNMR row with FMR ≤ ``max_fmr``, FNMR ≤ ``max_fnmr`` and ≥ ``bits`` guaranteed (else with a
    PIN, else none): a setting that rejects most genuine attempts is no recommendation, whatever its bits."""
    for key, how in (
        ("guaranteed_bits", "biometric alone"),
        ("guaranteed_bits_with_pin", f"with a {PIN_DIGITS}-digit PIN cascade"),
    ):
        ok = [r for r in rows if r["fmr"] <= max_fmr and r["fnmr"] <= max_fnmr and r[key] >= bits]
        if ok:
            best = min(ok, key=lambda r: (r["fnmr"], -r[key]))
            basis = (
                "codebook work from one helper, computational"
                if best.get("basis") == CODEBOOK and key == "guaranteed_bits"
                else how
            )
            return {
                **best,
                "how": how,
                "text": (
                    f"{best['pipeline']} at setting {best['setting']:g}: "
                    f"FNMR {best['fnmr']:.4f}, FMR {best['fmr']:.4f}, "
                    f"{best[key]:.1f} guaranteed bits ({basis})"
                ),
            }
    top = max(rows, key=lambda r: r["guaranteed_bits_with_pin"], default=None)
    best_bits = 0.0 if top is None else top["guaranteed_bits_with_pin"]
    return {
        "how": None,
        "text": (
            f"the data does not allow {bits:g} guaranteed bits at FMR ≤ {max_fmr:g} and FNMR ≤ {max_fnmr:g}, "
            f"even with a {PIN_DIGITS}-digit PIN "
            f"(at most {best_bits:.1f} bits with the PIN over the settings tried)"
        ),
    }
