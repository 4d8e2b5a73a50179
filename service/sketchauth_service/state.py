"""What every request of one running service shares: :class:`ServiceState`, built once in the app's lifespan.

A plain value with no web framework in it, so that the use cases (:mod:`sketchauth_service.usecases`)
take it as an argument and run without HTTP (tests call them directly).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sketchauth_service.authenticator import Authenticator
from sketchauth_service.credentials import FailureThrottle, KeySource
from sketchauth_service.settings import Settings
from sketchauth_service.store import LockoutPolicy, Store

if TYPE_CHECKING:
    from sketchauth_service.pipelines import LoadedPipeline

__all__ = ["ServiceState"]


@dataclass(slots=True)
class ServiceState:
    """Everything a request needs, built once in the app's lifespan."""

    settings: Settings
    store: Store
    authenticator: Authenticator
    policy: LockoutPolicy
    #: Unix time in seconds; tests pass a controllable clock to step through waits.
    clock: Callable[[], float] = field(default=time.time)
    #: Feature pipelines by name (``SKETCHAUTH_PIPELINES``), loaded once when the app was built.
    pipelines: dict[str, LoadedPipeline] = field(default_factory=dict)
    #: The API keys in force (re-reads ``SKETCHAUTH_API_KEY_FILE`` when its content changes).
    keys: KeySource = field(default_factory=KeySource)
    #: Failed authentications per client address.
    throttle: FailureThrottle = field(default_factory=lambda: FailureThrottle(1.0, 10))
