"""The quick run leaves out exactly what ``tests/conftest.py`` says: server tests and timing oracles.

The suite's own conftest runs in a throw-away pytest session over a small test file that has one
test of each kind, so a hook that stopped marking (or marked everything) fails here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

CONFTEST = Path(__file__).resolve().parents[1] / "conftest.py"

TESTS = """
from collections.abc import Iterator

import pytest


class ServerProcess:
    pass


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    yield []


@pytest.fixture
def server() -> Iterator[ServerProcess]:
    yield ServerProcess()


@pytest.fixture
def api(server: ServerProcess) -> ServerProcess:
    return server


def test_plain() -> None:
    pass


@pytest.mark.parametrize("delay", [1], ids=["timing"])
def test_plain_with_a_parameter(delay: int) -> None:
    pass


def test_with_servers(servers: list[ServerProcess]) -> None:
    pass


def test_through_a_fixture_giving_a_server(api: ServerProcess) -> None:
    pass


def test_timing_of_answers() -> None:
    pass
"""

MARKERS = """
[pytest]
markers =
    slow: servers
    statistical: timing oracles and large populations
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini(MARKERS)
    pytester.makepyfile(test_kinds=TESTS)
    return pytester


def _selected(suite: pytest.Pytester, expression: str) -> set[str]:
    result = suite.runpytest("-p", "no:xdist", "-p", "no:cacheprovider", "--strict-markers", "-q", "-m", expression)
    passed = {report.nodeid.split("::")[-1] for report in result.reprec.getreports("pytest_runtest_logreport")}
    assert result.ret == 0, result.stdout.str()
    return passed


def test_the_quick_run_leaves_out_server_tests_and_latency_oracles(suite: pytest.Pytester) -> None:
    assert _selected(suite, "not slow and not statistical") == {
        "test_plain",
        "test_plain_with_a_parameter[timing]",
    }


def test_ci_serial_phase_runs_the_rest(suite: pytest.Pytester) -> None:
    assert _selected(suite, "slow") == {"test_with_servers", "test_through_a_fixture_giving_a_server"}
    assert _selected(suite, "statistical") == {"test_timing_of_answers"}
