"""Rates from integer counts, FMR at a target FNMR, FVC EER interval, identity bootstrap, score files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from _helpers import evaluate_report

from sketchauth.cli import main
from sketchauth.errors import ParameterError
from sketchauth.evaluate.rates import (
    RatePoint,
    det_from_scores,
    eer,
    eer_interval,
    fmr_at_fnmr,
    identity_bootstrap,
    rate_at_most,
    rate_below,
    wilson_interval,
    write_score_files,
)


def test_fnmr_from_counts_is_the_exact_ratio() -> None:
    # 1 − 113/200 = 0.43500000000000005 in floats; 87/200 = 0.435.
    genuine = np.arange(200.0)
    _fmr, fnmr, thr = det_from_scores(genuine, [1000.0])
    k = int(np.flatnonzero(thr == 112.0)[0])
    assert fnmr[k] == 87 / 200 == 0.435
    point = RatePoint.from_counts(1, 87, 200, 3, 1000)
    assert (point.false_non_matches, point.false_matches) == (87, 3) and point.fnmr == 0.435


def test_exact_rate_comparisons_hit_the_boundary() -> None:
    assert rate_at_most(5, 100, 0.05) and not rate_below(5, 100, 0.05)
    assert rate_at_most(1, 10_000, 1e-4) and not rate_at_most(2, 10_000, 1e-4)
    assert RatePoint.from_counts(0, 4, 100, 1, 10_000).meets(1e-4, 0.05)
    assert not RatePoint.from_counts(0, 5, 100, 1, 10_000).meets(1e-4, 0.05)
    assert RatePoint.from_counts(0, 5, 100, 1, 10_000).meets(1e-4, 0.05, strict_fnmr=False)


def test_fmr_at_target_fnmr() -> None:
    genuine = [1, 2, 3, 4]  # distances
    impostor = [2.5, 5, 6, 7]
    fmr, threshold, ci = fmr_at_fnmr(genuine, impostor, 0.25)
    # Strictest threshold rejecting at most 1 of 4 genuine: τ = 3 accepts 1 impostor (2.5).
    assert (fmr, threshold) == (0.25, 3.0)
    assert ci == wilson_interval(1, 4)
    assert fmr_at_fnmr(genuine, impostor, 0.0)[:2] == (0.25, 4.0)
    assert fmr_at_fnmr(genuine, impostor, 1.0)[:2] == (0.0, -np.inf)
    with pytest.raises(ParameterError):
        fmr_at_fnmr(genuine, impostor, 1.5)


def test_eer_interval_brackets_the_interpolated_value() -> None:
    rng = np.random.default_rng(4)
    fmr, fnmr, _ = det_from_scores(rng.normal(0, 1, 300), rng.normal(2, 1, 900))
    span = eer_interval(fmr, fnmr)
    assert span.low <= span.interpolated <= span.high
    assert span.interpolated == eer(fmr, fnmr)
    assert span.high - span.low <= 2 / 300
    # FVC's own example shape: exact crossing gives a zero-width interval.
    fmr, fnmr, _ = det_from_scores([0.1, 0.2, 0.6], [0.5, 0.7, 0.9])
    exact = eer_interval(fmr, fnmr)
    assert exact.low == exact.high == pytest.approx(1 / 3)


def test_identity_bootstrap_is_wider_when_errors_cluster_in_people() -> None:
    trials = np.full(40, 50)
    spread = np.full(40, 5)  # every person 10% errors
    clustered = np.zeros(40, dtype=int)
    clustered[:4] = 50  # four people always fail: the same 10% overall
    wide = identity_bootstrap(clustered, trials, seed=1)
    narrow = identity_bootstrap(spread, trials, seed=1)
    assert narrow == (0.1, 0.1)
    assert wide[0] < 0.1 < wide[1] and wide[1] - wide[0] > 0.1
    assert identity_bootstrap(clustered, trials, seed=1) == wide  # seeded


def _read_bob4(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """bob.bio.base.score.load.split_four_column's rule: positives are claimed_id == real_id."""
    pos, neg = [], []
    for line in path.read_text().splitlines():
        claimed, real, _test, score = line.split()
        (pos if claimed == real else neg).append(float(score))
    return np.array(pos), np.array(neg)


def test_score_files_reread_give_the_same_rates(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    gen, imp = rng.normal(0, 1, 50), rng.normal(3, 1, 400)
    names = write_score_files(
        tmp_path,
        "x",
        gen,
        imp,
        genuine_labels=[("alice smith", "alice smith", f"s{i}") for i in range(50)],
        impostor_labels=[("alice smith", "bob", f"t{i}") for i in range(400)],
    )
    assert names == ["x.2col", "x.4col", "x.5col", "x_genuine.txt", "x_impostor.txt"]
    pos, neg = _read_bob4(tmp_path / "x.4col")
    assert np.array_equal(pos, -gen) and np.array_equal(neg, -imp)  # higher = more genuine
    five = [line.split() for line in (tmp_path / "x.5col").read_text().splitlines()]
    assert all(len(row) == 5 for row in five) and five[0][:3] == ["alice_smith", "alice_smith", "alice_smith"]
    g = np.loadtxt(tmp_path / "x_genuine.txt")
    i = np.loadtxt(tmp_path / "x_impostor.txt")
    assert eer(*det_from_scores(g, i, higher_is_genuine=True)[:2]) == eer(*det_from_scores(gen, imp)[:2])
    try:  # optional oracle: pyeer, when installed, reads the same files
        from pyeer.eer_info import get_eer_stats  # type: ignore[import-not-found]
    except ImportError:
        return
    stats = get_eer_stats(g.tolist(), i.tolist())
    span = eer_interval(*det_from_scores(gen, imp)[:2])
    assert span.low - 1e-9 <= stats.eer <= span.high + 1e-9


def test_cli_report_writes_identity_intervals_eer_range_and_score_files(tmp_path: Path) -> None:
    out = tmp_path / "rep"
    scheme = ["--scheme", "interval", "--params", '{"n": 256, "features": 8}']
    code = evaluate_report(
        out, *scheme, "--synthetic", "identities=40,samples=4,noise=2", "--sweep", "2,4,6,8,10", "--seed", "3"
    )
    assert code == 0
    report = json.loads((out / "report.json").read_text())
    er = report["error_rates"]
    for p in er["points"]:
        lo, hi = p["fnmr_ci_identity"]
        assert 0.0 <= lo <= p["fnmr"] <= hi <= 1.0
        assert p["false_non_matches"] == round(p["fnmr"] * p["genuine_trials"])
    base = er["baselines"][0]
    assert base["eer_fvc_low_high"][0] <= base["eer"] <= base["eer_fvc_low_high"][1]
    assert "fmr_at_target_fnmr" in base
    assert er["decode_check"]["disagreements"] == 0
    files = report["score_files"]
    assert "scores/unprotected_euclidean.4col" in files
    pos, neg = _read_bob4(out / "scores" / "unprotected_euclidean.4col")
    assert (pos.size, neg.size) == (er["genuine_trials"], er["impostor_trials"])
    assert "over people" in (out / "report.md").read_text()


def test_flag_names_agree_and_old_spellings_still_parse() -> None:
    from sketchauth.cli import build_parser

    parser = build_parser()
    base = ["evaluate", "report", "--scheme", "interval", "--synthetic", "identities=3", "--out", "x"]
    assert parser.parse_args([*base, "--no-plots"]).plots is False
    assert parser.parse_args([*base, "--no-plot"]).plots is False
    assert parser.parse_args([*base, "--quiet"]).quiet is True
    feats = ["features", "evaluate", "--transform", "t", "--background", "b", "--data", "d", "--out", "o"]
    assert parser.parse_args([*feats, "--no-plots"]).no_plot is True
    assert parser.parse_args([*feats, "--no-plot"]).no_plot is True
    assert parser.parse_args([*feats, "--quiet"]).quiet is True
    link = ["evaluate", "linkage", "--scheme", "s1"]
    assert parser.parse_args([*link, "--plots", "a.png"]).plot == "a.png"
    assert parser.parse_args([*link, "--plot", "a.png"]).plot == "a.png"
    assert parser.parse_args([*link, "--quiet"]).quiet is True
    assert parser.parse_args(["evaluate", "guessing", "--quiet"]).quiet is True
    assert parser.parse_args(["reproduce", "--quiet"]).quiet is True


def test_no_progress_output_off_a_terminal(tmp_path: Path, capsys) -> None:
    code = main(
        [
            "evaluate",
            "linkage",
            "--scheme",
            "s1",
            "--pairs",
            "200",
            "--json",
            str(tmp_path / "l.json"),
        ]
    )
    assert code == 0
    assert capsys.readouterr().err == ""  # stderr is not a terminal here: no bar


def test_det_from_scores_leaves_the_callers_trial_order_alone() -> None:
    genuine = np.array([3.0, 1.0, 2.0])
    impostor = np.array([9.0, 4.0])
    det_from_scores(genuine, impostor)
    fmr_at_fnmr(genuine, impostor, 0.5)
    assert genuine.tolist() == [3.0, 1.0, 2.0] and impostor.tolist() == [9.0, 4.0]
