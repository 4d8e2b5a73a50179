"""Without the compiled extension the numpy kernels run, and the library says so once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator

import pytest

from sketchauth.errors import NativeBackendWarning, SketchAuthWarning
from sketchauth.sketches import FuzzyVault, PinSketch, _backend

#: Runs in a fresh interpreter in which importing the extension fails, as where it was never built.
WITHOUT_EXTENSION = textwrap.dedent(
    """
    import sys, warnings

    class NotBuilt:
        def find_spec(self, name, path=None, target=None):
            if name == "sketchauth.sketches._native":
                raise ImportError("not built")

    sys.meta_path.insert(0, NotBuilt())
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        from sketchauth.sketches import PinSketch, backend
        sketch = PinSketch(16, 4)
        assert sketch.decode(sketch.encode({1, 2, 3}), {1, 2, 4}).tolist() == [1, 2, 3]
        PinSketch(12, 3)
    print(backend(), [(w.category.__name__, w.filename.rsplit("/", 1)[-1]) for w in seen])
    """
)


def test_a_process_without_the_extension_warns_once_where_the_sketch_is_made() -> None:
    done = subprocess.run(
        [sys.executable, "-c", WITHOUT_EXTENSION], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "numpy [('NativeBackendWarning', '<string>')]"


@pytest.fixture
def without_extension(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(_backend, "_DEFAULT", "numpy")
    _backend._warn_fallback.cache_clear()
    yield
    _backend._warn_fallback.cache_clear()


@pytest.mark.usefixtures("without_extension")
def test_the_default_backend_warns_once_then_stays_quiet() -> None:
    with pytest.warns(NativeBackendWarning, match="compiled extension is not installed") as seen:
        PinSketch(16, 4)
        FuzzyVault(13, 5, 1)
        PinSketch(12, 3)
    assert len(seen) == 1
    assert issubclass(NativeBackendWarning, SketchAuthWarning)


@pytest.mark.usefixtures("without_extension")
def test_asking_for_numpy_explicitly_does_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PinSketch(16, 4, backend="numpy")
        FuzzyVault(13, 5, 1, backend="numpy")


def test_no_warning_when_the_extension_is_in_use() -> None:
    if _backend.backend() != "native":
        pytest.skip("the extension is not built here")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        PinSketch(16, 4)
