"""The request limits of one running service: one value each, enforced and published alike.

:class:`RequestLimits` is built once from the settings (:meth:`RequestLimits.of`). The request
models (:mod:`sketchauth_service.requests`) and the scheme parameter models (:mod:`sketchauth_service.schemes`) take
their bounds from it, so the number a client reads in the OpenAPI schema or in
``GET /v1/schemes`` is the number that refuses its request — there is no second copy to drift.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sketchauth_service.errors import SettingsError

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_SAMPLES",
    "DEFAULT_MAX_SAMPLE_LENGTH",
    "MAX_BODY_BYTES",
    "MAX_ENROLMENT_NUMBERS",
    "PIN_MAX_LENGTH",
    "PIN_MIN_LENGTH",
    "SCHEME_NAME_MAX_LENGTH",
    "USER_ID_MAX_LENGTH",
    "RequestLimits",
]

#: PINs and passwords mixed into a sketch: characters.
PIN_MIN_LENGTH = 4
PIN_MAX_LENGTH = 256
#: User ids are opaque to the service: at most this many characters of ``[A-Za-z0-9._~@+-]``.
USER_ID_MAX_LENGTH = 128
#: Longest ``scheme`` value (a scheme name or ``pipeline:<name>``).
SCHEME_NAME_MAX_LENGTH = 128

# Bounded cost per request: every accepted request costs at most 0.25 s of CPU and 64 MB on top of
# its argon2 hashes (benchmarks/bench_worst_request.py; docs/service/limits.md has the table).
# Within the scheme caps of sketchauth_service.schemes no single sample comes close (the worst, a 65,536-
# element PinSketch(32, 256) sample, 0.11 s and 6 MB); what grows without bound is an enrolment's
# captures times their length, which the template derivations of the asymmetric sketch and the
# weighted vault keep whole in memory, and the body that carries them.
#: Most numbers one enrolment may carry (``max_samples * max_sample_length``): 2^18. Measured at
#: 2^20 (256 captures of 4,096): weighted vault 0.57 s and 84 MB, asymmetric s2 0.31 s and 65 MB,
#: both over budget; at 2^18 (64 captures) about a quarter of that. The default limits (16 x 4,096)
#: are 2^16.
MAX_ENROLMENT_NUMBERS = 1 << 18
#: Largest request body an operator may allow: parsing JSON holds about 7 times the body's size
#: in Python objects (a 6.8 MiB body of integers peaked at 45 MB in ``json.loads`` alone), so
#: 4 MiB keeps parsing near 28 MB; the largest enrolment within MAX_ENROLMENT_NUMBERS needs about
#: 2 MiB (64 captures of 4,096 weighted-vault elements).
MAX_BODY_BYTES = 1 << 22
#: The defaults of ``SKETCHAUTH_MAX_SAMPLES``, ``SKETCHAUTH_MAX_SAMPLE_LENGTH`` and ``SKETCHAUTH_MAX_BODY_BYTES``.
DEFAULT_MAX_SAMPLES = 16
DEFAULT_MAX_SAMPLE_LENGTH = 4096
DEFAULT_MAX_BODY_BYTES = 1 << 20


class LimitSettings(Protocol):
    """The settings the limits are read from (the service's ``Settings`` has them)."""

    @property
    def max_samples(self) -> int: ...
    @property
    def max_sample_length(self) -> int: ...
    @property
    def max_body_bytes(self) -> int: ...


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """What one request may carry (``SKETCHAUTH_MAX_SAMPLES``, ``_MAX_SAMPLE_LENGTH``, ``_MAX_BODY_BYTES``)."""

    #: Enrolment captures per request.
    max_samples: int
    #: Numbers per sample (feature vector, byte string, set or raw embedding).
    max_sample_length: int
    #: Bytes per request body.
    max_body_bytes: int

    def __post_init__(self) -> None:
        problems = self.over_budget()
        if problems:
            raise ValueError("; ".join(problems))

    def over_budget(self) -> list[str]:
        """What makes these limits let through a request dearer than the budget (empty: nothing)."""
        problems = []
        if self.max_samples * self.max_sample_length > MAX_ENROLMENT_NUMBERS:
            problems.append(
                f"SKETCHAUTH_MAX_SAMPLES x SKETCHAUTH_MAX_SAMPLE_LENGTH is {self.max_samples} x "
                f"{self.max_sample_length} = {self.max_samples * self.max_sample_length} numbers per enrolment, "
                f"at most {MAX_ENROLMENT_NUMBERS} are allowed (the cost of one request is bounded): lower one of them"
            )
        if self.max_body_bytes > MAX_BODY_BYTES:
            problems.append(
                f"SKETCHAUTH_MAX_BODY_BYTES is {self.max_body_bytes}, at most {MAX_BODY_BYTES} (4 MiB) is allowed "
                "(parsing a body holds about 7 times its size in memory): lower it"
            )
        return problems

    @classmethod
    def of(cls, settings: LimitSettings) -> RequestLimits:
        """The settings' limits; ``SettingsError`` if they would let a request cost more than the budget."""
        try:
            return cls(settings.max_samples, settings.max_sample_length, settings.max_body_bytes)
        except ValueError as exc:
            raise SettingsError(str(exc)) from None

    @classmethod
    def default(cls) -> RequestLimits:
        """The limits of the default settings (what the service enforces when nothing is configured)."""
        return cls(DEFAULT_MAX_SAMPLES, DEFAULT_MAX_SAMPLE_LENGTH, DEFAULT_MAX_BODY_BYTES)
