"""The report's ISO/IEC 30136 / ISO/IEC 24745 section: what the standards ask of a protected reference.

ISO/IEC 24745 (biometric information protection) requires of a renewable biometric reference —
here the stored record: the sketch's helper data (*auxiliary data*, AD) and the argon2id hash of
the secret it corrects to (the *pseudonymous identifier*, PI) — **irreversibility**,
**unlinkability** and **renewability** (revocability) without giving up **performance**.
ISO/IEC 30136 (performance testing of template protection schemes) says how to measure them.
The section restates what the report measured in that vocabulary, from the report's own
numbers (nothing is recomputed here):

* **performance** — FNMR and FMR of the protected comparison at the operating point with their
  95% intervals (the report's interval method: Wilson or exact Clopper–Pearson) and over people,
  the EER over the sweep and the unprotected baselines' EER (the performance the protection costs);
* **irreversibility** — the *provable bound* (the sketch's entropy loss ``|S| − H∞(R)`` and the
  remaining ``H̃∞(d|S)`` of the source, Dodis et al.) and the *measured attacks on one stored
  record*: the offline attack with the database (other people's samples through the helper data
  and the hash) and the false-accept attack ``log2(1/FMR)``; beside them what *two* linked
  records give away (the reversibility probe of the unlinkability evaluation);
* **unlinkability** — ``D↔sys`` (Gomez-Barrero et al., IEEE TIFS 2018; the global measure ISO/IEC
  30136 adopts) of the scheme's linkage attack on two enrolments of each person, with its chance
  level (labels permuted: what the estimator reads from unlinkable pairs of the same sizes) and
  permutation p-value; *linkable* below ``p = 0.01``;
* **renewability** — old and renewed references of each person attacked across a pepper
  rotation and inside one deployment (:mod:`sketchauth.evaluate.renewability`); renewal by
  fresh randomness alone is the unlinkability measurement.
"""

from __future__ import annotations

from typing import Any

from sketchauth.evaluate.renewability import LINKED_P_VALUE

__all__ = ["STANDARDS", "standard_section"]

#: The standards the section follows.
STANDARDS = ("ISO/IEC 24745:2022", "ISO/IEC 30136:2018")


def _performance(r: dict[str, Any]) -> dict[str, Any]:
    op, er = r["operating_point"], r["error_rates"]
    keys = ("fnmr", "fnmr_ci", "fmr", "fmr_ci", "false_non_matches", "genuine_trials", "false_matches")
    point: dict[str, Any] = next((p for p in er["points"] if p["setting"] == op["setting"]), {})
    return {
        "setting": {r["sweep"]: op["setting"]},
        **{k: op[k] for k in (*keys, "impostor_trials")},
        "interval": r.get("interval_method", "wilson"),
        "fnmr_ci_over_people": point.get("fnmr_ci_identity"),
        "fmr_ci_over_people": point.get("fmr_ci_identity"),
        "eer_over_sweep": er["eer"],
        "eer_unprotected": {b["metric"]: b["eer"] for b in er["baselines"]},
        "meets_targets": op["meets_targets"],
        "target_fmr": op["target_fmr"],
        "target_fnmr": op["target_fnmr"],
    }


def _irreversibility(r: dict[str, Any]) -> dict[str, Any]:
    lk, ul = r["leakage"], r["unlinkability"]
    fa = lk["false_accept_attack"]
    return {
        "bound": {
            "sketch_bits": lk["sketch_bits"],
            "loss_bound_bits": lk["loss_bound_bits"],
            "source_min_entropy_bits": lk["source_min_entropy_bits"],
            "source_entropy_origin": lk["source_entropy_origin"],
            "remaining_bits": lk["remaining_bits"],
        },
        "attack_on_one_record": lk.get("offline_attack"),
        "false_accept_attack_bits": None if fa is None else fa["bits"],
        "false_accept_attack_bits_lower": None if fa is None else fa["bits_ci"][0],
        "two_linked_records": None if ul is None else ul["reversibility"],
    }


def _unlinkability(r: dict[str, Any]) -> dict[str, Any] | None:
    ul = r["unlinkability"]
    if ul is None:
        return None
    return {
        "attack": ul["attack"],
        "d_sys": ul["d_sys"],
        "chance_d_sys_mean": ul.get("chance_d_sys_mean"),
        "chance_d_sys_p95": ul.get("chance_d_sys_p95"),
        "p_value": ul.get("p_value"),
        "linkable": None if ul.get("p_value") is None else ul["p_value"] < LINKED_P_VALUE,
        "mated_pairs": ul["mated_pairs"],
        "nonmated_pairs": ul["nonmated_pairs"],
        "omega": ul["omega"],
    }


def standard_section(r: dict[str, Any]) -> dict[str, Any]:
    """The section (module docstring) from a report dictionary (its other keys, as JSON)."""
    return {
        "standards": list(STANDARDS),
        "reference": "stored record = auxiliary data (the sketch's helper data) + pseudonymous identifier "
        "(argon2id hash of the corrected secret)",
        "performance": _performance(r),
        "irreversibility": _irreversibility(r),
        "unlinkability": _unlinkability(r),
        "renewability": r.get("renewability"),
    }
