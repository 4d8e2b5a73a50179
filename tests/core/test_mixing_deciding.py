"""A mixed structure decoded with one biometric deciding at another threshold (``MixedSketch.deciding_with``)."""

from __future__ import annotations

import numpy as np
import pytest

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.mixing import Cascade, ExactKey, FuzzySecret
from sketchauth.sketches.angular_polar import PolarAngularSketch

PIN = "4096-1024"


def _case() -> tuple[PolarAngularSketch, Cascade, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    template = rng.normal(size=64)
    probe = template + 0.25 * rng.normal(size=64)  # cos ≈ 0.97
    sketch = PolarAngularSketch(dimension=64, bits=32, list_size=8, min_cos=0.999)
    structure = Cascade(sketch, pin=ExactKey("test"), warn=False)
    return sketch, structure, template, probe


def test_the_same_helper_decodes_at_the_other_threshold_and_the_pin_still_counts() -> None:
    sketch, structure, template, probe = _case()
    secret = [sketch.check_secret(template), PIN]
    helper = structure.encode(secret)
    with pytest.raises(DecodeError):
        structure.decode(helper, [probe, PIN])  # cos ≈ 0.97 < 0.999
    looser = structure.deciding_with(0, sketch.deciding_at(0.9))
    assert looser.params() == structure.params()
    recovered = looser.decode(helper, [probe, PIN])
    assert np.array_equal(recovered[0], secret[0])
    try:  # a wrong PIN unmixes to another sketch: no codeword, or another one
        wrong = looser.decode(helper, [probe, "4096-1025"])
    except DecodeError:
        wrong = None
    assert wrong is None or not np.array_equal(wrong[0], secret[0])


def test_only_a_fuzzy_component_with_its_own_parameters_may_be_swapped() -> None:
    sketch, structure, _, _ = _case()
    other = PolarAngularSketch(dimension=64, bits=32, list_size=8, min_cos=0.9)  # other parameters
    with pytest.raises(ParameterError, match="its own scheme and parameters"):
        structure.deciding_with(0, other)
    with pytest.raises(ParameterError, match="not a fuzzy secret"):
        structure.deciding_with(1, sketch)  # the PIN
    with pytest.raises(ParameterError, match="not a fuzzy secret"):
        structure.deciding_with(5, sketch)
    assert isinstance(structure.components[0], FuzzySecret)
