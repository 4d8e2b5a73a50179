"""The service's use cases, one function each, with no HTTP in them: enrol, attempt, report, revoke, reset.

The routers (:mod:`sketchauth_service.api`) turn a request into one of the typed inputs below,
call one function here in a worker thread, and turn its result or its exception into an answer
(:mod:`sketchauth_service.api.errors`). Only the store (:mod:`sketchauth_service.store`) touches
the database. Tests call these functions directly with a :class:`~sketchauth_service.state.ServiceState`.

An **attempt** (:func:`attempt`) is one verification, key release or PIN change: the claim
(read and count in one store transaction), then either the decoy's work for an id without a
usable enrolment (:func:`decoy_attempt`) or the verification itself, then the settlement
(:func:`settle`): ``verify-fail``, the reset of a success, or the PIN change's rewrite.

Verification answers ``{"verified": false}`` alike for an unknown user, a far sample, a sample
that does not fit the enrolment (wrong dimension or range), a wrong PIN and a missing PIN, after
the same argon2 work and the same store round trips, each a counted failure. User ids with no
enrolment are counted and throttled the same way, so no answer tells whether an id is enrolled.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from sketchauth.errors import ParameterError, SampleError
from sketchauth_service.authenticator import EnrolmentResult, Probe, SecondFactor, Verification
from sketchauth_service.pipelines import LoadedPipeline, check_dimensions, pipeline_report
from sketchauth_service.schemes import SchemeSpec, build_sketch
from sketchauth_service.state import ServiceState
from sketchauth_service.store import FailureState, NewEnrolment, UserNotFound, UserRecord

__all__ = [
    "AttemptInput",
    "Enrolled",
    "EnrolmentChanged",
    "EnrolmentInput",
    "InvalidEnrolment",
    "PipelineChanged",
    "SamePin",
    "SecondInput",
    "UnknownPipeline",
    "UseCaseError",
    "attempt",
    "decoy_attempt",
    "enrol",
    "enrolled_pipeline",
    "offered_pipeline",
    "refused_field",
    "report",
    "reset",
    "revoke",
    "second_factor",
    "settle",
]


# -- what the use cases refuse ---------------------------------------------------------------------
class UseCaseError(Exception):
    """A request a use case refuses for a reason of its own (the routers answer it as a problem)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidEnrolment(UseCaseError):
    """Enrolment samples or parameters the scheme refuses (``sample``: the samples are at fault)."""

    def __init__(self, detail: str, *, sample: bool) -> None:
        super().__init__(detail)
        self.sample = sample


class PipelineChanged(UseCaseError):
    """The feature pipeline an enrolment was made through is gone or changed since (nothing counted)."""


class EnrolmentChanged(UseCaseError):
    """The enrolment was replaced or revoked while a PIN change verified against it (nothing changed)."""


class SamePin(UseCaseError):
    """A PIN change to the PIN itself: refused before any work, so that a PIN change is no verification oracle."""


class UnknownPipeline(UseCaseError):
    """An enrolment names a pipeline this service does not offer."""


# -- inputs ----------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SecondInput:
    """A second biometric to enrol: its scheme, validated parameter model and samples."""

    scheme: str
    params: BaseModel
    samples: Sequence[Any]


@dataclass(frozen=True, slots=True)
class EnrolmentInput:
    """An enrolment request, checked by the app's request models.

    ``spec`` is the plain scheme enrolled on, ``pipeline`` the configured pipeline's name when
    the request enrols through one (exactly one of them is set).
    """

    user_id: str
    scheme: str
    params: BaseModel | None
    samples: Sequence[Any]
    pin: str | None
    replace: bool
    spec: SchemeSpec | None = None
    pipeline: str | None = None
    second: SecondFactor | None = None


@dataclass(frozen=True, slots=True)
class AttemptInput:
    """One verification attempt: plain, key release (``key_context``) or PIN change (``new_pin``)."""

    user_id: str
    sample: Sequence[Any]
    pin: str | None
    second_sample: Sequence[Any] | None = None
    key_context: bytes | None = None
    new_pin: str | None = None


@dataclass(frozen=True, slots=True)
class Enrolled:
    """What an enrolment made: the library's result, the stored report, whether it replaced one."""

    result: EnrolmentResult
    report: dict[str, Any]
    has_pin: bool
    replaced: bool
    pipeline: LoadedPipeline | None = None


def second_factor(second: SecondInput | None, schemes: dict[str, SchemeSpec]) -> SecondFactor | None:
    """The library's :class:`SecondFactor` of a checked ``second`` field (``None``: none sent)."""
    if second is None:
        return None
    spec = schemes[second.scheme]
    arguments, options = spec.split(second.params)
    return SecondFactor(spec, arguments, options, second.samples)


# -- enrolment -------------------------------------------------------------------------------------
def enrol(state: ServiceState, request: EnrolmentInput) -> Enrolled:
    """Sketch, hash and store one enrolment (:class:`InvalidEnrolment`, ``AlreadyEnrolled``).

    Runs in a worker thread: the sketching and argon2 work is CPU-bound.
    """
    loaded = None
    try:
        if request.pipeline is not None:
            loaded = offered_pipeline(state, request.pipeline)
            check_dimensions(loaded.pipeline, request.samples)
            result = state.authenticator.enrol_pipeline(loaded.pipeline, request.samples, request.pin, request.second)
        else:
            if request.spec is None or request.params is None:
                raise UnknownPipeline("an enrolment names a scheme or a pipeline")
            arguments, options = request.spec.split(request.params)
            result = state.authenticator.enrol(
                request.spec, arguments, options, request.samples, request.pin, request.second
            )
    except ParameterError as exc:
        raise InvalidEnrolment(str(exc), sample=False) from None
    except SampleError as exc:
        raise InvalidEnrolment(f"{refused_field(request)}: {exc}", sample=True) from None
    has_pin = request.pin is not None
    report = result.enrolment.report.to_dict()
    if loaded is not None:
        report = pipeline_report(loaded, report, pin=has_pin or request.second is not None)
    record = NewEnrolment(
        user_id=request.user_id,
        scheme=result.sketch.scheme_name if request.spec is None else request.spec.name,
        params=result.stored.params(),
        helper=result.enrolment.helper,
        secret_hash=result.enrolment.secret_hash,
        key_params=result.enrolment.key_params,
        report=report,
        has_pin=has_pin,
        pipeline=None if loaded is None else loaded.name,
        pipeline_sha256=None if loaded is None else loaded.fingerprint,
    )
    replaced = state.store.enrol(record, replace=request.replace, now=state.clock())
    return Enrolled(result, report, has_pin, replaced, loaded)


_FEATURE = re.compile(r"\bfeature (\d+)\b")


def refused_field(request: EnrolmentInput) -> str:
    """The field, as the client sent it, of the value a scheme refused (``samples[0][2]``).

    The library names a feature of the secret it derives from all the samples; on this error path
    each sample is tried alone (the same sample repeated to the scheme's fewest) to find the one
    refused, and the feature the library names in it. ``samples`` when no single sample is.
    """
    probes: list[tuple[str, SchemeSpec, dict[str, Any], dict[str, Any], Sequence[Any]]] = []
    if request.spec is not None and request.params is not None:
        arguments, options = request.spec.split(request.params)
        probes.append(("samples", request.spec, arguments, options, request.samples))
    if request.second is not None:
        second = request.second
        probes.append(("second.samples", second.spec, second.arguments, second.options, second.samples))
    for name, spec, arguments, options, samples in probes:
        try:
            sketch = build_sketch(spec.name, arguments)
        except (ParameterError, ValueError):
            continue
        for i, sample in enumerate(samples):
            try:
                sketch.check_secret(spec.secret_from_samples(sketch, [sample] * max(1, spec.min_samples), options))
            except SampleError as exc:
                feature = _FEATURE.search(str(exc))
                return f"{name}[{i}]" + (f"[{feature.group(1)}]" if feature else "")
            except (ParameterError, ValueError):
                continue
    return "samples"


def offered_pipeline(state: ServiceState, name: str) -> LoadedPipeline:
    """The loaded pipeline ``name`` (the request models offer only these: anything else is refused)."""
    loaded = state.pipelines.get(name)
    if loaded is None:
        raise UnknownPipeline(f"unknown pipeline {name!r}")
    return loaded


def report(state: ServiceState, user_id: str) -> dict[str, Any]:
    """The stored entropy report (:class:`UserNotFound` without a usable enrolment)."""
    record = state.store.get(user_id)
    if record is None:
        raise UserNotFound(user_id)
    return record.report


def revoke(state: ServiceState, user_id: str) -> None:
    """Delete the enrolment (:class:`UserNotFound` if none)."""
    state.store.revoke(user_id, state.clock())


def reset(state: ServiceState, user_id: str) -> None:
    """Admin reset of the throttling state (:class:`UserNotFound` if none)."""
    state.store.reset(user_id, state.clock())


# -- attempts --------------------------------------------------------------------------------------
def attempt(state: ServiceState, request: AttemptInput) -> Verification:
    """One verification attempt, throttled and counted (runs in a worker thread).

    Key release (``key_context``) and PIN change (``new_pin``) are verifications too: the same
    claim, the same work and the same answer for every failure; only a success differs (the key
    is returned, or the helper data and hash under the new PIN replace the old ones).

    The attempt is counted as a failure (atomically, in the store) before any decode or hash
    work: concurrent attempts cannot all slip past the lockout check, and a client that hangs up
    mid-request has still spent its attempt. A success resets the count; anything else stays a
    counted failure: giving an attempt back could undo a wait or a disable that concurrent
    attempts had imposed (and audited) meanwhile. :class:`~sketchauth_service.store.AttemptRefused`
    while a wait runs or the biometric is disabled; :class:`PipelineChanged` and :class:`SamePin`
    (a PIN change to the same PIN) before anything is counted.

    No answer tells whether the id is enrolled: an id with no enrolment (or whose record failed
    its integrity checks) is claimed and counted like an enrolled one and verified against the
    store's decoy; a sample that does not fit the enrolment is a failed attempt after the same
    argon2 work as any other failure. Store round trips: two, whoever the id is and whatever the
    outcome (:mod:`sketchauth_service.store.sql`, "Round trips").
    """
    if request.new_pin is not None and request.new_pin == request.pin:
        # A "change" that changes nothing would answer whether the sample verifies and leave no
        # trace in the enrolment: the pin scope is for changing PINs, not for verifying.
        raise SamePin("the new PIN is the current PIN: send a different new_pin (nothing was counted)")
    found: list[LoadedPipeline | None] = [None]  # the record's pipeline, found by admit()

    def admit(enrolled: UserRecord) -> None:
        # Before the claim: a changed pipeline is refused and nothing is counted.
        if enrolled.pipeline is not None:
            found[0] = enrolled_pipeline(state, enrolled)

    claimed = state.store.begin_attempt(request.user_id, state.policy, state.clock(), admit=admit)
    record = claimed.record
    if record is None:  # no enrolment, or one that failed its integrity checks (counted, alerted)
        decoy_attempt(state, claimed.decoy, request)
        return settle(state, request, claimed.claim, None, None)
    state.authenticator.remember(record)
    key_params = record.key_params
    if request.key_context is not None and key_params is None:  # enrolled before key release: set once
        key_params = state.store.ensure_key_params(request.user_id, state.authenticator.key_params())
        if key_params is None:  # revoked since the claim
            state.authenticator.dummy_verify(with_pin=request.pin is not None)
            return settle(state, request, claimed.claim, record, None)
    loaded = found[0]
    try:
        probe = Probe(
            request.sample,
            request.pin,
            request.second_sample,
            pipeline=None if loaded is None else loaded.pipeline,
            key_context=request.key_context,
            key_params=key_params,
            new_pin=request.new_pin,
        )
        outcome: Verification | None = state.authenticator.verify(record, probe)
    except SampleError:
        # A sample of the wrong shape or range for this enrolment: a failed attempt like any
        # other, after the argon2 work of one (that of an unknown id with the same request).
        state.authenticator.dummy_verify(with_pin=request.pin is not None)
        outcome = None
    return settle(state, request, claimed.claim, record, outcome)


def settle(
    state: ServiceState,
    request: AttemptInput,
    claim: FailureState,
    record: UserRecord | None,
    outcome: Verification | None,
) -> Verification:
    """Record a claimed attempt's outcome: ``verify-fail``, a success's reset, or a PIN change.

    :class:`EnrolmentChanged` when a PIN change finds the enrolment replaced or revoked since it
    was verified (nothing is changed).
    """
    if record is None or outcome is None or not outcome.verified:
        state.store.settle_failure(request.user_id, claim, state.clock())
        return Verification(False)
    if outcome.new_helper is not None:
        changed = state.store.change_pin(
            request.user_id,
            state.clock(),
            version=record.version,
            helper=outcome.new_helper,
            secret_hash=outcome.new_hash or "",
        )
        if not changed:
            raise EnrolmentChanged("the enrolment was replaced or revoked during the PIN change; nothing was changed")
    else:
        state.store.record_success(request.user_id, state.clock(), version=record.version, new_hash=outcome.new_hash)
    return outcome


def decoy_attempt(state: ServiceState, decoy: UserRecord | None, request: AttemptInput) -> None:
    """The work of a failed attempt, for a user id with no usable enrolment: decode and hash the
    sample against the store's decoy (:attr:`sketchauth_service.store.Attempt.decoy`, another user's
    enrolment opened at the cost of the id's own, its outcome ignored), else (no decoy yet, or the
    sample does not fit it) the argon2 work of a failure."""
    pipeline = None
    if decoy is not None and decoy.pipeline is not None:
        try:
            pipeline = enrolled_pipeline(state, decoy).pipeline
        except PipelineChanged:
            decoy = None
    if decoy is None:
        state.authenticator.dummy_verify(with_pin=request.pin is not None)
        return
    try:
        state.authenticator.verify(decoy, Probe(request.sample, request.pin, request.second_sample, pipeline))
    except SampleError:
        state.authenticator.dummy_verify(with_pin=request.pin is not None)


def enrolled_pipeline(state: ServiceState, record: UserRecord) -> LoadedPipeline:
    """The configured pipeline the record was enrolled through, unchanged (:class:`PipelineChanged` otherwise)."""
    loaded = state.pipelines.get(record.pipeline or "")
    if loaded is None:
        raise PipelineChanged(
            f"this user enrolled through pipeline {record.pipeline!r}, which the service no longer offers"
        )
    if loaded.fingerprint != record.pipeline_sha256:  # public configuration hashes, not secrets
        raise PipelineChanged(
            f"pipeline {record.pipeline!r} changed since this user enrolled (fingerprint "
            f"{(record.pipeline_sha256 or '')[:12]}… then, {loaded.fingerprint[:12]}… now); re-enrol the user "
            "or restore the pipeline file"
        )
    return loaded
