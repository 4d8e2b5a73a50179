"""Enrolment and verification on top of the library's public API.

Enrol: samples (+ PIN) → secret → sketch with fresh randomness → helper data, the argon2id hash
of the canonically encoded secret (``sketchauth.enrolment.secret_message``) and the entropy
report. Verify: sample (+ PIN) → decode → hash → constant-time compare (argon2-cffi's verify)
→ yes/no; on success a hash made with an older argon2 profile is re-made with the current one
(``check_needs_rehash``) from the message the sample just recovered.

Through a feature pipeline (:mod:`sketchauth_service.pipelines`) the raw embeddings are turned into the
pipeline sketch's secret (enrolment) or sample (verification) first; the rest is the same.

Key release and PIN change run the same verification and, only on success, derive the key
(``sketchauth.enrolment.key_from_message``: argon2id of the recovered secret's message with the
enrolment's key salt, expanded by HKDF for the context) or re-mix the stored cascade under the
new PIN (``MixedSketch.rekey``) and hash the new secret. The recovered message never leaves
this module.

Second factor (Fang's thesis ch. 7.4, multi-factor): an enrolment may add a second biometric
(:class:`SecondFactor`), mixed with the first by :func:`factor_structure`: the less important
secret's key mixes the more important one's sketch, so the first biometric (the one that can
never be replaced) is the best protected. Without a PIN it is the two-fuzzy-secret cascade
``Cascade(first, FuzzySecret(second))``: the second biometric's Toeplitz-extracted key mixes the
first's sketch. With a PIN it is the chain PIN → second → first
(``Chaining(ExactKey, FuzzySecret(second), FuzzySecret(first))``): the argon2id-stretched PIN
mixes the second's sketch, whose key mixes the first's. Verification needs every factor the
enrolment holds; a missing, unexpected or wrong one is the same failure after the same work.

Both are CPU-bound (argon2, decoding) and run off the event loop on the authenticator's own
threads, as many as it may hash at once (:class:`Authenticator`): argon2's memory (19 MiB a hash
with ``owasp``) stays allocated in those threads' malloc arenas and is reused by the next hash,
instead of being mapped and faulted in afresh (about 10 ms of kernel time a hash) or kept by every
thread of the server's pool that ever hashed.
Unknown users cost the same work: the store hands every attempt without a usable record a decoy
enrolment to verify against (:attr:`sketchauth_service.store.Attempt.decoy`), and without one
:meth:`Authenticator.dummy_verify` verifies against a hash made at start-up with the current
profile, so timing does not reveal who is enrolled.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypeVar

import argon2

from sketchauth.enrolment import (
    Enrolment,
    enrol,
    hasher,
    key_cost_limit,
    key_from_message,
    new_key_params,
    secret_message,
)
from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.mixing import Cascade, Chaining, ExactKey, FuzzySecret, MixedSketch
from sketchauth.sketches.base import SecureSketch
from sketchauth_service.observability import timed
from sketchauth_service.schemes import SchemeSpec, build_sketch, pin_cascade, stored_sketch
from sketchauth_service.store import UserRecord


class Captures(tuple[Any, ...]):
    """Several captures of one verification attempt (a verification body's ``samples``)."""


def _captures_probe(pipeline: Pipeline | None, captures: Captures) -> Any:
    """One probe from an attempt's captures: an angular pipeline averages their directions
    (:meth:`~sketchauth.features.angular.AngularPipeline.captures_transform`); any other enrolment
    refuses them (``SampleError``: a failed attempt like any sample that does not fit)."""
    average = getattr(pipeline, "captures_transform", None)
    if average is None:
        raise SampleError("several captures are verified only for an angular pipeline enrolment")
    return average(list(captures))


def _captures_sketch(pipeline: Pipeline | None, captured: int) -> SecureSketch[Any, Any] | None:
    """The sketch that decides an attempt of ``captured`` captures when it is not the pipeline's own:
    an angular pipeline's threshold calibrated for that many
    (:meth:`~sketchauth.features.angular.AngularPipeline.sketch_for_captures`); ``None`` otherwise."""
    choose = getattr(pipeline, "sketch_for_captures", None)
    if pipeline is None or choose is None or captured == 1:
        return None
    chosen: SecureSketch[Any, Any] = choose(captured)
    return None if chosen is pipeline.sketch else chosen


def _mixed_at(
    mixed: SecureSketch[Any, Any], roles: FactorRoles, biometric: SecureSketch[Any, Any]
) -> SecureSketch[Any, Any]:
    """The stored structure with its first biometric decided by ``biometric`` (the pipeline's sketch at
    another threshold: the same parameters, so the same helper data)."""
    if not isinstance(mixed, MixedSketch):
        return mixed
    return mixed.deciding_with(roles.first, biometric)


if TYPE_CHECKING:
    from sketchauth.features.pipeline import Pipeline

__all__ = [
    "MIXED",
    "Authenticator",
    "EnrolmentResult",
    "FactorRoles",
    "SecondFactor",
    "Verification",
    "factor_roles",
    "factor_structure",
]

#: Scheme name of mixed sketches (what a PIN enrolment's stored parameters rebuild).
MIXED = "mixed"

_T = TypeVar("_T")

#: Hashed when the sample cannot even produce a candidate, so that path costs the same.
_NO_CANDIDATE = b"\x00sketchauth/no-candidate"


@dataclass(frozen=True, slots=True)
class Verification:
    verified: bool
    #: A fresh hash with the current profile when the stored one needs re-hashing; after a PIN
    #: change, the hash of the secret under the new PIN.
    new_hash: str | None = None
    #: Key release: the derived key (only when ``verified``). Returned to the caller, never stored.
    key: bytes | None = None
    #: PIN change: the stored cascade's helper data re-mixed under the new PIN.
    new_helper: bytes | None = None


@dataclass(frozen=True, slots=True)
class Probe:
    """What one verification attempt brings, besides the stored record it is checked against.

    ``sample``: the (first) biometric sample, or :class:`Captures` of several; ``pin`` and
    ``second_sample`` exactly when the enrolment has them; ``pipeline``: the one the record was
    enrolled through (the caller has checked it). ``key_context`` (with the record's
    ``key_params``) asks a success to release a key; ``new_pin`` asks it to re-mix the helper
    data under a new PIN.
    """

    sample: Any
    pin: str | None = None
    second_sample: Any = None
    pipeline: Pipeline | None = None
    key_context: bytes | None = None
    key_params: str | None = None
    new_pin: str | None = None


@dataclass(frozen=True, slots=True)
class EnrolmentResult:
    #: The biometric's own sketch (its parameters are what the caller chose).
    sketch: SecureSketch[Any, Any]
    #: What was enrolled: the sketch itself, or the PIN cascade around it (stored parameters).
    stored: SecureSketch[Any, Any]
    enrolment: Enrolment
    #: The second biometric's own sketch, when one was enrolled.
    second: SecureSketch[Any, Any] | None = None


# -- second factor (multi-factor enrolments) ------------------------------------------------------
#: Declared importance of the two biometrics (larger: more important; the thesis' guideline that
#: the less important secret's key mixes the more important one's sketch). The PIN, an exact key,
#: is the least important of all: it can be changed.
FIRST_IMPORTANCE = 2
SECOND_IMPORTANCE = 1


@dataclass(frozen=True, slots=True)
class SecondFactor:
    """A second biometric to enrol: its scheme spec, constructor arguments, options and samples."""

    spec: SchemeSpec
    arguments: dict[str, Any]
    options: dict[str, Any]
    samples: Sequence[Any]


@dataclass(frozen=True, slots=True)
class FactorRoles:
    """Component indices of a stored mixed structure: first biometric, second biometric, PIN."""

    first: int
    second: int | None
    pin: int | None

    def arrange(self, first: Any, second: Any, pin: Any) -> list[Any]:
        """``[...]`` in component order: one secret (or sample) per component of the structure."""
        values: list[Any] = [None] * (1 + (self.second is not None) + (self.pin is not None))
        values[self.first] = first
        if self.second is not None:
            values[self.second] = second
        if self.pin is not None:
            values[self.pin] = pin
        return values


def factor_structure(
    first: SecureSketch[Any, Any], second: SecureSketch[Any, Any] | None, pin: ExactKey | None
) -> MixedSketch | SecureSketch[Any, Any]:
    """The structure an enrolment with these factors stores (the first sketch alone if none).

    * PIN only: ``Cascade(first, pin=PIN)`` (:func:`sketchauth_service.schemes.pin_cascade`);
    * second biometric: ``Cascade(first, FuzzySecret(second))``, the two-fuzzy-secret cascade;
    * both: ``Chaining(PIN, FuzzySecret(second), FuzzySecret(first))`` — PIN → second → first.

    Importances are declared (first 2, second 1), so the accounting knows which way the loss
    should flow; the guideline warnings are not raised per request (the structure is fixed
    here), but any the configuration breaks (e.g. a randomised first sketch under a short key)
    are in the stored report's notes.
    """
    if second is None:
        return first if pin is None else Cascade(first, pin=pin, warn=False)
    one = FuzzySecret(first, importance=FIRST_IMPORTANCE)
    two = FuzzySecret(second, importance=SECOND_IMPORTANCE)
    if pin is None:
        return Cascade(one, two, warn=False)
    return Chaining(pin, two, one, warn=False)


def factor_roles(sketch: SecureSketch[Any, Any]) -> FactorRoles:
    """Which component of a stored structure is which factor (first biometric, second, PIN).

    The first biometric is the fuzzy component whose key mixes nothing (the leaf of the chain,
    the best protected); the second biometric is the fuzzy component whose key does; the PIN is
    the exact key. A plain (unmixed) sketch is the first biometric alone.
    """
    if not isinstance(sketch, MixedSketch):
        return FactorRoles(0, None, None)
    first = second = pin = None
    for index, c in enumerate(sketch.components):
        if isinstance(c, ExactKey):
            pin = index
        elif index in sketch.key_owners:
            second = index
        else:
            first = index
    if first is None:  # stored by this service: never; refuse rather than guess
        raise ValueError("the stored structure has no first biometric")
    return FactorRoles(first, second, pin)


def _roles(record: UserRecord) -> tuple[SecureSketch[Any, Any] | None, FactorRoles]:
    """The mixed structure ``record`` stores (``None``: a plain sketch), and which component is which factor."""
    if not (record.has_pin or _is_mixed(record.params)):
        return None, FactorRoles(0, None, None)
    structure = stored_sketch(MIXED, record.params)
    return structure, factor_roles(structure)


def _is_mixed(params: dict[str, Any]) -> bool:
    """Whether stored parameters are a mixed structure's (``MixedSketch.params``), not a scheme's."""
    return set(params) == set(MixedSketch.parameters.required)


#: Kinds of stored hash whose re-hash answer an authenticator keeps (:meth:`Authenticator._needs_rehash`).
_REHASH_KINDS = 64


class Authenticator:
    """Holds the argon2 hasher of the configured profile and does the CPU-bound work.

    The work (decode + argon2) runs on ``concurrency`` threads of its own, which bound how much of
    it runs at once in this process; a caller waits for its turn (first come, first served). Only
    these threads ever hold argon2's memory, so a process keeps at most ``concurrency`` hashes'
    worth, reused from one hash to the next (glibc keeps a freed block in the thread's arena): no
    page faults per hash, and no copy kept by each of the server's many pool threads. Call
    :meth:`close` when done.
    """

    def __init__(self, profile: str, *, concurrency: int = 1, pin_min_entropy: float | None = None) -> None:
        self.profile = profile
        #: Declared min-entropy of PINs (bits) for the cascade's accounting; ``None``: undeclared.
        self.pin_min_entropy = pin_min_entropy
        self._pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="sketchauth-hash")
        self.hasher: argon2.PasswordHasher = hasher(profile)
        #: The costs stored key-release parameters may ask for (the deployment's strongest profile).
        self.key_limit = key_cost_limit(self.hasher)
        self._dummy_hash = self.hasher.hash(secrets.token_bytes(32))
        self._dummy_salt = secrets.token_bytes(16)
        #: The last enrolment verified of each shape (PIN?, second biometric?): see :meth:`_mismatch`.
        self._shaped: dict[tuple[bool, bool], UserRecord] = {}
        #: Whether a stored hash needs a re-hash, by the part of it that decides (:meth:`_needs_rehash`).
        self._rehash_needed: dict[tuple[str, int, int], bool] = {}

    # -- enrolment ---------------------------------------------------------------------------------
    def enrol(
        self,
        spec: SchemeSpec,
        arguments: dict[str, Any],
        options: dict[str, Any],
        samples: Sequence[Any],
        pin: str | None,
        second: SecondFactor | None = None,
    ) -> EnrolmentResult:
        """Sketch and hash the secret the samples define (``SampleError``/``ParameterError`` if bad).

        With a PIN the stored sketch is the cascade (:func:`sketchauth_service.schemes.pin_cascade`), whose
        parameters (including the PIN key's argon2 profile) are what verification rebuilds; with
        a ``second`` biometric, the structure of :func:`factor_structure`.
        """
        return self._run(self._enrol_scheme, spec, arguments, options, samples, pin, second)

    def _enrol_scheme(
        self,
        spec: SchemeSpec,
        arguments: dict[str, Any],
        options: dict[str, Any],
        samples: Sequence[Any],
        pin: str | None,
        second: SecondFactor | None,
    ) -> EnrolmentResult:
        sketch = build_sketch(spec.name, arguments)
        return self._enrol_secret(sketch, spec.secret_from_samples(sketch, samples, options), pin, second)

    def enrol_pipeline(
        self, pipeline: Pipeline, samples: Sequence[Any], pin: str | None, second: SecondFactor | None = None
    ) -> EnrolmentResult:
        """Enrol raw embeddings through ``pipeline``: its transform gives the secret of its sketch.

        The embeddings live only in this call; what comes out is helper data and a hash.
        """
        return self._run(
            lambda: self._enrol_secret(pipeline.sketch, pipeline.secret_from_samples(samples), pin, second)
        )

    def _enrol_secret(
        self, sketch: SecureSketch[Any, Any], secret: Any, pin: str | None, second: SecondFactor | None = None
    ) -> EnrolmentResult:
        if second is None:
            if pin is None:
                return EnrolmentResult(sketch, sketch, enrol(sketch, secret, password_hasher=self.hasher))
            cascade = pin_cascade(sketch, self.profile, self.pin_min_entropy)
            return EnrolmentResult(sketch, cascade, enrol(cascade, [secret, pin], password_hasher=self.hasher))
        other = build_sketch(second.spec.name, second.arguments)
        other_secret = second.spec.secret_from_samples(other, second.samples, second.options)
        key = None if pin is None else ExactKey(self.profile, min_entropy=self.pin_min_entropy)
        structure = factor_structure(sketch, other, key)
        secrets_ = factor_roles(structure).arrange(secret, other_secret, pin)
        return EnrolmentResult(sketch, structure, enrol(structure, secrets_, password_hasher=self.hasher), other)

    # -- verification ------------------------------------------------------------------------------
    def verify(self, record: UserRecord, probe: Probe) -> Verification:
        """One verification (:meth:`_verify`) on a hashing thread, once one is free."""
        return self._run(self._verify, record, probe)

    def _verify(self, record: UserRecord, probe: Probe) -> Verification:
        """One verification; every failure cause is the same ``verified=False``.

        A malformed sample (wrong dimension, NaN, out-of-range element) raises ``SampleError``:
        that is a caller bug, answered 422; the attempt, claimed before this call, stays
        counted. With ``pipeline`` (the caller has checked it is the one the record was enrolled
        through) the raw sample goes through ``pipeline.sample_transform`` first and, without a
        PIN, the pipeline's own sketch decodes it.

        A second biometric (``second_sample``) is required exactly when the enrolment has one,
        like the PIN: missing or unexpected, the attempt fails after the work of
        :meth:`_mismatch`; present, it takes its place in the stored structure
        (:func:`factor_roles`). A second sample of the wrong shape raises ``SampleError`` like a
        first one.
        """
        sample, pin, second_sample, pipeline = probe.sample, probe.pin, probe.second_sample, probe.pipeline
        captured = 1
        if isinstance(sample, Captures):
            captured = len(sample)
            sample = _captures_probe(pipeline, sample)
        elif pipeline is not None:
            sample = pipeline.sample_transform(sample)
        # second factor: a structure with a second biometric is mixed even without a PIN
        mixed, roles = _roles(record)
        if (record.has_pin, roles.second is not None) != (pin is not None, second_sample is not None):
            return self._mismatch(record, replace(probe, sample=sample))
        decided_at = _captures_sketch(pipeline, captured)
        if mixed is not None:
            sketch = mixed if decided_at is None else _mixed_at(mixed, roles, decided_at)
            sample = roles.arrange(sample, second_sample, pin)
        elif pipeline is not None:
            sketch = pipeline.sketch if decided_at is None else decided_at
        else:
            sketch = stored_sketch(record.scheme, record.params)
        try:
            with timed("sketchauth_decode_seconds", scheme=record.scheme):
                candidate = sketch.decode(record.helper, sample)
        except DecodeError:
            candidate = None
        message = _NO_CANDIDATE if candidate is None else secret_message(sketch, candidate)
        try:
            with timed("sketchauth_argon2_seconds"):
                self.hasher.verify(record.secret_hash, message)
        except argon2.exceptions.VerificationError:
            return Verification(False)
        if probe.key_context is not None:
            if probe.key_params is None:  # the caller sets them (lazily for older enrolments) before the attempt
                raise ValueError("key release needs the record's key parameters")
            return Verification(
                True,
                self._rehash(record, message),
                key=key_from_message(message, probe.key_params, probe.key_context, limit=self.key_limit),
            )
        if probe.new_pin is not None:
            return self._rekeyed(record, sketch, candidate, pin, probe.new_pin)
        return Verification(True, self._rehash(record, message))

    def _mismatch(self, record: UserRecord, probe: Probe) -> Verification:
        """A missing or unexpected PIN or second sample: a failed attempt, after the work of one.

        The work is that of a failure of the *request's* shape: the request is verified (outcome
        ignored) against the last enrolment of that shape this process verified, so an attempt
        carrying a second sample costs two decodes and the extractor whether or not ``record``
        has a second biometric; with no such enrolment yet (or a sample that does not fit it),
        the argon2 work an unknown user with the same request pays.
        """
        with_pin = probe.pin is not None
        fitting = self._shaped.get((with_pin, probe.second_sample is not None))
        if fitting is not None and fitting is not record and fitting.pipeline is None:
            try:
                self._verify(fitting, Probe(probe.sample, probe.pin, probe.second_sample))
            except SampleError:
                self._dummy(with_pin=with_pin)
        else:
            self._dummy(with_pin=with_pin)
        return Verification(False)

    def _rehash(self, record: UserRecord, message: bytes) -> str | None:
        return self.hasher.hash(message) if self._needs_rehash(record.secret_hash) else None

    def _needs_rehash(self, stored: str) -> bool:
        """``hasher.check_needs_rehash(stored)``, decided once per kind of stored hash.

        An encoded argon2 hash is ``<type and parameters>$<salt>$<digest>`` and its parameters are
        the text before the salt and the salt's and digest's lengths, which is all that the check
        compares with the hasher's: every hash of one kind (the same profile) gets the same
        answer, so it is kept by that kind (a handful per deployment, bounded all the same) rather
        than parsed again at every verification.
        """
        parts = stored.rsplit("$", 2)
        if len(parts) != 3:
            return self.hasher.check_needs_rehash(stored)
        kind = (parts[0], len(parts[1]), len(parts[2]))
        needed = self._rehash_needed.get(kind)
        if needed is None:
            needed = self.hasher.check_needs_rehash(stored)
            if len(self._rehash_needed) >= _REHASH_KINDS:
                self._rehash_needed.clear()
            self._rehash_needed[kind] = needed
        return needed

    def _rekeyed(
        self, record: UserRecord, sketch: SecureSketch[Any, Any], candidate: Any, pin: str | None, new_pin: str
    ) -> Verification:
        """The verified mixed sketch re-mixed under ``new_pin`` (its one exact key), and the new secret's hash."""
        exact = [i for i, c in enumerate(getattr(sketch, "components", ())) if isinstance(c, ExactKey)]
        if not isinstance(sketch, MixedSketch) or pin is None or len(exact) != 1:  # has_pin records hold one PIN
            return Verification(False)
        helper = sketch.rekey(record.helper, exact[0], pin, new_pin)
        secret = list(candidate)
        secret[exact[0]] = new_pin
        return Verification(True, self.hasher.hash(secret_message(sketch, secret)), new_helper=helper)

    def key_params(self) -> str:
        """Fresh key-release parameters with this service's argon2 profile (costs and a new salt)."""
        return new_key_params(self.hasher)

    def remember(self, record: UserRecord) -> None:
        """Keep ``record`` as the enrolment of its shape for :meth:`_mismatch` (one assignment: atomic across threads).

        The decoy an unknown id is verified against is not kept here: the store hands it out with
        every attempt that has no usable record (:attr:`sketchauth_service.store.Attempt.decoy`), opened at
        the cost of opening a record, so that no endpoint can claim an attempt without it.
        """
        self._remember_shape(record)

    def _remember_shape(self, record: UserRecord) -> None:
        """Keep ``record`` as the enrolment of its shape for :meth:`_mismatch` (second factor)."""
        try:
            shape = (record.has_pin, _roles(record)[1].second is not None)
        except (ParameterError, ValueError):  # not a structure this service stores: never a decoy
            return
        self._shaped[shape] = record

    def dummy_verify(self, *, with_pin: bool = False) -> bool:
        """The argon2 work of one failed verification, for users who are not enrolled.

        With a PIN a real verification stretches the PIN (one argon2id) before hashing the
        recovered secret (another), so the dummy does both. Waits for a hashing thread like a
        real verification.
        """
        return self._run(self._dummy, with_pin=with_pin)

    def _run(self, work: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        """``work(*args, **kwargs)`` on one of the hashing threads, once one is free; its result or exception."""
        return self._pool.submit(work, *args, **kwargs).result()

    def close(self) -> None:
        """Stop the hashing threads (after the work already handed to them)."""
        self._pool.shutdown(wait=True)

    def _dummy(self, *, with_pin: bool) -> bool:
        if with_pin:
            p = self.hasher
            argon2.low_level.hash_secret_raw(
                _NO_CANDIDATE,
                self._dummy_salt,
                time_cost=p.time_cost,
                memory_cost=p.memory_cost,
                parallelism=p.parallelism,
                hash_len=32,
                type=argon2.low_level.Type.ID,
            )
        try:
            return self.hasher.verify(self._dummy_hash, _NO_CANDIDATE)
        except argon2.exceptions.VerificationError:
            return False
