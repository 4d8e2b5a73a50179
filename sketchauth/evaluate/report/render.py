"""Rendering a report dictionary as text: the Markdown page (``report.md``) and the terminal summary.

Both read the JSON form (:meth:`~sketchauth.evaluate.report.run.Report.as_dict`), so a stored
``report.json`` renders the same as a fresh run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["decode_check_line", "markdown", "standard_lines", "summary"]


def _eer_advice(malformed: int) -> str:
    if malformed:
        return f" ({malformed} comparisons had malformed probes: fix the data or the range first, see the notes)"
    return " (widen the sweep)"


def _pct(x: float) -> str:
    return f"{100 * x:.3g}%"


def _ci(ci: Sequence[float]) -> str:
    return f"[{_pct(ci[0])}, {_pct(ci[1])}]"


def _num(x: Any, digits: int = 1) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, str):
        return x
    return f"{x:.{digits}f}"


def decode_check_line(check: dict[str, Any]) -> str:
    """One sentence on the same-run check of the fast decisions against real decodes."""
    if not check:
        return "Fast decisions were not cross-checked against real decodes in this run."
    scope = (
        "every comparison" if check["all_trials"] else f"{check['checked']:,} of {check['total_trials']:,} comparisons"
    )
    return (
        f"{check['disagreements']} disagreements between the fast exact decider and real encode → decode on {scope} "
        f"({check['boundary_trials']:,} of them boundary trials, decided differently by two settings)"
    )


def _decode_check_lines(check: dict[str, Any]) -> list[str]:
    line = decode_check_line(check)
    if check and check["disagreements"]:
        examples = "; ".join(json.dumps(x, sort_keys=True) for x in check.get("examples", []))
        return [
            "",
            f"> **WARNING: {line}. The rates above do NOT equal the real scheme** — report this as a bug "
            f"of the evaluation. First disagreements: {examples}",
        ]
    return [f"Cross-check: {line}."]


def markdown(r: dict[str, Any]) -> str:
    """The human-readable summary of a report dictionary."""
    lines = _error_rate_lines(r)
    lines += _operating_point_lines(r)
    lines += _leakage_lines(r["leakage"])
    lines += _unlinkability_lines(r["unlinkability"])
    if r.get("iso_30136"):
        lines += standard_lines(r["iso_30136"])
    if r["figures"]:
        lines += ["", "## Figures", ""] + [f"![{f}]({f})" for f in r["figures"]]
    for n in r["notes"]:
        lines.append(f"\nNote: {n}")
    return "\n".join(lines) + "\n"


def _error_rate_lines(r: dict[str, Any]) -> list[str]:
    """Title, data description and the error-rate table with its EER, decode and baseline lines."""
    er, data = r["error_rates"], r["data"]
    lines = [
        f"# sketchauth evaluation: {r['scheme']}",
        "",
        f"Parameters `{json.dumps(r['params'], sort_keys=True)}`, swept `{r['sweep']}`, seed {r['seed']}.",
        f"Data: {data['source']} — {data['identities']} identities, {data['samples']} samples; "
        f"enrolment from the first {er['enrol_samples']} sample(s); {er['genuine_trials']} genuine and "
        f"{er['impostor_trials']} impostor comparisons per setting.",
        "",
        data.get("protocol", {}).get("statement", ""),
        "",
        "## Error rates (protected: each scheme's exact acceptance rule, cross-checked by real encode → decode)",
        "",
        f"| {r['sweep']} | FNMR (errors/trials) | 95% {_method(r)} | 95% over people "
        f"| FMR (errors/trials) | 95% {_method(r)} | 95% over people |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    lines += [_error_rate_row(p) for p in er["points"]]
    lines += [
        "",
        f"{_method(r)} intervals treat comparisons as independent; the intervals over people resample whole enrolled "
        "identities (seeded bootstrap, ISO/IEC 19795-1) and are the ones to quote when one person's comparisons "
        "are correlated.",
    ]
    eer = er["eer"]
    malformed = sum(int(p.get("malformed_probes", 0)) for p in er["points"])
    lines += [
        "",
        f"EER over the sweep: {'not reached' + _eer_advice(malformed) if eer is None else _pct(eer)}"
        + (f" (interpolated; FVC low/high {_ci(er['eer_fvc_low_high'])})." if er.get("eer_fvc_low_high") else "."),
    ]
    if malformed:
        lines.append(
            f"**{malformed} comparisons used a probe the scheme refuses** (counted as rejections; see the notes)."
        )
    lines += _decode_check_lines(er.get("decode_check") or {})
    if er["crosscheck"]:
        cc = er["crosscheck"]
        lines.append(f"Cross-check against argon2 `verify`: {cc['agreed']}/{cc['checked']} decisions agree.")
    if er["baselines"]:
        lines += ["", "Unprotected matching of the same templates and probes:", ""]
        lines += [_baseline_line(b) for b in er["baselines"]]
    return lines


def _method(r: dict[str, Any]) -> str:
    """The rates' interval method as a table heading."""
    return {"wilson": "Wilson", "clopper-pearson": "Clopper–Pearson"}.get(r.get("interval_method", "wilson"), "")


def _error_rate_row(p: dict[str, Any]) -> str:
    """One row of the error-rate table: a setting's FNMR and FMR with their intervals."""
    return (
        f"| {p['setting']} | {_pct(p['fnmr'])} ({p['false_non_matches']}/{p['genuine_trials']}) | "
        f"{_ci(p['fnmr_ci'])} | "
        f"{_ci(p['fnmr_ci_identity']) if 'fnmr_ci_identity' in p else '—'} | "
        f"{_pct(p['fmr'])} ({p['false_matches']}/{p['impostor_trials']}) | {_ci(p['fmr_ci'])} | "
        f"{_ci(p['fmr_ci_identity']) if 'fmr_ci_identity' in p else '—'} |"
    )


def _baseline_line(b: dict[str, Any]) -> str:
    """One unprotected-matching baseline: its EER and the rates at the target FMR and FNMR."""
    return (
        f"- {b['metric']} distance: EER {_pct(b['eer'])} (FVC low/high {_ci(b['eer_fvc_low_high'])}); "
        f"FNMR at FMR ≤ {b['target_fmr']:g}: {_pct(b['fnmr_at_target_fmr'])} "
        f"{_ci(b['fnmr_at_target_fmr_ci'])}; "
        f"FMR at FNMR ≤ {b['target_fnmr']:g}: {_pct(b['fmr_at_target_fnmr'])} {_ci(b['fmr_at_target_fnmr_ci'])}"
    )


def _operating_point_lines(r: dict[str, Any]) -> list[str]:
    """The chosen setting's rates against the NIST SP 800-63B-4 targets."""
    op = r["operating_point"]
    return [
        "",
        "## Operating point",
        "",
        f"{r['sweep']} = {op['setting']}: FNMR {_pct(op['fnmr'])} {_ci(op['fnmr_ci'])}, "
        f"FMR {_pct(op['fmr'])} {_ci(op['fmr_ci'])} — "
        + ("meets" if op["meets_targets"] else "does **not** meet")
        + " the NIST SP 800-63B-4 targets (FMR ≤ 1/10,000, FNMR < 5%)"
        + (_OPTIMISTIC if op.get("chosen_on_evaluated_people") else "."),
    ]


#: Said of an operating point picked from the sweep on the people it is then measured on.
_OPTIMISTIC = (
    " — **optimistic**: this setting was chosen on the evaluated people themselves; a setting "
    "calibrated on a background (``sketchauth features fit``) and measured here is the honest figure."
)


def _leakage_lines(lk: dict[str, Any]) -> list[str]:
    """The leakage bound, the remaining entropy and the attack costs, one bullet each."""
    lines = [
        "",
        "## Leakage and attack costs",
        "",
        f"- loss bound |S| − H∞(R) = {_num(lk['sketch_bits'])} − {_num(lk['randomness_bits'])} = "
        f"**{_num(lk['loss_bound_bits'])} bits**",
        f"- source min-entropy ({lk['source_entropy_origin']}): {_num(lk['source_min_entropy_bits'])} bits; "
        f"remaining H̃∞(d|S) ≥ **{_num(lk['remaining_bits'])} bits**",
    ]
    og = lk["offline_guessing"]
    if og["hash"] is not None:
        lines.append(
            f"- offline guessing: 2^{_num(og['log2_argon2_evaluations'])} argon2id evaluations at profile "
            f"`{og['hash']['profile']}` ({og['hash']['cpu_seconds'] * 1000:.1f} ms CPU each) "
            f"≈ 2^{_num(og['log2_cpu_years'])} CPU years"
        )
    fa = lk["false_accept_attack"]
    if fa is not None:
        bits = "∞ (no false match observed)" if fa["bits"] is None else f"{fa['bits']:.1f}"
        lines.append(
            f"- false-accept attack log2(1/FMR): {bits} bits; at least {fa['bits_ci'][0]:.1f} bits (95% upper FMR)"
        )
    lines += _attack_lines(lk.get("offline_attack"), lk.get("pin_cascade"))
    ex = lk["exact_small_instance"]
    if ex is not None:
        lines.append(_exact_instance_line(ex))
    for n in lk["notes"]:
        lines.append(f"- note: {n}")
    return lines


def _attack_lines(oa: dict[str, Any] | None, pc: dict[str, Any] | None) -> list[str]:
    """The database attack's cost and the PIN cascade's remaining entropy, when evaluated."""
    lines = []
    if oa is not None:
        med = oa["median_argon2_evaluations"]
        lines.append(
            "- offline attack with the database (other people's samples through helper data and hash): "
            + (
                f"> {oa['tries_per_person']} tries for most people"
                if med is None
                else f"median {med:g} argon2 evaluations to the first success"
            )
            + f"; {oa['broken']}/{oa['people']} people broken within {oa['tries_per_person']} tries"
        )
    if pc is not None:
        lines.append(
            f"- with a 6-digit PIN cascade (Theorem 7, β = {pc['beta']:.1f}): "
            f"remaining ≥ {pc['residual_bits']:.1f} bits ({pc['diverted_bits']:+.1f} diverted to the PIN)"
        )
    return lines


def _exact_instance_line(ex: dict[str, Any]) -> str:
    """The exact leakage of the small instance and its repeated-enrolment Chernoff rate."""
    rate = ex["chernoff_rate_bits"]
    rate_text = rate if isinstance(rate, str) else _num(rate, 3)
    return (
        f"- exact leakage of the small instance `{json.dumps(ex['params'], sort_keys=True)}` over {ex['secrets']} "
        f"uniform secrets: {ex['exact_loss_bits']:.3f} bits (bound {ex['loss_bound_bits']:.3f}); "
        f"repeated-enrolment Chernoff rate: {rate_text} bits per enrolment"
    )


def _unlinkability_lines(ul: dict[str, Any] | None) -> list[str]:
    """The linkage attack's D↔sys and the template fraction recovered from two linked sketches."""
    lines = ["", "## Unlinkability", ""]
    if ul is None:
        lines.append("Not evaluated (see notes).")
        return lines
    rev = ul["reversibility"]
    lines += [
        f"Attack `{ul['attack']}` ({ul['description']}) on {ul['mated_pairs']} mated and "
        f"{ul['nonmated_pairs']} non-mated pairs:",
        f"**D↔sys = {ul['d_sys']:.3f}** (0 unlinkable, 1 fully linkable; ω = {ul['omega']:g})" + _chance(ul) + ".",
        f"Reversibility: {rev['method']} — {_pct(rev['recovered_fraction'])} of the template recovered "
        "from two linked sketches.",
    ]
    return lines


def _chance(x: dict[str, Any]) -> str:
    if x.get("chance_d_sys_p95") is None:
        return ""
    return (
        f"; chance level {x['chance_d_sys_mean']:.3f} (95th percentile {x['chance_d_sys_p95']:.3f}, labels permuted"
        + (f"; p = {x['p_value']:.3g}" if x.get("p_value") is not None else "")
        + ")"
    )


def standard_lines(iso: dict[str, Any]) -> list[str]:
    """The ISO/IEC 30136 / 24745 section: performance, irreversibility, unlinkability, renewability."""
    pf, ir = iso["performance"], iso["irreversibility"]
    ((name, setting),) = pf["setting"].items()
    eer = "not reached" if pf["eer_over_sweep"] is None else _pct(pf["eer_over_sweep"])
    unprotected = ", ".join(f"{m} {_pct(e)}" for m, e in pf["eer_unprotected"].items()) or "no baseline"
    bound = ir["bound"]
    lines = [
        "",
        f"## {' / '.join(iso['standards'])}: protected references",
        "",
        f"Reference: {iso['reference']}.",
        "",
        f"- **Performance** at {name} = {setting}: FNMR {_pct(pf['fnmr'])} "
        f"({pf['false_non_matches']}/{pf['genuine_trials']}) {_ci(pf['fnmr_ci'])}, FMR {_pct(pf['fmr'])} "
        f"({pf['false_matches']}/{pf['impostor_trials']}) {_ci(pf['fmr_ci'])} (95% {pf['interval']}"
        + (f"; over people {_ci(pf['fmr_ci_over_people'])}" if pf.get("fmr_ci_over_people") else "")
        + f"); EER {eer} over the sweep, unprotected EER {unprotected}.",
        f"- **Irreversibility** — provable bound: loss ≤ {_num(bound['loss_bound_bits'])} bits, remaining "
        f"H̃∞(d|S) ≥ {_num(bound['remaining_bits'])} bits (source {_num(bound['source_min_entropy_bits'])} bits, "
        f"{bound['source_entropy_origin']}); measured on one record: " + _one_record(ir) + ".",
    ]
    two = ir["two_linked_records"]
    if two is not None:
        lines.append(f"  Two linked records ({two['method']}): {_pct(two['recovered_fraction'])} of the template.")
    ul = iso["unlinkability"]
    lines.append(
        "- **Unlinkability**: not evaluated (see notes)."
        if ul is None
        else f"- **Unlinkability** ({ul['attack']}, {ul['mated_pairs']} mated / {ul['nonmated_pairs']} non-mated "
        f"pairs): D↔sys = {ul['d_sys']:.3f}"
        + _chance(ul)
        + ("" if ul.get("linkable") is None else (" — **linkable**" if ul["linkable"] else " — unlinkable"))
        + "."
    )
    lines += _renewability_lines(iso["renewability"])
    return lines


def _one_record(ir: dict[str, Any]) -> str:
    parts = []
    oa = ir["attack_on_one_record"]
    if oa is not None:
        parts.append(
            f"the offline attack with the database broke {oa['broken']}/{oa['people']} people within "
            f"{oa['tries_per_person']} tries"
        )
    if ir["false_accept_attack_bits_lower"] is not None:
        parts.append(f"false-accept attack ≥ {ir['false_accept_attack_bits_lower']:.1f} bits")
    return "; ".join(parts) or "no attack run"


def _renewability_lines(rn: dict[str, Any] | None) -> list[str]:
    if rn is None:
        return ["- **Renewability**: not evaluated (see notes)."]
    lines = [f"- **Renewability** (old vs renewed reference of each person, {rn['mated_pairs']} mated pairs):"]
    for name, sc in rn["scenarios"].items():
        verdict = "unlinkable" if sc["renewable"] else "**linkable**"
        lines.append(
            f"  - {name.replace('_', ' ')} ({sc['stores']}): D↔sys = {sc['d_sys']:.3f}" + _chance(sc) + f" — {verdict}"
        )
    lines.append("  - fresh sketch randomness alone (no pepper, or the pepper stolen too): the unlinkability above.")
    return lines


def summary(r: dict[str, Any], out: Any) -> str:
    """The key numbers of a report, a few lines for the terminal."""
    lines = [*_summary_rates(r), *_summary_leakage(r["leakage"])]
    lines.append(r["data"].get("protocol", {}).get("statement", ""))
    lines += _summary_attacks(r)
    lines.append(
        f"wrote {Path(out) / 'report.json'}, report.md" + (f", {', '.join(r['figures'])}" if r["figures"] else "")
    )
    return "\n".join(lines)


def _summary_rates(r: dict[str, Any]) -> list[str]:
    """The error rates per setting, the baselines and the operating point."""
    er, op = r["error_rates"], r["operating_point"]
    lines = [
        f"{r['scheme']} {json.dumps(r['params'], sort_keys=True)}: {er['identities']} identities, "
        f"{er['genuine_trials']} genuine + {er['impostor_trials']} impostor comparisons per setting",
    ]
    for p in er["points"]:
        lines.append(
            f"  {r['sweep']}={p['setting']}: FNMR {_pct(p['fnmr'])} {_ci(p['fnmr_ci'])}  "
            f"FMR {_pct(p['fmr'])} {_ci(p['fmr_ci'])}"
        )
    lines.append(f"  EER (sweep): {'not reached' if er['eer'] is None else _pct(er['eer'])}")
    malformed = sum(int(p.get("malformed_probes", 0)) for p in er["points"])
    if malformed:
        lines.append(
            f"  malformed probes: {malformed} comparisons refused by the scheme "
            "(counted as rejections; see report notes)"
        )
    for b in er["baselines"]:
        lines.append(
            f"  unprotected {b['metric']}: EER {_pct(b['eer'])}, FNMR@FMR<=1e-4 {_pct(b['fnmr_at_target_fmr'])}"
        )
    lines.append(
        f"operating point {r['sweep']}={op['setting']}: FNMR {_pct(op['fnmr'])}, FMR {_pct(op['fmr'])}"
        + (" (meets NIST targets" if op["meets_targets"] else " (misses NIST targets")
        + ("; optimistic: setting chosen on these people)" if op.get("chosen_on_evaluated_people") else ")")
    )
    return lines


def _summary_leakage(lk: dict[str, Any]) -> list[str]:
    """The leakage bound, the offline guessing cost and the attacks with the database."""
    lines: list[str] = []
    og = lk["offline_guessing"]
    lines.append(
        f"leakage: bound {lk['loss_bound_bits']:.1f} bits; source {_num(lk['source_min_entropy_bits'])} bits "
        f"({lk['source_entropy_origin']}); remaining {_num(lk['remaining_bits'])} bits; "
        f"offline guessing 2^{_num(og['log2_cpu_seconds'])} CPU s"
    )
    fa = lk["false_accept_attack"]
    if fa is not None:
        lines.append(
            "false-accept attack: "
            + (
                f"{fa['bits']:.1f} bits"
                if fa["bits"] is not None
                else f">= {fa['bits_ci'][0]:.1f} bits (no false match seen)"
            )
        )
    oa, pc = lk.get("offline_attack"), lk.get("pin_cascade")
    if oa is not None:
        med = oa["median_argon2_evaluations"]
        lines.append(
            "offline attack with the database: "
            + (
                f"> {oa['tries_per_person']} tries for most people"
                if med is None
                else f"median {med:g} argon2 evaluations"
            )
            + f" ({oa['broken']}/{oa['people']} broken)"
        )
    if pc is not None:
        lines.append(
            f"with a 6-digit PIN cascade: remaining >= {pc['residual_bits']:.1f} bits "
            f"({pc['diverted_bits']:+.1f} diverted)"
        )
    return lines


def _summary_attacks(r: dict[str, Any]) -> list[str]:
    """Unlinkability, renewability and the cross-checks of the decisions."""
    er, ul = r["error_rates"], r["unlinkability"]
    lines: list[str] = []
    if ul is not None:
        lines.append(
            f"unlinkability ({ul['attack']}): D<->sys = {ul['d_sys']:.3f}"
            + (f" (chance p95 {ul['chance_d_sys_p95']:.3f})" if ul.get("chance_d_sys_p95") is not None else "")
            + "; "
            f"reversibility {_pct(ul['reversibility']['recovered_fraction'])} of the template"
        )
    rn = r.get("renewability")
    if rn is not None:
        lines.append(
            "renewability: "
            + ", ".join(f"{k.replace('_', ' ')} D<->sys {v['d_sys']:.3f}" for k, v in rn["scenarios"].items())
        )
    if er.get("decode_check"):
        flag = "WARNING: " if er["decode_check"]["disagreements"] else ""
        lines.append(f"{flag}decode cross-check: {decode_check_line(er['decode_check'])}")
    if er["crosscheck"]:
        cc = er["crosscheck"]
        lines.append(f"argon2 verify cross-check: {cc['agreed']}/{cc['checked']} agree")
    return lines
