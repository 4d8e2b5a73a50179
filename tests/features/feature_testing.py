"""What the feature tests fit on (a uniquely named module, importable from every test here, as
``tests/service/service_testing.py`` is for the service tests).

A module that fits on something other than :data:`STANDARD` says so with a module-level
``BACKGROUND = Background(...)``; ``tests/features/conftest.py``'s ``background`` and
``transform`` fixtures read it (the pytest pattern of a fixture reading its requesting module),
so each fixture is defined once and each module's data is one value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation

__all__ = ["STANDARD", "Background"]


@dataclass(frozen=True)
class Background:
    """The population a module's transform is fitted on, how much of it is drawn, and the fit's options."""

    population: EmbeddingPopulation
    people: int = 160
    captures: int = 5
    seed: int = 1
    fit: Mapping[str, Any] = field(default_factory=lambda: {"levels": 16})

    def draw(self) -> LabelledVectors:
        return self.population.draw(self.people, self.captures, seed=self.seed)


#: 16 informative and 4 useless features, noise 0.4: 160 people × 5 captures, 16 levels.
STANDARD = Background(EmbeddingPopulation(informative=16, useless=4, noise_scale=0.4, seed=4))
