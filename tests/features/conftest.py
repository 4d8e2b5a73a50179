"""Fixtures the feature tests share: the background a module fits on and the transform fitted on it.

Defined once here; a module that needs another population declares ``BACKGROUND`` (a
:class:`feature_testing.Background`), otherwise it gets :data:`feature_testing.STANDARD`.
"""

from __future__ import annotations

import pytest
from feature_testing import STANDARD, Background

from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.features.transform import FeatureTransform


def _spec(request: pytest.FixtureRequest) -> Background:
    spec = getattr(request.module, "BACKGROUND", STANDARD)
    assert isinstance(spec, Background), f"{request.module.__name__}.BACKGROUND must be a Background"
    return spec


@pytest.fixture(scope="module")
def background(request: pytest.FixtureRequest) -> LabelledVectors:
    """The module's background population (``BACKGROUND``, else the standard one)."""
    return _spec(request).draw()


@pytest.fixture(scope="module")
def transform(request: pytest.FixtureRequest, background: LabelledVectors) -> FeatureTransform:
    """The feature transform fitted on the module's background with its options."""
    return fit_transform(background, **_spec(request).fit)
