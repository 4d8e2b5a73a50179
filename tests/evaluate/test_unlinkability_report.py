"""`sketchauth evaluate unlinkability` and its library runner: real re-enrolments, with and without a pepper."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

from sketchauth.cli import main
from sketchauth.errors import ParameterError
from sketchauth.evaluate.data import LabelledVectors, load_vectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.linkage import parity_bits, s2_similar_intervals, simulate_s2_partitions
from sketchauth.evaluate.unlinkability_report import (
    PIPELINE_ATTACKS,
    PIPELINE_KINDS,
    UnlinkabilityReportOptions,
    attack_ready,
    byte_agreement,
    enrolment_groups,
    measure_linkability,
    partition_parity_bits,
    render_markdown,
    run_unlinkability_report,
    similar_even_intervals,
    summary_rows,
)
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.pinsketch import PinSketch

POPULATION = EmbeddingPopulation(informative=10, useless=2, noise_scale=0.4, seed=4)
#: Small settings: the tests check properties, not the numbers of the real-data benchmark.
FAST = {"permutations": 20, "max_nonmated": 300, "groups": 4, "enrol_samples": 2}


def _write_csv(path: Path, data: LabelledVectors, prefix: str) -> Path:
    header = "identity," + ",".join(f"f{j}" for j in range(data.features))
    rows = [
        f"{prefix}{label}," + ",".join(f"{v:.6g}" for v in row)
        for label, row in zip(data.identities, data.samples, strict=True)
    ]
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def synthetic() -> tuple[LabelledVectors, LabelledVectors]:
    return POPULATION.draw(40, 6, seed=1), POPULATION.draw(8, 8, seed=2)


@pytest.fixture(scope="module")
def report(synthetic: tuple[LabelledVectors, LabelledVectors]) -> dict:
    background, data = synthetic
    return run_unlinkability_report(background, data, options=UnlinkabilityReportOptions(seed=3, **FAST))


# -- the library runner ---------------------------------------------------------------------------------
def test_every_pipeline_and_attack_has_both_conditions_in_range(report: dict) -> None:
    assert list(report["pipelines"]) == list(PIPELINE_KINDS)
    for kind, entry in report["pipelines"].items():
        if "unavailable" in entry:
            assert isinstance(entry["unavailable"], str) and entry["unavailable"]
            continue
        assert [a["attack"] for a in entry["attacks"]] == [a.name for a in PIPELINE_ATTACKS[kind]]
        for attack in entry["attacks"]:
            for condition in ("clear", "peppered"):
                m = attack[condition]
                assert 0.0 <= m["d_sys"] <= 1.0
                assert 0.0 <= m["chance_d_sys_mean"] <= m["chance_d_sys_p95"] <= 1.0
                assert m["mated_pairs"] == 8 * 6  # 8 identities, C(4, 2) pairs of disjoint groups each
                assert m["nonmated_pairs"] == 300
                curve = m["curve"]
                assert len(curve["edges"]) == len(curve["d_local"]) + 1 == m["bins"] + 1
                assert all(0.0 <= d <= 1.0 for d in curve["d_local"])
                assert sum(curve["p_mated"]) == pytest.approx(1.0)


def test_report_fields_and_json(report: dict) -> None:
    for key in ("measure", "sources", "settings", "pepper", "pipelines", "repeated", "operational_rule", "notes"):
        assert key in report
    assert report["settings"]["identities_enrolled"] == 8
    assert set(report["repeated"]) == {"s2", "s3"}
    for rep in report["repeated"].values():
        for per_k in rep["per_tau"].values():
            assert [row["k"] for row in per_k] == [1, 2, 3, 4]
            for row in per_k:
                assert row["recovered_fraction"] <= min(row["pinned_fraction"], row["contains_fraction"]) + 1e-12
            assert per_k[0]["contains_fraction"] == 1.0  # one helper always admits its own (b, v)
    assert any("only 48 mated pairs" in note for note in report["notes"])  # 8 x C(4, 2) < 100: said so
    json.loads(json.dumps(report))  # JSON-ready: only plain types
    text = render_markdown(report, "unlinkability.png")
    assert "| thermometer | pinsketch | difference-decoding |" in text
    assert "never keeps two helpers" in text and "![" in text


def test_linear_and_interval_sketches_link_in_clear_and_not_peppered(report: dict) -> None:
    rows = {(r["pipeline"], r["attack"]): r for r in summary_rows(report)}
    thermo = rows[("thermometer", "difference-decoding")]
    assert thermo["clear"] > 0.5  # difference decoding links PinSketch enrolments of one person
    # Sealed records leave nothing to decode; at 48 mated pairs with fresh peppers the estimate is
    # noise around its floor (the <= 0.05 claim is checked on enough pairs in the next test).
    assert thermo["peppered"] < 0.5 < thermo["clear"]
    assert rows[("interval", "residue-distance")]["clear"] > 0.5


@pytest.mark.parametrize("kind", ["interval", "thermometer"])
def test_peppered_pipelines_are_unlinkable_with_enough_pairs(kind: str) -> None:
    background, data = POPULATION.draw(40, 6, seed=1), POPULATION.draw(30, 16, seed=5)
    # The interval box calibrated to hold FMR 1% on new people (cross-validated bound) is strict
    # enough that its clear helpers link at D<->sys 0.4997 here; at 2% they link at 0.59.
    out = run_unlinkability_report(
        background,
        data,
        options=UnlinkabilityReportOptions(
            kinds=[kind],
            enrol_samples=1,
            groups=16,
            max_nonmated=8000,
            permutations=20,
            seed=1,
            target_fmr=0.02 if kind == "interval" else 0.01,
        ),
    )
    attack = out["pipelines"][kind]["attacks"][0]
    assert attack["clear"]["mated_pairs"] == 30 * 120
    assert attack["clear"]["d_sys"] > 0.5
    assert attack["peppered"]["d_sys"] <= 0.05


def test_measure_linkability_extremes() -> None:
    same = measure_linkability(np.arange(210) % 7, np.arange(420) % 7, permutations=10)
    assert same["d_sys"] == 0.0 and not same["linked"]
    apart = measure_linkability(np.full(50, 3.0), np.full(80, 9.0), permutations=10)
    assert apart["d_sys"] == 1.0 and apart["linked"]


def test_every_pipeline_is_sealed_and_the_control_is_the_unsealed_record(report: dict) -> None:
    """Every scheme is sealed (s1/s2/s3 and the dependent-syndrome PinSketch included): no sealed
    record parses as a helper, and the records are the helpers plus the 16-byte tag."""
    for kind, entry in report["pipelines"].items():
        if "unavailable" in entry:
            continue
        assert entry["sealed_bytes_mean"] == entry["helper_bytes_mean"] + 16, kind
        for attack in entry["attacks"]:
            assert attack["peppered"]["parsed_fraction"] == 0.0, (kind, attack["attack"])


def test_attack_ready_widens_dependent_pinsketch_only() -> None:
    ready = attack_ready(PinSketch(9, 30))
    assert isinstance(ready, PinSketch) and ready.params() == {"m": 11, "t": 30}
    ready.symbols(ready.payload(ready.encode([1, 2, 3])))  # readable by difference decoding: no ParameterError
    same = PinSketch(16, 4)
    assert attack_ready(same) is same


def test_byte_agreement_counts_equal_positions() -> None:
    assert byte_agreement(b"abcd", b"abzd") == 3
    assert byte_agreement(b"abc", b"abcd") == -1
    assert byte_agreement(b"", b"") == 0


def test_partition_helpers_match_the_linkage_module() -> None:
    rng = np.random.default_rng(0)
    batch = simulate_s2_partitions(rng, np.array([40, 55, 61]), np.array([3, 5, 2]), 100, 8)
    parts = [batch.points(r) for r in range(batch.rows)]
    assert partition_parity_bits(parts).tolist() == parity_bits(batch).tolist()
    other = simulate_s2_partitions(rng, np.array([41, 50, 61]), np.array([3, 4, 2]), 100, 8)
    parts_b = [other.points(r) for r in range(other.rows)]
    # Every s2 interval is even: the even-interval count is the similar-interval count.
    assert similar_even_intervals(parts, parts_b, 2) == s2_similar_intervals(parts, parts_b, 2)
    sketch = AsymmetricIntervalSketch(100, 8, scheme="s3", features=3)
    p = sketch.partition(sketch.encode((np.array([40, 55, 61]), np.array([3, 5, 2]))))
    assert similar_even_intervals(p, p, 1) >= 3  # the secret interval recurs in every feature


def test_too_few_samples_is_a_clear_error() -> None:
    data = LabelledVectors(np.array([0, 0, 0, 1, 1, 1]), np.zeros((6, 3)))
    with pytest.raises(ParameterError, match=r"eval\.csv: 0 of 2 identities have the 4 samples"):
        enrolment_groups(data, 2, 4, 0, source="eval.csv")


def test_unknown_pipeline_and_feature_mismatch(synthetic: tuple[LabelledVectors, LabelledVectors]) -> None:
    background, data = synthetic
    with pytest.raises(ParameterError, match="pipelines must be among"):
        run_unlinkability_report(background, data, options=UnlinkabilityReportOptions(kinds=["vault"]))
    narrow = LabelledVectors(data.identities, data.samples[:, :3])
    with pytest.raises(ParameterError, match=r"bg\.csv has 12 features but ev\.csv has 3"):
        run_unlinkability_report(background, narrow, options=UnlinkabilityReportOptions(sources=("bg.csv", "ev.csv")))


# -- the command ------------------------------------------------------------------------------------------
def _cli(tmp_path: Path, *extra: str) -> list[str]:
    background, data = POPULATION.draw(40, 6, seed=1), POPULATION.draw(8, 8, seed=2)
    bg = _write_csv(tmp_path / "background.csv", background, "bg")
    ev = _write_csv(tmp_path / "eval.csv", data, "ev")
    return [
        "evaluate",
        "unlinkability",
        "--background",
        str(bg),
        "--data",
        str(ev),
        "--out",
        str(tmp_path / "out"),
        "--enrol-samples",
        "2",
        "--groups",
        "4",
        "--max-nonmated",
        "200",
        "--permutations",
        "10",
        *extra,
    ]


def test_cli_writes_json_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*_cli(tmp_path, "--pipelines", "interval,thermometer,s2", "--no-plots", "--quiet")]) == 0
    captured = capsys.readouterr()
    assert "interval residue-distance: D<->sys clear" in captured.out
    assert captured.err == ""  # no progress bar off a terminal
    out = json.loads((tmp_path / "out" / "unlinkability.json").read_text())
    assert list(out["pipelines"]) == ["interval", "thermometer", "s2"]
    assert out["sources"] == {
        "background": "background.csv",
        "data": "eval.csv",
        "background_identities": 40,
        "data_identities": 8,
        "shared_labels": 0,
        "set": "open",
    }
    assert "| s2 |" in (tmp_path / "out" / "unlinkability.md").read_text()
    assert not (tmp_path / "out" / "unlinkability.png").exists()


def test_cli_plot(tmp_path: Path) -> None:
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("matplotlib (extra 'plots') not installed")
    assert main([*_cli(tmp_path, "--pipelines", "interval", "--quiet")]) == 0
    assert (tmp_path / "out" / "unlinkability.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_errors_name_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = _cli(tmp_path, "--no-plots", "--enrol-samples", "5")
    args[args.index("--enrol-samples") + 1] = "5"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "eval.csv: 0 of 8 identities have the 10 samples" in err and "--enrol-samples" in err
    tiny = _write_csv(tmp_path / "tiny.csv", POPULATION.draw(1, 6, seed=9), "t")
    args = _cli(tmp_path, "--no-plots")
    args[args.index("--background") + 1] = str(tiny)
    assert main(args) == 2
    assert "tiny.csv" in capsys.readouterr().err


# -- a tiny real-like fixture --------------------------------------------------------------------------
def test_real_like_fixture(tmp_path: Path) -> None:
    """The shape of the Japanese Vowels files (9 speakers, 12 cepstral means and 12 standard deviations)."""
    rng = np.random.default_rng(11)
    header = "identity," + ",".join([f"mean{j}" for j in range(12)] + [f"std{j}" for j in range(12)])

    def speakers(count: int, seed: int) -> str:
        rows = []
        local = np.random.default_rng(seed)
        for s in range(9):
            centre = rng_centres[s]
            for _ in range(count):
                means = centre[:12] + 0.15 * local.normal(size=12)
                stds = np.abs(centre[12:] + 0.03 * local.normal(size=12))
                rows.append(f"speaker{s + 1}," + ",".join(f"{v:.8f}" for v in np.concatenate([means, stds])))
        return "\n".join([header, *rows]) + "\n"

    rng_centres = np.concatenate([rng.normal(size=(9, 12)), np.abs(rng.normal(0.3, 0.1, size=(9, 12)))], axis=1)
    (tmp_path / "train.csv").write_text(speakers(10, 1), encoding="utf-8")
    (tmp_path / "test.csv").write_text(speakers(8, 2), encoding="utf-8")
    out = run_unlinkability_report(
        load_vectors(tmp_path / "train.csv"),
        load_vectors(tmp_path / "test.csv"),
        options=UnlinkabilityReportOptions(kinds=["interval", "thermometer", "s3"], seed=0, **FAST),
    )
    assert out["sources"]["shared_labels"] == 9 and out["sources"]["set"].startswith("closed")
    assert any("fewer than 10" in note for note in out["notes"])  # the small-population warning is kept
    for row in summary_rows(out):
        assert 0.0 <= row["peppered"] <= 1.0 and 0.0 <= row["clear"] <= 1.0
