"""Key-guessing simulation and chaff-sketch counting (sketchauth.evaluate.guessing, Fang's thesis, ch. 7)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from sketchauth.cli import main
from sketchauth.errors import ParameterError
from sketchauth.evaluate.guessing import (
    _table,
    chaff_sketches,
    count_chaff_sketches,
    default_secrets,
    expected_success,
    guessing_experiment,
)
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch


def _brute_force(n: int, d: int) -> int:
    count = 0
    for mask in range(1, 1 << n):
        pts = [i for i in range(n) if mask >> i & 1]
        if any(b - a <= d for a, b in itertools.pairwise(pts)):
            continue
        count += all(any(abs(x - p) <= d for p in pts) for x in range(n))
    return count


def test_count_chaff_sketches_exact_values():
    assert count_chaff_sketches(6, 1) == 5
    assert count_chaff_sketches(12, 2) == 31
    assert count_chaff_sketches(16, 2) == 96
    assert count_chaff_sketches(20, 3) == 215 == ChaffPointSketch(20, 3).sketch_count
    assert list(chaff_sketches(6, 1)) == [(0, 2, 4), (0, 2, 5), (0, 3, 5), (1, 3, 5), (1, 4)]


@pytest.mark.parametrize("n", range(2, 13))
def test_count_chaff_sketches_matches_brute_force_and_the_rank_dp(n):
    for d in range(1, n):
        assert count_chaff_sketches(n, d) == _brute_force(n, d) == ChaffPointSketch(n, d).sketch_count


def test_chaff_attack_beats_the_baseline_on_a_fixed_seed():
    r = guessing_experiment(ChaffPointSketch(12, 2), key_bits=3, trials=20_000, seed=7, estimate_encodings=100_000)
    assert (r.successes, r.success_rate, r.baseline) == (4150, 0.2075, 0.125)
    assert r.distinct_sketches == 31 and r.group_bits == pytest.approx(4.954196310386876)
    assert r.expected_success == pytest.approx(0.21104459153101368)
    assert r.ci95[0] > r.baseline  # the skewed chaff distribution gives the key away
    assert r.ci95[0] <= r.expected_success <= r.ci95[1]
    assert r.advantage == pytest.approx(0.2075 / 0.125)


def test_naive_shift_mixing_on_a_fixed_seed():
    r = guessing_experiment(
        ChaffPointSketch(12, 2), key_bits=3, trials=20_000, seed=7, estimate_encodings=100_000, mixing="shift"
    )
    assert r.successes == 4491
    assert r.expected_success == pytest.approx(0.22646742724867724)
    assert r.ci95[0] <= r.expected_success <= r.ci95[1]


def test_real_shake_pads_agree_with_the_random_oracle_model():
    r = guessing_experiment(
        ChaffPointSketch(12, 2), key_bits=2, trials=200, seed=7, estimate_encodings=100_000, mixing="shake"
    )
    assert r.successes == 69
    assert r.ci95[0] <= r.expected_success <= r.ci95[1]


def test_uniform_sketch_gives_no_advantage():
    # b uniform on [0, 10), S = b mod 5 is uniform: every key's inverse is as likely.
    r = guessing_experiment(IntervalSketch(n=10, v=3), key_bits=2, trials=20_000, seed=7, estimate_encodings=100_000)
    assert r.successes == 4951 and r.expected_success == 0.25
    assert r.ci95[0] <= 0.25 <= r.ci95[1]


def test_expected_success_closed_form_by_hand():
    # Chaff (6, 1), one secret point uniform on [0, 6): by hand, the five sketches (ranks 0..4)
    # have probabilities 37, 27, 27, 37, 16 (/144).
    table = _table(ChaffPointSketch(6, 1), list(ChaffPointSketch(6, 1).secret_space()))
    p = [37 / 144, 27 / 144, 27 / 144, 37 / 144, 16 / 144]
    # One-bit key (K = 2): the other inverse is uniform on 5 values; the attacker wins if it is
    # less likely and half the time if it ties: sum p(s) * (a + e/2).
    by_hand = sum(ps * (sum(q < ps for q in p) + 0.5 * sum(q == ps for q in p)) / 5 for ps in p)
    assert by_hand == pytest.approx(103 / 180)
    assert expected_success(table, "pad", 2) == pytest.approx(103 / 180)


def test_default_secrets_and_argument_checks():
    assert len(default_secrets(ChaffPointSketch(12, 2))) == 12
    assert len(default_secrets(IntervalSketch(n=10, v=3, features=2))) == 100
    with pytest.raises(ParameterError):
        default_secrets(CodeOffsetSketch(4, 1))
    with pytest.raises(ParameterError):
        default_secrets(IntervalSketch(n=1000, v=3, features=2))
    with pytest.raises(ParameterError):
        guessing_experiment(ChaffPointSketch(12, 2), key_bits=0, trials=10, seed=1)
    with pytest.raises(ParameterError):
        guessing_experiment(ChaffPointSketch(12, 2), key_bits=2, trials=10, seed=1, mixing="rot13")
    with pytest.raises(ParameterError):
        # 2^64 values per symbol do not fit the simulation's integer ids.
        guessing_experiment(CodeOffsetSketch(8, 1), key_bits=2, trials=10, seed=1, secrets=[bytes(8)])


def test_cli_prints_json_and_progress(capsys, monkeypatch):
    import sys

    args = [
        "evaluate",
        "guessing",
        "--universe",
        "12",
        "--min-distance",
        "2",
        "--key-bits",
        "3",
        "--trials",
        "20000",
        "--estimate",
        "100000",
        "--seed",
        "7",
    ]
    assert main(args) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    assert out["successes"] == 4150 and out["baseline"] == 0.125 and out["scheme"] == "chaff-point"
    assert captured.err == ""  # not a terminal: no progress bar
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(args) == 0
    assert "guessing" in capsys.readouterr().err  # on a terminal: the tqdm bar
    assert main([*args, "--quiet"]) == 0
    assert capsys.readouterr().err == ""


def test_cli_interval_to_file(tmp_path: Path, capsys):
    target = tmp_path / "g.json"
    args = [
        "evaluate",
        "guessing",
        "--family",
        "interval",
        "--n",
        "10",
        "--v",
        "3",
        "--key-bits",
        "2",
        "--trials",
        "20000",
        "--estimate",
        "100000",
        "--seed",
        "7",
        "--json",
        str(target),
    ]
    assert main(args) == 0
    assert json.loads(target.read_text())["successes"] == 4951
    assert "baseline 0.250000" in capsys.readouterr().out


def test_cli_reports_library_errors(capsys):
    assert main(["evaluate", "guessing", "--universe", "5000", "--min-distance", "1"]) == 2
    assert "sketchauth: error" in capsys.readouterr().err


def test_shift_pads_reduce_the_key_into_every_symbol():
    from sketchauth.evaluate.guessing import _Group
    from sketchauth.sketches.base import SymbolSpace

    xor = _Group.of(SymbolSpace("xor", bits=2), 3)
    assert xor.shifts(6)[:, 0].tolist() == [0, 1, 2, 3, 0, 1]  # k & 0b11
    mod = _Group.of(SymbolSpace("mod", moduli=[3, 5]), 2)
    assert mod.shifts(6).tolist() == [[0, 0], [1, 1], [2, 2], [0, 3], [1, 4], [2, 0]]


def test_group_mix_is_the_library_mix_broadcast_over_trials_and_keys():
    import numpy as np

    from sketchauth.evaluate.guessing import _Group
    from sketchauth.sketches.base import SymbolSpace

    mod = _Group.of(SymbolSpace("mod", moduli=[3, 5]), 2)
    s = np.array([[2, 4]], dtype=np.uint64)
    pads = np.array([[[0, 0], [1, 1], [2, 4]]], dtype=np.uint64)  # (trial, key, symbol)
    q = mod.mix(s[:, None, :], pads)
    assert q.tolist() == [[[2, 4], [0, 0], [1, 3]]]
    assert (mod.unmix(q, pads) == s[:, None, :]).all()
    xor = _Group.of(SymbolSpace("xor", bits=3), 2)
    assert xor.space == SymbolSpace("xor", bits=3)
    assert xor.mix(np.array([5, 1], dtype=np.uint64), np.array([3, 7], dtype=np.uint64)).tolist() == [6, 6]


def test_exact_pad_success_by_hand_and_against_the_float_closed_form():
    from fractions import Fraction

    from sketchauth.evaluate.guessing import exact_pad_success

    sk = ChaffPointSketch(6, 1)
    distribution = sk.sketch_distribution()
    assert sorted(distribution.values()) == [
        Fraction(16, 144),
        Fraction(27, 144),
        Fraction(27, 144),
        Fraction(37, 144),
        Fraction(37, 144),
    ]
    assert exact_pad_success(distribution.values(), sk.sketch_count, 1) == Fraction(103, 180)  # by hand, above
    table = _table(ChaffPointSketch(12, 2), list(ChaffPointSketch(12, 2).secret_space()))
    exact = exact_pad_success(ChaffPointSketch(12, 2).sketch_distribution().values(), 31, 3)
    assert float(exact) == pytest.approx(expected_success(table, "pad", 8), rel=1e-12)
    # a uniform sketch gives exactly the baseline 1/K
    assert exact_pad_success([Fraction(1, 5)] * 5, 5, 3) == Fraction(1, 8)
    with pytest.raises(ParameterError):
        exact_pad_success([Fraction(1, 2), Fraction(1, 3)], 5, 3)  # does not sum to 1
    with pytest.raises(ParameterError):
        exact_pad_success([Fraction(1, 2), Fraction(1, 2)], 1, 3)  # group smaller than the support


def test_universe_24_chaff_can_be_simulated_and_matches_the_exact_success():
    from sketchauth.evaluate.guessing import exact_pad_success

    sk = ChaffPointSketch(24, 3)  # refused before the run tables (universe > 16)
    r = guessing_experiment(sk, key_bits=5, trials=20_000, seed=3)
    exact = exact_pad_success(sk.sketch_distribution().values(), sk.sketch_count, 5)
    assert 0.0857 < float(exact) < 0.0859
    assert r.expected_success == pytest.approx(float(exact), rel=1e-9)
    assert r.ci95[0] <= float(exact) <= r.ci95[1]
    assert count_chaff_sketches(24, 3) == 605 == sum(1 for _ in chaff_sketches(24, 3))
