"""``sketchauth reproduce``: every item's verdict, its exact values, and the command's output files."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import pytest

from sketchauth.cli import main
from sketchauth.errors import ParameterError
from sketchauth.evaluate import reproduce as R
from sketchauth.sketches.vault import candidate_fraction, spurious_polynomials

QUICK = R.Options(quick=True)

#: The verdict of every item: what the command must keep saying.
EXPECTED = {
    "js-spurious": "agrees",
    "weighted-spurious": "agrees",
    "candidate-fraction": "differs",
    "candidate-count": "differs",
    "weighted-vault-q2": "not reproducible",
    "lemma5-s1": "agrees",
    "lemma5-s2": "agrees",
    "fig62-identical": "differs",
    "fig62-noisy": "agrees",
    "lemma6": "agrees",
    "theorem7": "agrees",
    "theorem8": "agrees",
    "two-fuzzy": "agrees",
    "toy-pad-parity": "differs",
    "chaff-count": "agrees",
    "chaff-guessing": "differs",
    "bp-example1": "not reproducible",
    "bp-example2": "not reproducible",
    "bp-theorem11": "agrees",
    "bp-corollary1": "agrees",
    "bp-repeated-rates": "agrees",
}


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
    assert [i["id"] for i in data["items"]] == [ident for ident, _ in R.ITEMS] == list(EXPECTED)
    assert {i["id"]: i["verdict"] for i in data["items"]} == EXPECTED
    assert data["summary"] == {"agrees": 13, "differs": 5, "not reproducible": 3}
    assert data["quick"] is True
    markdown = (out / "report" / "reproduce.md").read_text()
    for item in data["items"]:
        assert item["title"] in markdown and f'id="{item["id"]}"' in markdown
        for key in ("source", "section", "printed", "library", "verdict", "explanation"):
            assert key in item
    assert "13 agree, 5 differ, 3 not reproducible" in markdown
    for figure in ("fig6-2-linkage.png", "fig7-3-chaff-frequencies.png"):
        assert figure in data["figures"] and (out / "report" / figure).read_bytes()[:4] == b"\x89PNG"
        assert f"({figure})" in markdown
    assert not (out / "report" / "reproduce.json").exists()  # --json chose the file


def test_json_numbers_are_numbers(run) -> None:
    _, data = run
    items = {i["id"]: i for i in data["items"]}
    assert items["js-spurious"]["printed"] == 9.7629e33 and isinstance(items["js-spurious"]["library"], float)
    assert items["chaff-count"]["printed"] == 605 and items["chaff-count"]["library"] == 605
    assert isinstance(items["toy-pad-parity"]["library"]["randomised"], float)
    assert items["bp-example1"]["library"] is None
    rows = data["supplementary"]["linkage_by_noise_model"]
    assert {r["noise"] for r in rows} >= {"identical", "within-tolerance"}
    assert all(isinstance(r["s2"], float) for r in rows)
    identical = next(r for r in rows if r["noise"] == "identical")
    # s3 hides the parity s2 leaks: the parity adversary links s2 (0.75 at one feature) but not s3.
    assert identical["s2 parity"] > 0.7 and identical["s3 parity"] < 0.56 and identical["s3"] < identical["s2"]
    assert sorted({r["features"] for r in data["supplementary"]["linkage_by_features"]}) == [1, 2, 4, 8, 16]


def test_default_json_goes_beside_the_report(tmp_path: Path, capsys) -> None:
    rep = R.Reproduction(
        items=(R.juels_sudan_spurious(),),
        linkage_noise=(),
        linkage_features=(),
        options=QUICK,
        seconds=0.1,
        generated="now",
    )
    paths = R.write_report(rep, tmp_path / "r")
    assert json.loads(Path(paths["json"]).read_text())["items"][0]["id"] == "js-spurious"
    assert Path(paths["json"]).parent == tmp_path / "r"
    with pytest.raises(ParameterError):
        R.write_report(rep, Path(paths["json"]) / "sub")  # a file in the way


def test_cli_reports_bad_output_directory(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["reproduce", "--quick", "--quiet", "--out", str(blocker / "x")]) == 2
    assert "sketchauth: error" in capsys.readouterr().err


# -- thesis 6.3.2 -------------------------------------------------------------------------------
def test_vault_estimates() -> None:
    js = R.juels_sudan_spurious()
    assert js.library == spurious_polynomials(1e-4, 10**4, 10**4, 22, 2)
    assert f"{js.library:.4e}" == "9.7629e+33"
    weighted = R.weighted_spurious()
    assert (weighted.details["degree_D"], weighted.details["t_prime"]) == (28, 3)
    assert f"{weighted.library:.4e}" == "2.6996e+47"


def test_candidate_fraction_erratum_is_the_exponent_of_two() -> None:
    item = R.candidate_fraction_erratum()
    assert item.library == candidate_fraction(10**4, 35, 32)
    assert f"{item.library:.4e}" == "2.9987e-06"
    printed = R.printed_candidate_fraction(10**4, 35, 32)
    assert f"{float(printed):.4e}" == "2.4113e-05"  # the printed formula gives the printed number
    assert R.printed_candidate_fraction(2, 2, 2) == Fraction(8, 6)  # a "fraction" above 1
    count = R.candidate_count_typo()
    assert f"{count.details['thesis_numbers_product']:.4e}" == "6.5095e+42"  # e46 is a typo
    assert f"{count.library:.4e}" == "8.0953e+41"


def test_q2_example_defeats_unique_and_list_decoding() -> None:
    item = R.weighted_vault_q2()
    assert item.library["agreement"] == 35 and item.details["candidate_points"] == 64
    assert item.library["agreement"] < item.library["list_decoding_needs_above"] == math.sqrt(64 * 28)
    assert item.library["unique_decoding_needs"] == 47  # ⌈(n + D + 1)/2⌉: c − w ≥ D + 1


# -- thesis 6.2 ---------------------------------------------------------------------------------
def test_lemma5_exact_losses_have_closed_forms() -> None:
    for scheme, closed in (("s1", lambda q: 2 * math.log2(q)), ("s2", lambda q: math.log2(q * (q + 1)))):
        item = R.lemma5_s1(QUICK) if scheme == "s1" else R.lemma5_s2(QUICK)
        assert item.verdict == "agrees" and item.library > 0
        for row in item.details["instances"]:
            assert row["exact_loss_bits"] <= row["bound_bits"] + 1e-12
            if row["features"] == 1:
                assert row["exact_loss_bits"] == pytest.approx(closed(row["q"]), abs=1e-9)


def test_fig62_identical_and_noisy() -> None:
    same = R.fig62_identical(QUICK)
    noisy = R.fig62_noisy(QUICK)
    assert same.verdict == "differs" and same.library >= 0.74  # parity: at least 0.75 up to sampling
    assert noisy.verdict == "agrees" and abs(noisy.library - 0.55) <= noisy.details["tolerance"]
    assert same.details["runs"]["s1"]["accuracy"] > 0.85  # s1 links by its clear tolerance


# -- thesis 7 -----------------------------------------------------------------------------------
def test_toy_losses_follow_the_pad_parity() -> None:
    item = R.toy_pad_parity()
    losses = item.details["losses"]
    assert losses["pads <0,2>"] == {"deterministic": pytest.approx(1.0), "randomised": pytest.approx(1.0)}
    assert losses["pads <0,1>"] == {
        "deterministic": pytest.approx(0.0, abs=1e-12),
        "randomised": pytest.approx(0.0, abs=1e-12),
    }


def test_mixing_bounds_hold_on_every_toy() -> None:
    for fn in (R.mixing_lemma6, R.mixing_theorem7, R.mixing_theorem8, R.mixing_two_fuzzy):
        item = fn()
        assert item.verdict == "agrees" and item.library >= -1e-12
    two = R.mixing_two_fuzzy()
    assert two.details["exact"]["h_b1_given_s"] == pytest.approx(2.0)  # the key's bit is diverted
    assert two.details["bounds"]["b1"] == pytest.approx(2.0)


def test_chaff_items() -> None:
    count = R.chaff_sketch_count()
    assert count.library == 605 and count.details["listed"] == 605
    assert count.details["randomness_min_entropy_bits"] == pytest.approx(4.512895511891562, abs=1e-12)
    guess = R.chaff_key_guessing(QUICK)
    numerator, denominator = (int(x) for x in guess.details["exact_fraction"].split("/"))
    assert Fraction(numerator, denominator) == pytest.approx(0.0858039277323358, rel=1e-12)
    assert guess.verdict == "differs" and f"{guess.library:.3f}" == "0.086"
    lo, hi = guess.details["simulation"]["ci95"]
    assert lo <= guess.library <= hi and not lo <= 0.052 <= hi
    assert len(guess.details["sketch_frequencies_sorted"]) == 605


# -- Boreale–Paolini ----------------------------------------------------------------------------
def test_geometric_rates() -> None:
    item = R.bp_theorem11()
    assert item.library == pytest.approx(math.log2(3) - 1.5, abs=1e-12)
    assert R.bp_corollary1().library < 1e-12
    rates = R.bp_repeated_rates(QUICK)
    assert rates.library["theorem7_min"] < rates.library["theorem8_max"]
    assert rates.details["slope_overlap"] > rates.library["theorem8_max"]  # approaches from above


def test_examples_without_their_matrices_are_not_reproducible() -> None:
    one, two = R.bp_example1(), R.bp_example2()
    assert (one.verdict, one.library, one.printed) == ("not reproducible", None, 3.0012)
    assert two.details["added_mass"] == "5/192" and Fraction(1, 24) - Fraction(1, 64) == Fraction(5, 192)


def test_geometric_mechanism_and_item_validation() -> None:
    W = R.geometric_mechanism(5, 0.5)
    assert W.sum(axis=1) == pytest.approx([1.0] * 5)
    with pytest.raises(ParameterError):
        R.geometric_mechanism(1, 0.5)
    with pytest.raises(ParameterError):
        R.geometric_mechanism(3, 1.0)
    with pytest.raises(ParameterError):
        R.Item("x", "s", "1", "t", 1, 1, "maybe", "")  # type: ignore[arg-type]
