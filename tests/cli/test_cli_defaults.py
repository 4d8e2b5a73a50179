"""One default argon2 profile everywhere, ``sketchauth --version``, and the guessing command's default.

The library's ``hasher()`` defaulted to ``rfc9106-low-memory`` (0.4 s per call here) while the
service and the command line defaulted to ``owasp``; ``sketchauth evaluate guessing --family
interval`` with its defaults printed an attacker advantage of 1.26 where the README promised the
baseline.
"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import argon2
import pytest

from sketchauth.cli import DEFAULT_PROFILE_NAME, main
from sketchauth.enrolment import DEFAULT_HASH_PROFILE, HASH_PROFILES, enrol, hasher, verify
from sketchauth.sketches.interval import IntervalSketch


def _parameters(encoded_hash: str) -> argon2.Parameters:
    return argon2.extract_parameters(encoded_hash)


def test_library_service_and_command_line_share_one_default_profile() -> None:
    from sketchauth_service.settings import Settings

    assert DEFAULT_HASH_PROFILE == "owasp" == DEFAULT_PROFILE_NAME
    assert Settings.model_fields["hash_profile"].default == DEFAULT_HASH_PROFILE
    owasp = HASH_PROFILES["owasp"]
    made = hasher()
    assert (made.time_cost, made.memory_cost, made.parallelism) == (
        owasp.time_cost,
        owasp.memory_cost,
        owasp.parallelism,
    )


def test_enrol_without_a_hasher_uses_the_default_profile() -> None:
    sketch = IntervalSketch(n=64, v=3, features=2)
    record = enrol(sketch, [10, 20])
    assert _parameters(record.secret_hash) == HASH_PROFILES[DEFAULT_HASH_PROFILE]
    assert verify(sketch, record, [11, 19])


def test_demo_without_a_profile_hashes_with_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--seed", "3", "--features", "4"]) == 0
    stored = json.loads(capsys.readouterr().out)["stored"]
    assert _parameters(stored["secret_hash"]) == HASH_PROFILES[DEFAULT_HASH_PROFILE]


@pytest.mark.parametrize("command", [["demo"], ["evaluate", "report"], ["serve"]])
def test_help_states_the_default_profile(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"{DEFAULT_HASH_PROFILE})" in text


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out == f"sketchauth {version('sketchauth')}\n"
    out = subprocess.run(
        [sys.executable, "-m", "sketchauth.cli", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == f"sketchauth {version('sketchauth')}"


def test_guessing_interval_defaults_give_the_baseline(tmp_path: Path) -> None:
    """The default interval sketch is uniform over a uniform secret (n = 15 = 3(2v - 1)), so no
    key stands out: the exact expected success is the baseline 2^-4 and the simulation agrees."""
    out = tmp_path / "g.json"
    assert main(["evaluate", "guessing", "--family", "interval", "--trials", "40000", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["params"]["n"] == 15 and result["params"]["v"] == 3
    assert result["baseline"] == 0.0625
    assert result["expected_success"] == pytest.approx(0.0625, rel=1e-12)
    low, high = result["ci95"]
    assert low <= 0.0625 <= high


def test_guessing_interval_over_a_non_multiple_gives_the_attacker_an_edge(tmp_path: Path) -> None:
    """n = 16, v = 3 (the old default): residue 0 of 5 has 4 of the 16 secrets, the others 3, so
    the attacker's exact expected success is above the baseline, and the simulation sees it."""
    out = tmp_path / "g.json"
    assert (
        main(["evaluate", "guessing", "--family", "interval", "--n", "16", "--trials", "40000", "--json", str(out)])
        == 0
    )
    result = json.loads(out.read_text())
    assert result["expected_success"] > 1.2 * result["baseline"]
    low, high = result["ci95"]
    assert low <= result["expected_success"] <= high and low > result["baseline"]
