"""Our rates, curves and intervals against the tools researchers check them with: pyeer, bob.measure's
score-file rule, scipy's exact binomial interval; EPC against a brute-force definition.

pyeer (dev extra) and scipy (dev extra) are oracles only: the library imports neither. bob.measure
does not install here (compiled C++ core); its two-column reading rule (``bob.measure.load.split``:
first column ``1`` is a positive, anything else a negative) is restated in :func:`_read_bob2`.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.errors import ParameterError
from sketchauth.evaluate.curves import epc, identity_halves, roc_from_scores
from sketchauth.evaluate.rates import (
    RatePoint,
    binomial_cdf,
    clopper_pearson_interval,
    clopper_pearson_upper,
    det_from_scores,
    eer_interval,
    rate_interval,
    write_score_files,
)

RNG = np.random.default_rng(11)
#: Integer-valued distances with ties between and within the classes (the hard case for threshold bookkeeping).
GENUINE = RNG.integers(0, 40, 300).astype(float)
IMPOSTOR = RNG.integers(25, 90, 2000).astype(float)


def _read_bob2(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """bob.measure.load.split: ``(negatives, positives)``, positives where the label column is 1."""
    columns = np.loadtxt(path)
    positive = columns[:, 0] == 1
    return columns[~positive, 1], columns[positive, 1]


# -- pyeer -----------------------------------------------------------------------------------------------
def test_det_roc_and_eer_agree_with_pyeer(tmp_path: Path) -> None:
    # pyeer.eer_stats: its curve and EER functions (pyeer.eer_info needs the retired pkg_resources).
    pyeer = pytest.importorskip("pyeer.eer_stats")
    names = write_score_files(
        tmp_path,
        "s",
        GENUINE,
        IMPOSTOR,
        genuine_labels=[("a", "a", f"g{i}") for i in range(GENUINE.size)],
        impostor_labels=[("a", "b", f"i{i}") for i in range(IMPOSTOR.size)],
    )
    assert "s_genuine.txt" in names
    # pyeer reads the files we wrote (similarities: negated distances).
    gen, imp = np.loadtxt(tmp_path / "s_genuine.txt"), np.loadtxt(tmp_path / "s_impostor.txt")
    ref_thr, ref_fmr, ref_fnmr = pyeer.calculate_roc(gen, imp)
    # pyeer: accept iff score ≥ t at every distinct score t, ascending. Ours on the same scores.
    fmr, fnmr, thr = det_from_scores(gen, imp, higher_is_genuine=True)
    at = {t: k for k, t in enumerate(thr.tolist())}
    index = [at[t] for t in np.asarray(ref_thr).tolist()]
    assert np.array_equal(fmr[index], ref_fmr) and np.array_equal(fnmr[index], ref_fnmr)
    # ROC points (FMR, 1 − FNMR) at the same thresholds, and on the distances we started from.
    roc_fmr, tpr, _ = roc_from_scores(gen, imp, higher_is_genuine=True)
    assert np.array_equal(roc_fmr[index], ref_fmr) and np.allclose(tpr[index], 1 - np.asarray(ref_fnmr))
    assert np.array_equal(roc_from_scores(GENUINE, IMPOSTOR)[0], roc_fmr)
    # EER: pyeer's is the FVC midpoint (Maio et al. 2002) of its curve, which runs the other way.
    _, eer_low, eer_high, ref_eer = pyeer.get_eer_values(np.asarray(ref_fmr), np.asarray(ref_fnmr))
    span = eer_interval(fmr, fnmr)
    assert (span.low, span.high) == pytest.approx((eer_low, eer_high), abs=1e-12)
    assert span.midpoint == pytest.approx(ref_eer, abs=1e-12)


def test_fmr_and_fnmr_at_thresholds_match_counting(tmp_path: Path) -> None:
    pyeer_stats = pytest.importorskip("pyeer.eer_stats")
    thresholds, fm, fnm = pyeer_stats.calculate_roc(-GENUINE, -IMPOSTOR, rates=False)
    fmr, fnmr, thr = det_from_scores(GENUINE, IMPOSTOR)
    for t, false_matches, false_non_matches in zip(thresholds, fm, fnm, strict=True):
        k = int(np.flatnonzero(thr == -t)[0])
        accepted, rejected = np.count_nonzero(-t >= IMPOSTOR), np.count_nonzero(-t < GENUINE)
        assert round(fmr[k] * IMPOSTOR.size) == false_matches == accepted
        assert round(fnmr[k] * GENUINE.size) == false_non_matches == rejected


# -- bob.measure's two-column files ----------------------------------------------------------------------
def test_two_column_file_reads_back_as_bob_measure_splits_it(tmp_path: Path) -> None:
    write_score_files(
        tmp_path,
        "s",
        GENUINE,
        IMPOSTOR,
        genuine_labels=[("a", "a", "p")] * GENUINE.size,
        impostor_labels=[("a", "b", "p")] * IMPOSTOR.size,
    )
    lines = (tmp_path / "s.2col").read_text().splitlines()
    assert lines[0].split()[0] == "1" and lines[-1].split()[0] == "-1" and all(len(x.split()) == 2 for x in lines)
    negatives, positives = _read_bob2(tmp_path / "s.2col")
    assert np.array_equal(positives, -GENUINE) and np.array_equal(negatives, -IMPOSTOR)
    fmr, fnmr, _ = det_from_scores(positives, negatives, higher_is_genuine=True)
    assert eer_interval(fmr, fnmr) == eer_interval(*det_from_scores(GENUINE, IMPOSTOR)[:2])


# -- Clopper–Pearson against scipy ---------------------------------------------------------------------
CASES = [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (1, 100), (50, 100), (0, 3000), (7, 5000), (0, 10**6), (2, 10**6)]


@pytest.mark.parametrize(("k", "n"), CASES)
def test_clopper_pearson_agrees_with_scipy(k: int, n: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    ref = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    lo, hi = clopper_pearson_interval(k, n)
    # binomtest solves with brentq to an absolute 1e-12 or so; beta.ppf is tighter: check both.
    assert lo == pytest.approx(ref.low, rel=1e-6, abs=1e-11) and hi == pytest.approx(ref.high, rel=1e-6, abs=1e-11)
    beta_lo = 0.0 if k == 0 else float(stats.beta.ppf(0.025, k, n - k + 1))
    beta_hi = 1.0 if k == n else float(stats.beta.ppf(0.975, k + 1, n - k))
    assert lo == pytest.approx(beta_lo, rel=1e-9, abs=1e-300) and hi == pytest.approx(beta_hi, rel=1e-9)
    upper = clopper_pearson_upper(k, n, 0.95)
    assert upper == pytest.approx(1.0 if k == n else float(stats.beta.ppf(0.95, k + 1, n - k)), rel=1e-9)


def _exact_binomial_cdf(k: int, n: int, p: float) -> Fraction:
    """P[X <= k] for X ~ Binomial(n, p), exactly: ``p`` is the float's exact value ``a / 2^m``."""
    a, scale = Fraction(p).as_integer_ratio()
    b = scale - a  # 1 - p = b / 2^m
    # sum_{i <= k} C(n, i) a^i b^(n - i) = b^(n - k) * acc_k, acc_j = acc_{j-1} b + C(n, j) a^j
    acc, power, comb = 0, 1, 1
    for j in range(k + 1):
        if j:
            power *= a
            comb = comb * (n - j + 1) // j
        acc = acc * b + comb * power
    return Fraction(acc * b ** (n - k), scale**n)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))), st.floats(0.001, 0.999))
def test_binomial_cdf_agrees_with_exact_arithmetic(kn: tuple[int, int], p: float) -> None:
    # The exact rational value, not scipy: scipy's binom.cdf is off by 3.2e-9 relative at
    # k = 11, n = 881, p = 0.5625, where this library's value is the exact one.
    k, n = kn
    assert binomial_cdf(k, n, p) == pytest.approx(float(_exact_binomial_cdf(k, n, p)), rel=1e-12, abs=1e-300)


def test_binomial_cdf_where_scipy_is_off() -> None:
    exact = float(_exact_binomial_cdf(11, 881, 0.5625))
    assert binomial_cdf(11, 881, 0.5625) == pytest.approx(exact, rel=1e-12, abs=1e-300)


def test_clopper_pearson_closed_forms_at_scale() -> None:
    # k = 0 and k = n have closed forms; scipy's root finders lose digits out here, these do not.
    for n in (10**7, 10**9):
        assert clopper_pearson_upper(0, n) == pytest.approx(-math.expm1(math.log(0.05) / n), rel=1e-9)
        lo, hi = clopper_pearson_interval(n, n)
        assert hi == 1.0 and lo == pytest.approx(math.exp(math.log(0.025) / n), rel=1e-12)
        lo, _ = clopper_pearson_interval(1, n)  # P[X ≥ 1] = 1 − (1 − p)^n = 0.025
        assert lo == pytest.approx(-math.expm1(math.log1p(-0.025) / n), rel=1e-7)


def test_clopper_pearson_covers_the_rate_and_serves_rate_points() -> None:
    for k, n in CASES:
        lo, hi = rate_interval(k, n, "clopper-pearson")
        assert lo <= k / n <= hi
    point = RatePoint.from_counts(1, 0, 40, 2, 2000).with_interval("clopper-pearson")
    assert point.fmr_ci == clopper_pearson_interval(2, 2000) and point.fnmr_ci == clopper_pearson_interval(0, 40)
    with pytest.raises(ParameterError, match="interval method"):
        rate_interval(1, 10, "wald")
    with pytest.raises(ParameterError):
        clopper_pearson_interval(11, 10)
    with pytest.raises(ParameterError):
        clopper_pearson_upper(1, 10, 1.0)


# -- EPC -------------------------------------------------------------------------------------------------
def _epc_by_definition(dev_g, dev_i, ev_g, ev_i, alpha):  # type: ignore[no-untyped-def]
    """Every candidate threshold tried in turn: −inf, then each distinct development score."""
    candidates = [-math.inf, *sorted(set(dev_g) | set(dev_i))]
    best, best_cost = candidates[0], math.inf
    for t in candidates:
        cost = alpha * sum(s <= t for s in dev_i) / len(dev_i) + (1 - alpha) * sum(s > t for s in dev_g) / len(dev_g)
        if cost < best_cost:
            best, best_cost = t, cost
    hter = (sum(s <= best for s in ev_i) / len(ev_i) + sum(s > best for s in ev_g) / len(ev_g)) / 2
    return hter, best


def test_epc_equals_its_definition() -> None:
    rng = np.random.default_rng(5)
    dev_g, dev_i = rng.integers(0, 30, 60).tolist(), rng.integers(15, 60, 200).tolist()
    ev_g, ev_i = rng.integers(0, 30, 50).tolist(), rng.integers(15, 60, 180).tolist()
    alphas, hter, thresholds = epc(dev_g, dev_i, ev_g, ev_i, alphas=np.linspace(0, 1, 11))
    for a, h, t in zip(alphas.tolist(), hter.tolist(), thresholds.tolist(), strict=True):
        assert (h, t) == pytest.approx(_epc_by_definition(dev_g, dev_i, ev_g, ev_i, a))
    # Similarities: the same curve on negated scores.
    _, hter_sim, thr_sim = epc(
        [-x for x in dev_g], [-x for x in dev_i], [-x for x in ev_g], [-x for x in ev_i], higher_is_genuine=True
    )
    assert np.array_equal(hter_sim, epc(dev_g, dev_i, ev_g, ev_i)[1]) and np.array_equal(
        -thr_sim, epc(dev_g, dev_i, ev_g, ev_i)[2]
    )
    with pytest.raises(ParameterError):
        epc(dev_g, dev_i, ev_g, ev_i, alphas=[1.5])


def test_identity_halves_share_no_person() -> None:
    claimed = np.repeat(np.arange(10), 10)
    real = np.tile(np.arange(10), 10)
    dev, ev = identity_halves(claimed, real, seed=3)
    people_dev = set(claimed[dev]) | set(real[dev])
    people_ev = set(claimed[ev]) | set(real[ev])
    assert not people_dev & people_ev and len(people_dev) == len(people_ev) == 5
    assert dev.sum() == ev.sum() == 25  # 5 × 5 trials within each half
    assert np.array_equal(identity_halves(claimed, real, seed=3)[0], dev)  # seeded
