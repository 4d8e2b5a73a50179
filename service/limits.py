"""The request limits of one running service: one value each, enforced and published alike.

:class:`RequestLimits` is built once from the settings (:meth:`RequestLimits.of`). The request
models (:mod:`service.requests`) and the scheme parameter models (:mod:`service.schemes`) take
their bounds from it, so the number a client reads in the OpenAPI schema or in
``GET /v1/schemes`` is the number that refuses its request — there is no second copy to drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from service.settings import Settings

__all__ = ["PIN_MAX_LENGTH", "PIN_MIN_LENGTH", "SCHEME_NAME_MAX_LENGTH", "USER_ID_MAX_LENGTH", "RequestLimits"]

#: PINs and passwords mixed into a sketch: characters.
PIN_MIN_LENGTH = 4
PIN_MAX_LENGTH = 256
#: User ids are opaque to the service: at most this many characters of ``[A-Za-z0-9._~@+-]``.
USER_ID_MAX_LENGTH = 128
#: Longest ``scheme`` value (a scheme name or ``pipeline:<name>``).
SCHEME_NAME_MAX_LENGTH = 128


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """What one request may carry (``SKETCHAUTH_MAX_SAMPLES``, ``_MAX_SAMPLE_LENGTH``, ``_MAX_BODY_BYTES``)."""

    #: Enrolment captures per request.
    max_samples: int
    #: Numbers per sample (feature vector, byte string, set or raw embedding).
    max_sample_length: int
    #: Bytes per request body.
    max_body_bytes: int

    @classmethod
    def of(cls, settings: Settings) -> RequestLimits:
        return cls(settings.max_samples, settings.max_sample_length, settings.max_body_bytes)

    @classmethod
    def default(cls) -> RequestLimits:
        """The limits of the default settings (what the service enforces when nothing is configured)."""
        from service.settings import Settings

        fields = Settings.model_fields
        return cls(fields["max_samples"].default, fields["max_sample_length"].default, fields["max_body_bytes"].default)
