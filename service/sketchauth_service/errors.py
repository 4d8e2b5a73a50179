"""The service's configuration error, apart from the settings so that every module checking a setting can raise it.

:mod:`sketchauth_service.settings` re-exports it; :mod:`sketchauth_service.limits` raises it without
importing the settings (the settings import the limits, never the other way round).
"""

from __future__ import annotations

__all__ = ["SettingsError"]


class SettingsError(ValueError):
    """A setting is missing or malformed; the service must not start."""
