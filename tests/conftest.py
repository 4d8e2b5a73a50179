"""Suite-wide collection settings: ignored paths, and the markers that split the quick run from CI's.

``tests/packaging/typing/`` holds files that mypy checks (``tests/packaging/test_typing.py``) and that are never run:
``--doctest-modules`` would import them, so they are not collected.

Two markers keep the quick run (README: ``pytest -n auto -m "not slow and not statistical"``)
quick; CI runs the rest afterwards, serially. They are given here, by what a test uses, so new
tests are sorted without anyone remembering to mark them:

* ``slow`` — a test that starts ``sketchauth serve`` processes: it requests the ``servers``
  fixture, or any fixture annotated to give a ``ServerProcess`` (``tests/service/service_testing.py``).
* ``statistical`` — a timing oracle (a test named ``*timing*``): it measures latencies, so it must not
  share the cores with other tests; and tests marked by hand for their population size.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable

import pytest

collect_ignore_glob = ["packaging/typing/*"]


def _fixtures_of(item: pytest.Item) -> Iterable[Callable[..., object]]:
    """The functions of every fixture ``item`` requests, directly or through other fixtures."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return ()
    return (definition.func for definitions in info.name2fixturedefs.values() for definition in definitions)


def _starts_servers(item: pytest.Item) -> bool:
    if "servers" in getattr(item, "fixturenames", ()):
        return True
    for func in _fixtures_of(item):
        try:
            annotation = inspect.signature(func).return_annotation
        except (TypeError, ValueError):
            continue
        if "ServerProcess" in str(annotation):
            return True
    return False


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _starts_servers(item) and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        timed = isinstance(item, pytest.Function) and "timing" in item.originalname
        if timed and item.get_closest_marker("statistical") is None:
            item.add_marker(pytest.mark.statistical)
