"""Exact vectorised deciders equal real encode → decode, at and around every scheme's boundary."""

from __future__ import annotations

import contextlib
import json

import numpy as np
import pytest
from _helpers import evaluate_report

from sketchauth.evaluate.data import LabelledSets, LabelledVectors
from sketchauth.evaluate.deciders import (
    ASYMMETRIC_RULES,
    decide_exact,
    register_asymmetric_rule,
)
from sketchauth.evaluate.error_rates import Enrolled, decide_by_decoding, evaluate_adapter
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch


def _enrolled(sketch, secrets) -> Enrolled:
    secrets = [sketch.check_secret(s) for s in secrets]
    return Enrolled(
        tuple(sketch.encode(s) for s in secrets), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets)
    )


def _both(sketch, secrets, probes):
    """(fast, real) decisions of every secret against every probe."""
    enrolled = _enrolled(sketch, secrets)
    e = np.repeat(np.arange(len(secrets)), len(probes))
    q = np.tile(np.arange(len(probes)), len(secrets))
    return decide_exact(sketch, enrolled, probes, e, q), decide_by_decoding(sketch, enrolled, probes, e, q)


def test_interval_boundary_v_minus_1_accepted_v_rejected() -> None:
    sketch = IntervalSketch(n=64, v=[3, 5, 1])
    b = np.array([30, 30, 30])
    # b + Δ per feature (numpy addition, not list concatenation).
    shifts = [(dv, 0, 0) for dv in range(-4, 5)] + [(0, dv, 0) for dv in range(-6, 7)] + [(0, 0, 1)]
    probes = b + np.array(shifts)
    (fast, fast_bad), (real, real_bad) = _both(sketch, [b], probes)
    assert fast.tolist() == real.tolist() and fast_bad.tolist() == real_bad.tolist()
    # |Δ| = v − 1 accepted, |Δ| = v rejected, on both sides.
    assert fast.tolist()[:9] == [False, False, True, True, True, True, True, False, False]
    assert fast.tolist()[-1] is False


@pytest.mark.parametrize("scheme", ["s1", "s2"])
def test_asymmetric_boundary_cases_match_decode(scheme: str) -> None:
    sketch = AsymmetricIntervalSketch(n=40, q=6, scheme=scheme, features=2)
    secrets = [([20, 5], [4, 1]), ([10, 30], [1, 6]), ([3, 37], [3, 2])]
    probes = np.array([[x, y] for x in range(0, 40) for y in (5, 30, 37)])
    (fast, fast_bad), (real, real_bad) = _both(sketch, secrets, probes)
    assert fast.tolist() == real.tolist()
    assert not fast_bad.any() and not real_bad.any()


def test_s2_accepts_the_left_end_b_minus_v_and_s1_does_not() -> None:
    # The defect: the s2 rows assumed |Δ| < v, but the decoder also accepts d' = b − v.
    for scheme, expected in (("s1", [False, True, True, False]), ("s2", [True, True, True, False])):
        sketch = AsymmetricIntervalSketch(n=50, q=8, scheme=scheme, features=1)
        (fast, _), (real, _) = _both(sketch, [([25], [4])], np.array([[21], [22], [28], [29]]))
        assert fast.tolist() == real.tolist() == expected


def test_a_new_asymmetric_construction_without_a_rule_decodes_for_real() -> None:
    sketch = AsymmetricIntervalSketch(n=30, q=4, scheme="s2", features=1)
    saved = ASYMMETRIC_RULES.pop("s2")
    try:
        (fast, _), (real, _) = _both(sketch, [([15], [3])], np.arange(30)[:, None])
        assert fast.tolist() == real.tolist()
        # A wrong rule registered for it is decided by arrays (and the cross-check would see it).
        register_asymmetric_rule("s2", lambda delta, v: np.abs(delta) < v)
        (fast, _), (real, _) = _both(sketch, [([15], [3])], np.arange(30)[:, None])
        assert int(np.sum(fast != real)) == 1  # exactly d' = b − v
    finally:
        ASYMMETRIC_RULES["s2"] = saved


def test_code_offset_t_and_t_plus_1_byte_errors() -> None:
    sketch = CodeOffsetSketch(n=12, t=3)
    secret = bytes(range(12))
    probes = []
    for errors in range(0, 8):
        noisy = bytearray(secret)
        for k in range(errors):
            noisy[k] ^= 0xA5
        probes.append(bytes(noisy))
    (fast, _), (real, _) = _both(sketch, [secret], probes)
    assert fast.tolist() == real.tolist() == [True] * 4 + [False] * 4


def test_pinsketch_distance_t_and_t_plus_1_and_spurious_sets() -> None:
    # t = 1 on m = 8: every syndrome is one element, so a far sample usually decodes to a
    # *spurious* set within distance 1 of it — which the comparison must reject.
    rng = np.random.default_rng(3)
    for t in (1, 2, 4):
        sketch = PinSketch(m=8, t=t)
        secret = np.sort(rng.choice(np.arange(1, 256), size=12, replace=False))
        outside = np.setdiff1d(np.arange(1, 256), secret)
        probes = []
        for d in range(0, t + 4):
            drop = secret[: d // 2]
            add = outside[: d - d // 2]
            probes.append(np.sort(np.concatenate([np.setdiff1d(secret, drop), add])))
        probes += [np.sort(rng.choice(np.arange(1, 256), size=12, replace=False)) for _ in range(200)]
        (fast, _), (real, _) = _both(sketch, [secret], probes)
        assert fast.tolist() == real.tolist()
        assert fast.tolist()[: t + 4] == [True] * (t + 1) + [False] * 3
    # Spurious decodes did happen at t = 1 (decode returned a set, not the secret).
    sketch = PinSketch(m=8, t=1)
    helper = sketch.encode(secret)
    spurious = 0
    for p in probes[5:]:
        with contextlib.suppress(Exception):
            spurious += int(sketch.decode(helper, p).tolist() != secret.tolist())
    assert spurious > 0


def test_pinsketch_with_dependent_syndromes_accepts_exactly_within_t() -> None:
    # m = 8: t > 2^(⌈8/2⌉−1) = 8 makes some odd syndromes depend on others.
    sketch = PinSketch(m=8, t=11)
    rng = np.random.default_rng(5)
    secret = np.sort(rng.choice(np.arange(1, 256), size=40, replace=False))
    outside = np.setdiff1d(np.arange(1, 256), secret)
    probes = [
        np.sort(np.concatenate([np.setdiff1d(secret, secret[:k]), outside[: d - k]]))
        for d in range(0, 16)
        for k in (0, d // 2, d)
    ]
    (fast, _), (real, _) = _both(sketch, [secret], probes)
    assert fast.tolist() == real.tolist()
    distances = [np.setxor1d(secret, p).size for p in probes]
    assert fast.tolist() == [d <= 11 for d in distances]


def _boundary_vectors() -> LabelledVectors:
    """Identities whose later samples sit at b − v, b + v − 1 and b + v of an s2 enrolment."""
    rows, ids = [], []
    for i in range(12):
        b = 20 + 2 * i
        # Enrolment [b−1, b+1]: b, range 2, v = 2 + margin (margin 1 → v = 3).
        for x in (b - 1, b + 1, b - 3, b + 2, b + 3, b - 4):
            rows.append([x, b])
            ids.append(f"p{i}")
    return LabelledVectors(np.array(ids), np.array(rows))


def test_evaluation_through_the_adapter_counts_b_minus_v_and_reports_zero_disagreements() -> None:
    data = _boundary_vectors()
    result = evaluate_adapter(
        "asymmetric-interval", {"n": 80, "q": 8, "scheme": "s2", "features": 2}, data, [1], enrol_samples=2, seed=3
    )
    point = result.points[0]
    # Genuine probes b−3 (= b − v: accepted), b+2 (accepted), b+3 (= b + v: rejected), b−4: rejected.
    assert (point.false_non_matches, point.genuine_trials) == (2 * 12, 4 * 12)
    check = result.decode_check
    assert check["disagreements"] == 0 and check["all_trials"] and check["checked"] == check["total_trials"]


def test_cli_report_states_the_decode_check(tmp_path) -> None:
    data = _boundary_vectors()
    csv = tmp_path / "data.csv"
    csv.write_text("".join(f"{i},{r[0]},{r[1]}\n" for i, r in zip(data.identities, data.samples, strict=False)))
    out = tmp_path / "out"
    params = json.dumps({"n": 80, "q": 8, "scheme": "s2", "features": 2})
    scheme = ["--scheme", "asymmetric-interval", "--params", params]
    code = evaluate_report(out, *scheme, "--data", str(csv), "--sweep", "0,1,2", "--enrol-samples", "2")
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    check = report["error_rates"]["decode_check"]
    assert check["disagreements"] == 0 and check["all_trials"]
    assert "0 disagreements" in (out / "report.md").read_text()


def test_sets_through_the_adapter_match_real_decodes() -> None:
    rng = np.random.default_rng(2)
    sets, ids = [], []
    for i in range(15):
        base = rng.choice(np.arange(1, 256), size=10, replace=False)
        for _ in range(3):
            noisy = set(base.tolist()) ^ set(rng.choice(np.arange(1, 256), size=int(rng.integers(0, 6))).tolist())
            sets.append(np.array(sorted(noisy)))
            ids.append(i)
    data = LabelledSets(np.array(ids), tuple(sets))
    result = evaluate_adapter("pinsketch", {"m": 8}, data, [1, 2, 4, 6], enrol_samples=1, seed=1)
    assert result.decode_check["disagreements"] == 0 and result.decode_check["all_trials"]


def test_a_wrong_fast_decider_is_reported_loudly(tmp_path) -> None:
    from sketchauth.evaluate.error_rates import RunOptions, SweepSpec, enrol_rounded_mean, evaluate_scheme
    from sketchauth.evaluate.report import markdown

    def too_strict(sketch, enrolled, probes, e, q):
        accepted, malformed = decide_exact(sketch, enrolled, probes, e, q)
        return accepted & (np.arange(e.size) % 7 != 0), malformed

    data = _boundary_vectors()
    result = evaluate_scheme(
        lambda v: IntervalSketch(n=80, v=v, features=2), enrol_rounded_mean, data, [3, 4], run=RunOptions(seed=1)
    )
    assert result.decode_check["disagreements"] == 0
    wrong = evaluate_scheme(
        lambda v: IntervalSketch(n=80, v=v, features=2),
        enrol_rounded_mean,
        data,
        [3, 4],
        run=RunOptions(seed=1),
        sweep=SweepSpec(decide=too_strict),
    )
    assert wrong.decode_check["disagreements"] > 0 and wrong.decode_check["examples"]
    payload = {"error_rates": wrong.to_dict()}
    from sketchauth.evaluate.report.render import _decode_check_lines

    text = "\n".join(_decode_check_lines(payload["error_rates"]["decode_check"]))
    assert "WARNING" in text and "do NOT equal the real scheme" in text
    assert callable(markdown)


def test_interval_tiles_with_per_feature_tolerances_equal_real_decode() -> None:
    # 19 features: the word-wise reduction of the decider spans three 64-bit words, the last padded.
    from sketchauth.evaluate.deciders import prepare_decider

    rng = np.random.default_rng(11)
    v = rng.integers(1, 8, 19)
    sketch = IntervalSketch(n=40, v=v.tolist())
    secrets = rng.integers(0, 40, (12, 19))
    owners = rng.integers(0, 12, 300)
    # Now and then one feature moved by up to v (|Δ| = v rejects): accepted and rejected pairs both occur.
    shift = rng.integers(-1, 2, (300, 19)) * rng.integers(0, v + 1, (300, 19)) * (rng.random((300, 19)) < 0.05)
    probes = np.clip(secrets[owners] + shift, 0, 39)
    enrolled = _enrolled(sketch, secrets)
    accepted, malformed = prepare_decider(decide_exact, sketch, enrolled, probes).tile(0, 12, 0, 300)
    e = np.repeat(np.arange(12), 300)
    q = np.tile(np.arange(300), 12)
    real, real_bad = decide_by_decoding(sketch, enrolled, probes, e, q)
    assert accepted.ravel().tolist() == real.tolist() and malformed.ravel().tolist() == real_bad.tolist()
    assert 0 < int(accepted.sum()) < accepted.size  # both outcomes occur


def test_real_decode_recovers_and_the_disagreement_tally() -> None:
    """The shared cross-check step: real decode under a helper, and the count of rule disagreements."""
    from sketchauth.evaluate.deciders import Disagreements, real_decode_recovers
    from sketchauth.sketches.interval import IntervalSketch

    sketch = IntervalSketch(n=256, v=4, features=3)
    secret = sketch.check_secret([10, 20, 30])
    helper, canonical = sketch.encode(secret), sketch.secret_bytes(secret)
    assert real_decode_recovers(sketch, helper, canonical, [11, 19, 30])
    assert not real_decode_recovers(sketch, helper, canonical, [200, 20, 30])
    assert not real_decode_recovers(sketch, helper, b"\x00" + canonical[1:], [10, 20, 30])
    tally = Disagreements()
    for q in range(8):
        tally.record(real=q % 2 == 0, rule=True, template=0, probe=q)
    assert tally.count == 4
    assert tally.examples[0] == {"template": 0, "probe": 1, "rule_accepts": True}
    for q in range(8, 20):
        tally.record(real=False, rule=True, template=0, probe=q)
    assert tally.count == 16 and len(tally.examples) == 5
