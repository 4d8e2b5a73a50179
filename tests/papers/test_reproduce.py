"""``sketchauth reproduce``: every item's verdict, its exact values, its cited lines, and the output files."""

from __future__ import annotations

import json
import math
import os
import re
from fractions import Fraction
from pathlib import Path

import pytest

import sketchauth.papers as papers
from sketchauth.cli import main
from sketchauth.errors import ParameterError
from sketchauth.evaluate.guessing import chaff_sketches, count_chaff_sketches, guessing_experiment
from sketchauth.papers import boreale_paolini as bp
from sketchauth.papers import bp_rates, breach, chaff, fang, items, linkage, mixing, report
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.vault import candidate_fraction, spurious_polynomials

QUICK = items.Options(quick=True)
ROOT = Path(__file__).resolve().parents[2]

#: The verdict of every item: what the command must keep saying.
EXPECTED = {
    "js-spurious": "agrees",
    "weighted-spurious": "agrees",
    "candidate-fraction": "differs",
    "candidate-count": "differs",
    "weighted-vault-q2": "new finding",
    "weighted-vault-loss": "differs",
    "lemma5-s1": "agrees",
    "lemma5-s2": "agrees",
    "fig62-identical": "new finding",
    "fig62-noisy": "agrees",
    "fig62-panels": "differs",
    "lemma6": "agrees",
    "theorem7": "agrees",
    "theorem8": "agrees",
    "two-fuzzy": "agrees",
    "toy-pad-parity": "differs",
    "chaff-count": "agrees",
    "chaff-guessing": "not reproducible",
    "fingerprint-chaff": "not reproducible",
    "bp-example1": "differs",
    "bp-example2": "differs",
    "bp-theorem3": "agrees",
    "bp-theorem4": "agrees",
    "bp-theorem5": "agrees",
    "bp-proposition1": "agrees",
    "bp-theorem6": "agrees",
    "bp-theorem7": "agrees",
    "bp-rates": "agrees",
    "bp-theorem9": "agrees",
    "bp-theorem10": "agrees",
    "bp-theorem11": "agrees",
    "bp-corollary1": "differs",
}
SEED_FILES = {"000_afad9ac0b4c3c9ef.txt", "003_14691affbe92733e.txt"}


def _seeds() -> Path | None:
    """The directory of the sources' plain-text extractions, if this checkout has it nearby."""
    if "SKETCHAUTH_SEEDS" in os.environ:
        return Path(os.environ["SKETCHAUTH_SEEDS"])
    for parent in ROOT.parents:
        if (parent / "shared" / "seeds" / "003_14691affbe92733e.txt").is_file():
            return parent / "shared" / "seeds"
    return None


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """One ``sketchauth reproduce --quick`` in a temporary directory (JSON to a separate file)."""
    out = tmp_path_factory.mktemp("reproduce")
    target = out / "numbers.json"
    assert main(["reproduce", "--quick", "--quiet", "--out", str(out / "report"), "--json", str(target)]) == 0
    return out, json.loads(target.read_text())


# -- the command --------------------------------------------------------------------------------
def test_command_writes_json_markdown_and_figures(run) -> None:
    out, data = run
    ids = [i["id"] for i in data["items"]]
    assert ids == list(EXPECTED) and len(papers.ITEMS) == len(EXPECTED) == papers.STEPS - 2
    assert {i["id"]: i["verdict"] for i in data["items"]} == EXPECTED
    assert data["summary"] == {"agrees": 20, "differs": 8, "not reproducible": 2, "new finding": 2}
    assert data["quick"] is True
    markdown = (out / "report" / "reproduce.md").read_text()
    for item in data["items"]:
        assert item["title"] in markdown and f'id="{item["id"]}"' in markdown
        printed = item["printed"]
        assert printed["source"] in SEED_FILES and printed["line"] > 0 and printed["quote"]
        assert all(c["source"] == printed["source"] for c in printed["more"])  # one paper per item
        assert f"{printed['source']}:{printed['line']}" in markdown
        assert len(item["explanation"]) > 100  # every verdict is explained
        assert "not available" not in item["explanation"]
        cited = [printed["line"]] + [c["line"] for c in printed["more"]]
        pattern = [rf"\blines? ([0-9]+(–| and ))?{n}\b" for n in cited]
        assert any(re.search(p, item["explanation"], re.IGNORECASE) for p in pattern), item["id"]
    assert "20 agree, 8 differ, 2 not reproducible, 2 new findings" in markdown
    for figure in ("fig6-2-linkage.png", "fig7-3-chaff-frequencies.png"):
        assert figure in data["figures"] and (out / "report" / figure).read_bytes()[:4] == b"\x89PNG"
        assert f"({figure})" in markdown
    assert not (out / "report" / "reproduce.json").exists()  # --json chose the file


def test_every_cited_line_holds_its_quote() -> None:
    """Every verdict can be checked against its line: the quote is on that line of the seed file."""
    seeds = _seeds()
    if seeds is None:
        pytest.skip("the sources' plain-text extractions (shared/seeds) are not beside this checkout")
    texts = {name: (seeds / name).read_text(encoding="utf-8").split("\n") for name in SEED_FILES}
    cites = [c for fn in papers.ITEMS for c in _where(fn).lines]
    assert len(cites) >= 2 * len(papers.ITEMS) - 12
    for fn in papers.ITEMS:
        where = _where(fn)
        for line, quote in where.lines:
            assert quote in texts[where.paper.file][line - 1], (fn.__name__, line, quote)


def _where(fn) -> items.Where:
    """An item function's :class:`Where`, without running it (the decorator keeps it in its closure)."""
    closure = {c.cell_contents for c in fn.__closure__ or () if isinstance(c.cell_contents, items.Where)}
    assert len(closure) == 1, fn
    return closure.pop()


def test_json_numbers_are_numbers_and_exact_values_strings(run) -> None:
    _, data = run
    by_id = {i["id"]: i for i in data["items"]}
    assert by_id["js-spurious"]["printed"]["value"] == 9.7629e33 and isinstance(by_id["js-spurious"]["computed"], float)
    assert by_id["chaff-count"]["printed"] == {
        "value": 605,
        "source": "000_afad9ac0b4c3c9ef.txt",
        "line": 1483,
        "quote": chaff_quote(),
        "more": [],
    }
    assert (
        by_id["bp-example1"]["printed"]["line"] == 167 and by_id["bp-example1"]["printed"]["value"]["epsilon"] == 3.0012
    )
    assert by_id["bp-example2"]["exact"]["row0_sum_as_printed"] == "187/192"
    assert by_id["toy-pad-parity"]["exact"] == {"deterministic, pads <0,1>": "3/2", "randomised, pads <0,2>": "2"}
    rows = data["supplementary"]["linkage_by_noise_model"]
    assert {r["noise"] for r in rows} >= {"identical", "within-tolerance"}
    identical = next(r for r in rows if r["noise"] == "identical")
    # s3 hides the parity s2 leaks: the parity adversary links s2 (0.75 at one feature) but not s3.
    assert identical["s2 parity"] > 0.7 and identical["s3 parity"] < 0.56 and identical["s3"] < identical["s2"]
    assert sorted({r["features"] for r in data["supplementary"]["linkage_by_features"]}) == [1, 2, 4, 8, 16]


def chaff_quote() -> str:
    return _where(chaff.chaff_sketch_count).lines[0][1]


def test_default_json_goes_beside_the_report(tmp_path: Path) -> None:
    rep = report.Reproduction(
        items=(fang.juels_sudan_spurious(),),
        linkage_noise=(),
        linkage_features=(),
        options=QUICK,
        seconds=0.1,
        generated="now",
    )
    paths = report.write_report(rep, tmp_path / "r")
    assert json.loads(Path(paths["json"]).read_text())["items"][0]["id"] == "js-spurious"
    assert Path(paths["json"]).parent == tmp_path / "r"
    with pytest.raises(ParameterError):
        report.write_report(rep, Path(paths["json"]) / "sub")  # a file in the way


def test_retained_heap_applies_on_glibc_and_restores() -> None:
    import platform

    from sketchauth.cli.reproduce import retained_heap

    with retained_heap() as applied:
        assert applied == (platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")
        blocks = [bytearray(8 << 20) for _ in range(4)]  # served from the heap while inside
        assert sum(len(b) for b in blocks) == 32 << 20
    del blocks


def test_cli_reports_bad_output_directory(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["reproduce", "--quick", "--quiet", "--out", str(blocker / "x")]) == 2
    assert "sketchauth: error" in capsys.readouterr().err


# -- the errata page ----------------------------------------------------------------------------
def test_errata_page_lists_every_item_with_its_verdict_and_line(run) -> None:
    """docs/math/errata.md's table has one row per item: its id, the cited line and the verdict."""
    _, data = run
    page = (ROOT / "docs" / "math" / "errata.md").read_text(encoding="utf-8")
    rows = {}
    for line in page.splitlines():
        m = re.match(r"\| `([a-z0-9-]+)` \| (\d{3}):(\d+)[^|]*\|.*\| ([a-z ]+?) *(?:\(.*\))? \|$", line)
        if m:
            rows[m.group(1)] = (m.group(2), int(m.group(3)), m.group(4))
    assert list(rows) == list(EXPECTED)
    for item in data["items"]:
        prefix, line, verdict = rows[item["id"]]
        assert item["printed"]["source"].startswith(prefix) and line == item["printed"]["line"], item["id"]
        assert verdict == item["verdict"], item["id"]
    assert "20 agree, 8 differ, 2 are not reproducible and 2 are new findings" in page


# -- layering -----------------------------------------------------------------------------------
def _imports(path: Path) -> list[str]:
    import ast

    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [f"{node.module}.{a.name}" for a in node.names]
    return names


def test_papers_import_only_public_names_and_nothing_imports_papers() -> None:
    package = ROOT / "sketchauth"
    for path in (package / "papers").glob("*.py"):
        for name in _imports(path):
            if name.startswith("sketchauth.") and not name.startswith("sketchauth.papers."):
                parts = name.split(".")[1:]
                assert not any(p.startswith("_") and not p.endswith("__") for p in parts), (path.name, name)
    for path in package.rglob("*.py"):
        if path.is_relative_to(package / "papers") or path == package / "cli" / "reproduce.py":
            continue
        assert not any(n.startswith("sketchauth.papers") for n in _imports(path)), path
    assert "papers" not in __import__("sketchauth").__all__


# -- thesis 6.3.2 -------------------------------------------------------------------------------
def test_vault_estimates() -> None:
    js = fang.juels_sudan_spurious()
    assert js.computed == spurious_polynomials(1e-4, 10**4, 10**4, 22, 2)
    assert f"{js.computed:.4e}" == "9.7629e+33"
    weighted = fang.weighted_spurious()
    assert (weighted.details["degree_D"], weighted.details["t_prime"]) == (28, 3)
    assert f"{weighted.computed:.4e}" == "2.6996e+47"


def test_candidate_fraction_erratum_is_the_exponent_of_two() -> None:
    item = fang.candidate_fraction_erratum()
    exact = fang.corrected_candidate_fraction(10**4, 35, 32)
    assert item.computed == exact and float(exact) == pytest.approx(candidate_fraction(10**4, 35, 32), rel=1e-12)
    assert f"{float(exact):.4e}" == "2.9987e-06"
    printed = fang.printed_candidate_fraction(10**4, 35, 32)
    assert f"{float(printed):.4e}" == "2.4113e-05"  # the printed formula gives the printed number
    assert fang.printed_candidate_fraction(2, 2, 2) == Fraction(8, 6)  # a "fraction" above 1
    assert fang.corrected_candidate_fraction(2, 2, 2) == 1  # the corrected count covers every subset once
    count = fang.candidate_count_typo()
    assert count.details["thesis_numbers_product"] == Fraction("2.6996e47") * Fraction("2.4113e-5")
    assert f"{float(count.details['thesis_numbers_product']):.4e}" == "6.5095e+42"  # e46 is a typo
    assert f"{count.computed:.4e}" == "8.0953e+41"


def test_q2_example_decodes_for_templates_up_to_20_elements() -> None:
    item = fang.weighted_vault_q2()
    assert item.computed == {"decodes_for_m": [18, 19, 20], "m18_needs_of_35": 33} and item.printed is None
    runs = {r["m"]: r for r in item.details["runs"]}
    assert (runs[18]["candidate_points"], runs[18]["chaff"]) == (36, 1)
    assert [runs[m]["unique_decoding_needs"] for m in (18, 19, 20, 21, 22, 32)] == [33, 34, 35, 36, 37, 47]
    assert not runs[21]["decoded"] and not runs[32]["template_recovered"]  # 64 points: the old reading
    for seed in (2, 3):  # other vaults: the same boundary
        assert [fang.q2_vault_decoding(m, seed)["template_recovered"] for m in (20, 21)] == [True, False]


def test_weighted_vault_loss_derivation() -> None:
    item = fang.weighted_vault_loss()
    d = item.details
    P = 20011  # the smallest prime >= p*q = 20000
    assert d["field_size"] == P
    assert d["correct"] == pytest.approx(20000 * math.log2(P) - 29 * math.log2(P) - 19965 * math.log2(P - 1))
    assert d["correct"] == pytest.approx(87.17, abs=0.01)
    assert d["line1"] - d["correct"] == pytest.approx(math.log2(P))  # D for D + 1 coefficients
    assert d["line1"] == pytest.approx(101.46, abs=0.01)
    assert d["sign_slip_bits"] == pytest.approx(70 * math.log2(P / (P - 1)))  # +g for −g: 2g·log(P/(P−1))
    assert d["sign_slip_bits"] == pytest.approx(0.005, abs=1e-4)
    assert d["line3"] == pytest.approx(102.91, abs=0.01) and d["line3"] > d["line2"] > d["line1"] > d["correct"]
    assert 0 < d["q_log_e_excess_bits_at_p_1e4"] < 2e-4  # "≤ q log e" is marginally false
    assert d["library_report_q3_bits"] == pytest.approx(d["formula_q3_bits"], abs=1e-9)


# -- thesis 6.2 ---------------------------------------------------------------------------------
def test_lemma5_exact_losses_have_closed_forms() -> None:
    for scheme, closed in (("s1", lambda q: 2 * math.log2(q)), ("s2", lambda q: math.log2(q * (q + 1)))):
        item = fang.lemma5_s1(QUICK) if scheme == "s1" else fang.lemma5_s2(QUICK)
        assert item.verdict == "agrees" and item.computed > 0
        for row in item.details["instances"]:
            assert row["exact_loss_bits"] <= row["bound_bits"] + 1e-12
            if row["features"] == 1:
                assert row["exact_loss_bits"] == pytest.approx(closed(row["q"]), abs=1e-9)


def test_fig62_identical_noisy_and_panels(run) -> None:
    _, data = run
    by_id = {i["id"]: i for i in data["items"]}
    same, noisy, panels = by_id["fig62-identical"], by_id["fig62-noisy"], by_id["fig62-panels"]
    assert same["printed"]["value"] is None and same["computed"]["s2"] >= 0.74  # parity: ≥ 0.75
    assert abs(noisy["computed"]["s2"] - 0.55) <= noisy["details"]["tolerance"]
    assert noisy["computed"]["s1"] > 0.88  # printed p_s1 > 0.9
    grid = {(g["n"], g["q"]): g for g in panels["details"]["grid"]}
    assert len(grid) == 9 and panels["printed"]["value"]["threshold"] == 21
    assert panels["computed"]["threshold"] == grid[1000, 5]["threshold"] != 21
    assert grid[5000, 5]["threshold"] > grid[1000, 5]["threshold"] > grid[200, 5]["threshold"]  # grows with n
    mean = panels["computed"]["mean_by_q"]
    assert mean["2"] > mean["10"] + 0.02  # smaller q links more: against the printed trend
    assert "closer to 1/2" in panels["explanation"]
    # The shared experiment is the sweep's: same seed, same pairs, one run.
    row = linkage.fig62_experiment("s2", linkage.ReenrolmentNoise.within_tolerance(), QUICK, QUICK.sweep_pairs, 1)
    assert row.accuracy == grid[1000, 5]["accuracy"]


# -- thesis 7 -----------------------------------------------------------------------------------
def test_toy_as_printed_loses_log3_minus_1() -> None:
    """Mixed mod 2^L_b as printed (000, line 1467), pads <0,1> on b mod 2 lose log2 3 − 1 bits, not 0."""
    for bits in (2, 3, 4):
        assert mixing.toy_loss_ratio("deterministic", (0, 1), bits) == Fraction(3, 2)
        assert mixing.toy_loss_ratio("deterministic", (0, 2), bits) == 2
        assert mixing.toy_loss_ratio("randomised", (0, 2), bits) == 2
        assert mixing.toy_loss_ratio("randomised", (0, 1), bits) == 1
    assert mixing.toy_loss_ratio("deterministic", (0, 1), 3, modulus=2) == 1  # a one-time pad on one bit
    item = mixing.toy_pad_parity()
    assert item.computed == {"deterministic, pads <0,1>": Fraction(3, 2), "randomised, pads <0,2>": 2}
    library = item.details["library_entropy_loss_bits"]
    assert library["deterministic, pads <0,1>"] == pytest.approx(math.log2(3) - 1)


def test_mixing_bounds_hold_on_every_toy() -> None:
    for fn in (mixing.mixing_lemma6, mixing.mixing_theorem7, mixing.mixing_theorem8, mixing.mixing_two_fuzzy):
        item = fn()
        assert item.verdict == "agrees" and item.computed >= -1e-12
    two = mixing.mixing_two_fuzzy()
    assert two.details["exact"]["h_b1_given_s"] == pytest.approx(2.0)  # the key's bit is diverted
    assert two.details["bounds"]["b1"] == pytest.approx(2.0)
    assert two.details["bounds"]["b1_as_printed"] == pytest.approx(2.0 - math.log2(3))  # |S| = L_S1 + L_S2


def test_chaff_items(run) -> None:
    count = chaff.chaff_sketch_count()
    assert count.computed == 605 and count.details["listed"] == 605
    assert count.details["readings"] == {
        "path, distance >= 3": 912,
        "path, distance >= 4": 605,
        "cycle, distance >= 3": 855,
        "cycle, distance >= 4": 502,
    }
    assert count.details["randomness_min_entropy_bits"] == pytest.approx(4.512895511891562, abs=1e-12)
    guess = chaff.chaff_key_guessing(QUICK)
    exact = guess.computed["project_reading"]
    assert isinstance(exact, Fraction) and float(exact) == pytest.approx(0.0858039277323358, rel=1e-12)
    readings = guess.details["readings"]
    assert float(readings["uniform completion"]["random_oracle_pad"]) == pytest.approx(0.04143094387483017, rel=1e-12)
    assert readings["sequential fill"]["translation_stride_1"] == Fraction(159081481099487, 2019215278080000)
    assert readings["uniform completion"]["translation_stride_1"] == Fraction(5024522898064667, 128298359190220800)
    assert guess.computed["range_low"] == float(readings["uniform completion"]["translation_stride_1"])
    assert guess.computed["range_low"] < 0.052 < guess.computed["range_high"]  # the printed value is inside
    lo, hi = guess.details["simulation"]["ci95"]
    assert lo <= float(exact) <= hi
    assert len(guess.details["sketch_frequencies_sorted"]) == 605
    finger = chaff.fingerprint_chaff()
    assert finger.printed is None and finger.verdict == "not reproducible"
    assert chaff.FINGERPRINT_CLAIM in finger.explanation and finger.explanation.startswith("Qualitative")
    assert finger.details["illustration_key_revealed"] == (1 - Fraction(605, 2**24)) ** 31


def test_separated_sets_and_uniform_completion_against_listing() -> None:
    for n, d in ((9, 2), (12, 3), (10, 1)):
        listed = list(chaff_sketches(n, d))
        assert chaff.separated_maximal_sets(n, d + 1) == len(listed) == count_chaff_sketches(n, d)
        sketch = ChaffPointSketch(n, d)
        dist = chaff.uniform_completion_distribution(sketch)
        assert sum(dist.values()) == 1
        # Brute force: secret x uniform, then a uniform maximal set among those containing x.
        brute: dict[int, Fraction] = {}
        for x in range(n):
            containing = [s for s in listed if x in s]
            for s in containing:
                r = sketch.rank(s)
                brute[r] = brute.get(r, Fraction(0)) + Fraction(1, n * len(containing))
        assert dist == brute
    assert chaff.separated_maximal_sets(6, 2, cycle=True) == 5
    with pytest.raises(ParameterError):
        chaff.uniform_completion_distribution(ChaffPointSketch(12, 2, points=2))


def test_translation_success_is_the_library_shift_attack() -> None:
    sketch = ChaffPointSketch(12, 2)
    dist = sketch.sketch_distribution()
    exact = chaff.translation_success(dist, sketch.sketch_count, 1, 2)
    shift = guessing_experiment(sketch, 2, 200, 1, mixing="shift")
    assert float(exact) == pytest.approx(shift.expected_success, rel=1e-9)
    uniform = {r: Fraction(1, sketch.sketch_count) for r in range(sketch.sketch_count)}
    assert chaff.translation_success(uniform, sketch.sketch_count, 3, 2) == Fraction(1, 4)  # no edge: the baseline
    with pytest.raises(ParameterError):
        chaff.translation_success(dist, 8, 4, 2)  # pads 0, 4, 0, 4 repeat


# -- Boreale–Paolini, single observation ---------------------------------------------------------
def test_example1_exactly() -> None:
    item = bp.bp_example1()
    assert breach.example1_mechanism()[0] == (
        Fraction(1, 3),
        Fraction(1, 12),
        Fraction(1, 12),
        Fraction(1, 12),
        Fraction(1, 12),
        Fraction(1, 3),
    )
    c = item.computed
    assert (c["matrix_ratio"], c["mechanism_ratio"], c["a_level_ratio_both"]) == (3, 4, Fraction(3, 2))
    assert item.details["ratio_of_printed_digits"] == Fraction(2500, 833)  # 0.25/0.0833 = 3.0012…
    assert f"{float(item.details['ratio_of_printed_digits']):.4f}" == "3.0012"
    assert f"{float(item.details['ratio_as_written']):.3f}" == "3.012"
    assert item.details["matrix_l1"] == item.details["mechanism_l1"] == 1
    assert all(sum(row) == 1 for row in breach.example1_matrix())


def test_example2_exactly() -> None:
    item = bp.bp_example2()
    c = item.computed
    assert c["row0_sum_as_printed"] == Fraction(187, 192) and f"{float(c['row0_sum_as_printed']):.3f}" == "0.974"
    assert (c["ratio"], c["dp_ratio_hamming"], c["dp_ratio_hamming_best_labelling"], c["dp_ratio_path"]) == (8, 4, 4, 2)
    assert c["a_level_ratio"] == Fraction(5, 3)
    assert item.details["pair_ratios"] == {"0-1": 2, "0-2": 4, "0-3": 8, "1-2": 2, "1-3": 4, "2-3": 2}
    W = breach.example2_matrix()
    printed = breach.example2_printed_row0()
    assert [a == b for a, b in zip(W[0], printed, strict=True)] == [True, True, True, False, True, True]
    assert W[0][3] == Fraction(1, 24) and all(sum(row) == 1 for row in W)


def test_theorems_3_to_5_and_proposition1() -> None:
    three = bp.bp_theorem3(QUICK)
    assert three.computed["example2_sup_Q_i"] == {0: 8, 1: 8} and three.computed["random_channels_agreeing"] == 50
    approach = three.details["approach_Q1"]
    assert approach[0] < approach[1] < approach[2] < 8 and 8 - approach[2] < Fraction(1, 2**30)
    four = bp.bp_theorem4()
    assert [r["sup_Q0"] for r in four.details["rows"]] == [2, 4, 8]  # nε with ε = 1
    assert all(r["dp_ratio"] == 2 for r in four.details["rows"])
    five = bp.bp_theorem5(QUICK)
    assert five.computed["example2_sup_product_Q_i"] == {0: 2, 1: 4} and five.computed["example2_dp_ratio"] == 4
    prop = bp.bp_proposition1()
    assert prop.computed["first_n_above_8"] == 3
    assert prop.computed["best_ratio_by_n"][3] == Fraction(8192, 877)
    assert set(prop.computed["Q_is_X_ratio"].values()) == {1}  # false as worded for Q = X


def test_breach_ratio_against_a_hand_computation() -> None:
    W = ((Fraction(3, 4), Fraction(1, 4)), (Fraction(1, 4), Fraction(3, 4)))
    prior = (Fraction(1, 2), Fraction(1, 2))
    # p(Q|y=0) = 3/4 for Q = {0}: ratio (3/4)/(1/2) = 3/2; p(Q|y=1) = 1/4: (1/2)/(1/4) = 2.
    assert breach.breach_ratio(W, prior, frozenset({0})) == 2
    assert breach.sup_breach_ratio(W, frozenset({0})) == 3
    assert breach.sup_breach_ratio(W, frozenset({0, 1})) == 1
    with pytest.raises(ParameterError):
        breach.breach_ratio(W, (Fraction(0), Fraction(1)), frozenset({0}))


def test_theorem6_rate_security_is_three_bits() -> None:
    item = bp.bp_theorem6()
    assert item.computed["rate_security_ratio"] == 8 and item.computed["rate_bits"] == 3.0
    rates = item.computed["rate_of_breach_by_n"]
    assert rates[5] > rates[10] > rates[20] > 3 and rates[40] == pytest.approx(3, abs=1e-9)


# -- Boreale–Paolini, repeated observations ------------------------------------------------------
def test_rates_and_theorems_7_9_10() -> None:
    rho = math.log2(3) - 1.5
    rates = bp_rates.bp_repeated_rates(QUICK)
    assert rates.computed["min_pair_rate"] == pytest.approx(rho) and rates.computed["max_pair_rate"] == pytest.approx(
        0.5
    )
    assert "not Theorem 7" in rates.explanation
    seven = bp_rates.bp_theorem7(QUICK)
    assert seven.computed["C_Q01"] == pytest.approx(rho) and abs(seven.computed["fitted_rate"] / rho - 1) < 0.1
    assert len(seven.details["rates_by_property"]) == 14
    nine = bp_rates.bp_theorem9(QUICK)
    assert all(abs(v / rho - 1) < 0.1 for k, v in nine.computed.items() if k.startswith("fitted_rate"))
    ten = bp_rates.bp_theorem10(QUICK)
    assert 0 < ten.computed["max_rho_over_epsilon"] <= 1


def test_geometric_rates() -> None:
    item = bp_rates.bp_theorem11()
    assert item.printed == 0.085 and item.computed == pytest.approx(math.log2(3) - 1.5, abs=1e-12)
    corollary = bp_rates.bp_corollary1()
    assert corollary.verdict == "differs" and corollary.computed["adjacent_half_masses"] == [Fraction(2, 3)]
    assert corollary.computed["largest_rate_difference"] < 1e-12  # equal, not strictly lower


def test_merged_columns_keep_the_rates() -> None:
    import numpy as np

    from sketchauth.entropy import a_security_rate, repeated_observation_rate

    W = breach.example2_matrix()
    merged = bp_rates.merged_columns(W)
    assert len(merged[0]) == 4 and all(sum(row) == 1 for row in merged)
    assert merged[0][3] == Fraction(1, 24) + Fraction(1, 48) + Fraction(1, 48)
    full, small = (np.array([[float(p) for p in row] for row in m]) for m in (W, merged))
    assert repeated_observation_rate(small) == pytest.approx(repeated_observation_rate(full), abs=1e-9)
    assert a_security_rate(small) == pytest.approx(a_security_rate(full), abs=1e-9)


def test_geometric_mechanism_and_item_validation() -> None:
    W = bp_rates.geometric_mechanism(5, 0.5)
    assert W.sum(axis=1) == pytest.approx([1.0] * 5)
    with pytest.raises(ParameterError):
        bp_rates.geometric_mechanism(1, 0.5)
    with pytest.raises(ParameterError):
        bp_rates.geometric_mechanism(3, 1.0)
    where = items.Where(items.BP, "1", "t", ((1, "x"),))
    with pytest.raises(ParameterError):
        items.Item("x", where, items.Finding(1, 1, "maybe", ""))  # type: ignore[arg-type]
    with pytest.raises(ParameterError):
        items.Item("x", items.Where(items.BP, "1", "t", ()), items.Finding(1, 1, "agrees", ""))
    assert report.summary_line({"agrees": 1, "differs": 0, "not reproducible": 2, "new finding": 1}) == (
        "1 agree, 0 differ, 2 not reproducible, 1 new finding"
    )
    assert items.exact_strings({"a": Fraction(1, 3), "b": 0.5}) == {"a": "1/3"}
    assert items.exact_strings([0.5]) is None
