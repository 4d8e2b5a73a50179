"""Fuzzy vaults: the complete Juels–Sudan vault (Juels–Sudan) and the weighted vault (Fang's thesis §6.3).

Both vaults hide a secret polynomial ``F`` among chaff: the values ``F(slot)`` sit at the slots
the secret selects, uniformly random values *different from* ``F(slot)`` everywhere else. A
sample close to the secret selects enough genuine slots for a Reed–Solomon decoder
(Berlekamp–Welch at arbitrary evaluation points, :mod:`._prime_field`) to find ``F``; the secret
is then read back as the set of slots where the vault agrees with ``F``.

:class:`FuzzyVault` ``(p, m, t)`` — sets of ``m`` elements of the prime field ``F_p``
    Every field element is listed once (``r = p``), so the helper is just the ``p`` values
    ``y_i``. ``F`` has degree ``m − 2t − 1``. Decode needs ``|d'| = m`` and returns ``d``
    **exactly when** ``|d' \\ d| ≤ t``; beyond that it never returns ``d`` (it raises
    :class:`DecodeError`, or — when the vault happens to contain a spurious polynomial close to
    the sample — returns a different ``m``-set, which the caller's hash check rejects).

:class:`WeightedFuzzyVault` ``(p, q, g, t)`` — elements of ``[0, p)`` with weights in ``[1, q)``
    Element ``x`` owns the ``q`` slots ``H(j, x) = j + q·x`` of the prime field ``F_P``, ``P`` the
    smallest prime ``≥ p·q``; an element of weight ``v`` puts ``F`` on ``v`` of its slots. See the
    class docstring for the exact acceptance condition.

Both offer ``encode_many`` / ``decode_many`` for evaluation: one Berlekamp–Welch solve for a
whole batch (vectorised Gauss–Jordan) and block-wise evaluation of the recovered polynomials.
All arithmetic is numpy int64 (no galois at run time: see :mod:`._prime_field` for why), so a
fresh process decodes its first vault in a fraction of a second.

Module functions (the estimates of Juels–Sudan and Fang's thesis §6.3 that every vault report carries):
:func:`spurious_polynomials` / :func:`log2_spurious_polynomials`,
:func:`weighted_spurious_polynomials` / :func:`log2_weighted_spurious_polynomials`, and
:func:`candidate_fraction`.

Example::

    >>> vault = FuzzyVault(p=13, m=5, t=1)
    >>> helper = vault.encode({1, 4, 6, 9, 11})              # any collection of integers
    >>> vault.decode(helper, [1, 4, 6, 9, 12]).tolist()      # one wrong element: recovered
    [1, 4, 6, 9, 11]
"""

from __future__ import annotations

import itertools
import math
import numbers
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from sketchauth._lazy import LazyModule
from sketchauth.errors import DecodeError, ParameterError, SampleError, SketchFormatError
from sketchauth.sketches._backend import resolve as resolve_backend
from sketchauth.sketches._prime_field import (
    agreeing_points,
    berlekamp_welch,
    eval_range,
    is_prime,
    lock_values,
    next_prime,
    uniform_below,
)
from sketchauth.sketches.base import (
    EntropyReport,
    ErrorPolicy,
    SchemeDescriptor,
    SecureSketch,
    SymbolSpace,
    check_batch,
)
from sketchauth.sketches.format import pack_uints, uint_width, unpack_uints
from sketchauth.sketches.params import Parameter, ParameterSpec, check_int
from sketchauth.sketches.samples import as_collection, as_element_set, as_integers
from sketchauth.sketches.types import ElementSet, WeightedSet

# secrets loads hmac, hashlib and OpenSSL: on first use (sketchauth._lazy).
_secrets = LazyModule("secrets")
_fractions = LazyModule("fractions")  # exact probabilities, for evaluation only (with decimal: ~1.5 ms)

__all__ = [
    "MAX_CANDIDATE_POINTS",
    "MAX_LISTED_SLOTS",
    "FuzzyVault",
    "VaultRandomness",
    "WeightedFuzzyVault",
    "WeightedVaultRandomness",
    "candidate_fraction",
    "lock_slots",
    "log2_spurious_polynomials",
    "log2_weighted_spurious_polynomials",
    "slot_field_size",
    "spurious_polynomials",
    "unlock_slots",
    "weighted_parts",
    "weighted_spurious_polynomials",
]

#: Largest number of listed values (``p`` for the vault, ``p·q`` for the weighted vault): keeps a
#: helper record (≤ 4 bytes a value) well under the 16 MiB format limit.
MAX_LISTED_SLOTS = 1 << 21
#: Largest number of points handed to the decoder (``m``, or ``q·|d'|``): Berlekamp–Welch solves
#: an ``n × n`` system, so this bounds decode time and memory on untrusted samples.
MAX_CANDIDATE_POINTS = 512
#: ``randomness_space`` enumerates at most this many values (exact evaluation only).
MAX_ENUMERATED_RANDOMNESS = 1 << 20
#: The ``μ`` at which reports quote the spurious-polynomial estimate.
REPORT_MU = 1e-4
#: Rows evaluated at once in the batch paths (bounds the ``rows × slots`` int64 scratch arrays).
_BATCH_ROWS = 64


# -- the slot engine ----------------------------------------------------------------------------
def slot_field_size(slots: int) -> int:
    """The prime field of a vault listing ``slots`` values: the smallest prime ``P ≥ slots``.

    :class:`WeightedFuzzyVault` lists ``p·q`` slots in ``F_P`` with this ``P``.

    >>> slot_field_size(20_000)
    20011
    """
    return next_prime(check_int("slots", slots, 2, MAX_LISTED_SLOTS))


def lock_slots(coefficients: np.ndarray, genuine: np.ndarray, chaff_offsets: np.ndarray, slots: int) -> np.ndarray:
    """The values of a vault of ``slots`` slots: ``F`` at the ``genuine`` slots, chaff at the others.

    ``F`` has the given ``coefficients`` (lowest degree first) in ``F_P``,
    ``P = slot_field_size(slots)``; ``genuine`` are strictly increasing slot indices; the
    ``slots − len(genuine)`` offsets ``u ∈ [0, P−1)`` give the chaff ``u + [u ≥ F(x)]`` (uniform
    offsets: uniform chaff different from ``F(x)``), in slot order. The engine under
    :class:`WeightedFuzzyVault`, for weights the class does not take (e.g. ``q = 2`` with
    weight ``q``: Fang's thesis, §6.3.2). Draw the randomness with :mod:`secrets` outside
    simulations.
    """
    field_size = slot_field_size(slots)
    coefficients = np.asarray(coefficients, dtype=np.int64)
    genuine = np.asarray(genuine, dtype=np.int64)
    chaff_offsets = np.asarray(chaff_offsets, dtype=np.int64)
    if np.any((coefficients < 0) | (coefficients >= field_size)):
        raise ParameterError(f"coefficients must lie in [0, {field_size})")
    if genuine.ndim != 1 or np.any(np.diff(genuine) <= 0) or np.any((genuine < 0) | (genuine >= slots)):
        raise ParameterError(f"genuine slots must be strictly increasing in [0, {slots})")
    if chaff_offsets.shape != (slots - genuine.shape[0],) or np.any(
        (chaff_offsets < 0) | (chaff_offsets >= field_size - 1)
    ):
        raise ParameterError(f"need {slots - genuine.shape[0]} chaff offsets in [0, {field_size - 1})")
    return lock_values(coefficients, field_size, slots, genuine, chaff_offsets)


def unlock_slots(values: np.ndarray, candidates: np.ndarray, k: int) -> np.ndarray:
    """The slots of a locked vault that carry its ``F``, found from the ``candidates`` slots.

    Berlekamp–Welch on the candidate slots finds the polynomial of ``k`` coefficients when at
    least ``⌈(n + k)/2⌉`` of the ``n`` candidates carry it; the result is every slot of the vault
    agreeing with it (ascending). Raises :class:`~sketchauth.errors.DecodeError` otherwise.
    """
    values = np.asarray(values, dtype=np.int64)
    candidates = np.asarray(candidates, dtype=np.int64)
    field_size = slot_field_size(values.shape[0])
    n = candidates.shape[0]
    check_int("k", k, 1, n)
    if n > MAX_CANDIDATE_POINTS or np.unique(candidates).shape[0] != n or np.any(candidates >= values.shape[0]):
        raise ParameterError(f"candidates must be at most {MAX_CANDIDATE_POINTS} distinct slots of the vault")
    coeffs, ok = berlekamp_welch(candidates[None, :], values[candidates][None, :], k, field_size)
    if not ok[0]:
        raise DecodeError(f"fewer than {-(-(n + k) // 2)} of the {n} candidate slots carry a polynomial")
    return agreeing_points(coeffs[0], values, field_size, values.shape[0])


# -- estimates ----------------------------------------------------------------------------------


def _check_mu(mu: Any) -> float:
    if isinstance(mu, bool) or not isinstance(mu, (int, float, np.integer, np.floating)):
        raise ParameterError(f"mu must be a number, got {type(mu).__name__}")
    if not 0.0 < float(mu) < 1.0:
        raise ParameterError(f"mu must be in (0, 1), got {mu!r}")
    return float(mu)


def _from_log2(log2_value: float, name: str) -> float:
    """``2^log2_value`` as a float; refuses (rather than returning inf or 0) outside float range."""
    if log2_value < -1074.0:
        raise ParameterError(f"{name} = 2^{log2_value:.1f} underflows a float; use log2_{name}")
    try:
        return math.pow(2.0, log2_value)
    except OverflowError:
        raise ParameterError(f"{name} = 2^{log2_value:.1f} overflows a float; use log2_{name}") from None


def log2_spurious_polynomials(mu: float, p: int, r: int, m: int, t: int) -> float:
    """``log2`` of the Juels–Sudan estimate ``(μ/3)·p^((m−2t−1)−m)·(r/m)^m`` (Juels–Sudan).

    With probability at least ``1 − μ`` a vault listing ``r`` points of ``F_p`` holds at least
    this many polynomials of degree ``m − 2t − 1`` other than ``F`` that also pass through ``m``
    vault points. Computed as ``log2(μ/3) − (2t+1)·log2 p + m·log2(r/m)``, which never overflows.
    """
    mu = _check_mu(mu)
    p = check_int("p", p, 2)
    m = check_int("m", m, 1)
    r = check_int("r", r, m)
    t = check_int("t", t, 0)
    if m - 2 * t - 1 < 0:
        raise ParameterError(f"m={m} and t={t} give a negative degree m - 2t - 1")
    return math.log2(mu / 3.0) - (2 * t + 1) * math.log2(p) + m * math.log2(r / m)


def spurious_polynomials(mu: float, p: int, r: int, m: int, t: int) -> float:
    """The Juels–Sudan estimate ``(μ/3)·p^((m−2t−1)−m)·(r/m)^m`` as a float (the value itself).

    Computed in logs (:func:`log2_spurious_polynomials`); raises :class:`ParameterError` instead
    of returning ``inf`` or ``0.0`` when the value is outside the float range.

    >>> f"{spurious_polynomials(1e-4, 65521, 65521, 40, 8):.3e}"
    '1.649e+42'
    """
    return _from_log2(log2_spurious_polynomials(mu, p, r, m, t), "spurious_polynomials")


def log2_weighted_spurious_polynomials(mu: float, p: int, q: int, r: int, g: int, D: int) -> float:
    """``log2`` of ``(μ/3)·p^(D−g)·(q·r/D)^D`` (Fang's thesis §6.3; ``D = g − 2t' − 1``).

    ``p`` is the element universe, ``q`` the slots per element, ``r`` the number of listed
    elements, ``g`` the total weight. For ``D = 0`` the factor ``(q·r/D)^D`` is taken as its limit
    1 (a constant polynomial).
    """
    mu = _check_mu(mu)
    p = check_int("p", p, 2)
    q = check_int("q", q, 1)
    r = check_int("r", r, 1)
    g = check_int("g", g, 1)
    D = check_int("D", D, 0, g - 1)
    spread = D * math.log2(q * r / D) if D else 0.0
    return math.log2(mu / 3.0) + (D - g) * math.log2(p) + spread


def weighted_spurious_polynomials(mu: float, p: int, q: int, r: int, g: int, D: int) -> float:
    """``(μ/3)·p^(D−g)·(q·r/D)^D`` as a float, computed in logs (see the log2 variant)."""
    return _from_log2(log2_weighted_spurious_polynomials(mu, p, q, r, g, D), "weighted_spurious_polynomials")


def _covering_subsets(e: int, q: int, g: int) -> int:
    """Number of ``g``-subsets of the ``e·q`` slots of ``e`` elements touching every element."""
    return sum((-1) ** i * math.comb(e, i) * math.comb(q * (e - i), g) for i in range(e + 1))


def candidate_fraction(r: int, g: int, a: int, *, q: int = 2) -> float:
    """Fraction of ``g``-subsets of the ``q·r`` listed slots whose slots lie on at most ``a`` elements.

    An attacker who interpolates a degree-``(g−1)`` polynomial through ``g`` listed slots and
    keeps only *candidates* — those whose slots are spread over at most ``a`` distinct elements,
    as a heavily weighted template's are — keeps this fraction of all subsets (Fang's thesis §6.3).

    For ``q = 2`` (the thesis' case): a subset with ``x`` elements holding both slots covers
    ``g − x`` elements, of which ``g − 2x`` hold one slot (2 choices each), so the count is
    ``C(r, g−x)·C(g−x, x)·2^(g−2x)``, summed over ``x = max(0, g−a) … ⌊g/2⌋``, over ``C(2r, g)``.

    Note: Fang's thesis §6.3.2 prints ``2^(g−x)``; that overcounts (it treats a doubly used element as having
    two choices) and makes the "fraction" over all ``x`` exceed 1 — e.g. ``r = g = 2`` gives 8/6.
    With ``2^(g−2x)`` the terms over all ``x`` sum to exactly ``C(2r, g)``, which the tests check.
    Other ``q`` count by inclusion–exclusion over the covered elements. Exact integer
    arithmetic (:class:`fractions.Fraction`) throughout; only the final ratio is a float (so a
    fraction below the smallest float, ~5e-324, rounds to 0.0).

    >>> candidate_fraction(2, 2, 1)      # 2 of the 6 pairs of slots lie on one element
    0.3333333333333333
    """
    q = check_int("q", q, 2)
    r = check_int("r", r, 1)
    g = check_int("g", g, 1, q * r)
    a = check_int("a", a, 0, g)
    if q == 2:
        count = sum(
            math.comb(r, g - x) * math.comb(g - x, x) * 2 ** (g - 2 * x) for x in range(max(0, g - a), g // 2 + 1)
        )
    else:
        count = sum(math.comb(r, e) * _covering_subsets(e, q, g) for e in range(a + 1))
    return float(_fractions.Fraction(count, math.comb(q * r, g)))


# -- shared helpers ----------------------------------------------------------------------------


def _check_prime_modulus(name: str, value: int) -> int:
    if not is_prime(value):
        raise ParameterError(f"{name}={value} is not prime")
    return value


def _chaff(f_values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Map offsets ``u ∈ [0, P−1)`` onto ``F_P \\ {F(slot)}``: ``u`` below ``F(slot)``, else ``u+1``.

    This is a bijection ``[0, P−1) → F_P \\ {F(slot)}`` per slot, so a uniform offset gives a
    uniform chaff value different from ``F(slot)`` (exactly, no rejection bias).
    """
    return offsets + (offsets >= f_values)


def _offsets_from_chaff(f_values: np.ndarray, chaff: np.ndarray) -> np.ndarray:
    """Inverse of :func:`_chaff` (the randomness is recoverable)."""
    return chaff - (chaff > f_values)


def _chunks(count: int) -> Iterator[slice]:
    for start in range(0, count, _BATCH_ROWS):
        yield slice(start, min(count, start + _BATCH_ROWS))


def _lock_rows(
    coeffs: np.ndarray, count: int, modulus: int, genuine: np.ndarray, offsets: np.ndarray, backend: str
) -> np.ndarray:
    """Vault value rows for a batch: ``F`` at every genuine point, chaff everywhere else.

    ``coeffs`` ``(B, k)`` are the polynomials ``F`` over ``F_modulus``, ``count`` the number of
    listed points ``0 … count−1``, ``genuine`` ``(B, g)`` the increasing indices of the genuine
    points per row and ``offsets`` ``(B, count − g)`` the chaff randomness, mapped by
    :func:`_chaff` onto a value different from ``F`` at each remaining point (in index order).
    """
    if backend == "native":
        return np.stack(
            [
                lock_values(c, modulus, count, g, o, backend=backend)
                for c, g, o in zip(coeffs, genuine, offsets, strict=False)
            ]
        )
    values = eval_range(coeffs, count, modulus, backend=backend)
    is_genuine = np.zeros(values.shape, dtype=bool)
    np.put_along_axis(is_genuine, genuine, True, axis=1)
    chaff_f = values[~is_genuine].reshape(values.shape[0], count - genuine.shape[1])
    values[~is_genuine] = _chaff(chaff_f, offsets).ravel()
    return values


def _agreeing_rows(
    coeffs: np.ndarray, ys: np.ndarray, modulus: int, limit: int, ok: np.ndarray, backend: str
) -> list[np.ndarray | None]:
    """Per decoded row, the points where the vault agrees with its ``F`` (at most ``limit + 1``)."""
    if backend == "native":
        return [
            agreeing_points(c, y, modulus, limit, backend=backend) if good else None
            for c, y, good in zip(coeffs, ys, ok, strict=False)
        ]
    agree = eval_range(coeffs, ys.shape[1], modulus, backend=backend) == ys
    return [np.flatnonzero(row)[: limit + 1] if good else None for row, good in zip(agree, ok, strict=False)]


def _enumerate(limit_name: str, total: int) -> None:
    if total > MAX_ENUMERATED_RANDOMNESS:
        raise ParameterError(f"{limit_name}: {total} randomness values is too many to enumerate")


# -- the complete vault ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VaultRandomness:
    """Encoder randomness of :class:`FuzzyVault`: ``F``'s coefficients and the chaff offsets.

    ``coefficients`` (lowest degree first, ``m − 2t`` values in ``[0, p)``) and
    ``chaff_offsets`` (``p − m`` values in ``[0, p−1)``, one per non-member in increasing order;
    see :func:`_chaff`).
    """

    coefficients: np.ndarray
    chaff_offsets: np.ndarray


#: The most sample elements a vault's ``m`` (or ``2t + 1``) can ask for.
MAX_TOLERANCE = (MAX_CANDIDATE_POINTS - 1) // 2
#: Most slots per element of a weighted vault (weights lie in ``[1, q)``).
MAX_WEIGHT_SLOTS = 1 << 16

#: The fuzzy vault's parameters and their limits (published as they are by the service).
PARAMETERS = ParameterSpec.of(
    Parameter("p", "int", "prime field size: elements are 0..p-1", low=2, high=MAX_LISTED_SLOTS),
    Parameter("m", "int", "set size, m <= p (every sample has exactly m elements)", low=1, high=MAX_CANDIDATE_POINTS),
    Parameter("t", "int", "wrong elements tolerated (m >= 2t + 1)", low=0, high=MAX_TOLERANCE),
)

#: The weighted vault's parameters and their limits.
WEIGHTED_PARAMETERS = ParameterSpec.of(
    Parameter("p", "int", "element universe [0, p)", low=2, high=MAX_LISTED_SLOTS),
    Parameter(
        "q",
        "int",
        f"slots per element; weights lie in [1, q); p*q <= {MAX_LISTED_SLOTS}",
        low=3,
        high=MAX_WEIGHT_SLOTS,
    ),
    Parameter(
        "g",
        "int",
        "total weight of every enrolment, g <= p(q-1) (fixed per deployment)",
        low=1,
        high=MAX_CANDIDATE_POINTS,
    ),
    Parameter("t", "int", "decoder slack (g >= 2t + 1): accepts iff c - w >= g - 2t", low=0, high=MAX_TOLERANCE),
)

#: Options of the weighted vault's template (:func:`sketchauth.templates.weighted_vault_template`).
WEIGHTED_TEMPLATE_OPTIONS = (
    Parameter(
        "min_count",
        "int",
        "enrolment option: captures an element must appear in (default: a majority)",
        low=1,
        required=False,
    ),
)


def _tolerance_sweep(size: int, low: int, fractions: tuple[float, ...]) -> list[int]:
    """Tolerances ``round(f·⌊(size − 1)/2⌋)`` (at least ``low``) for each fraction ``f``."""
    top = (size - 1) // 2
    return sorted({max(low, round(top * f)) for f in fractions})


def _default_sweep(params: Mapping[str, Any]) -> list[int]:
    """Wrong elements tolerated, from 10% to all of the ``⌊(m − 1)/2⌋`` the vault can correct."""
    return _tolerance_sweep(int(params.get("m", 8)), 1, (0.1, 0.2, 0.3, 0.45, 0.6, 0.8, 1.0))


def _weighted_default_sweep(params: Mapping[str, Any]) -> list[int]:
    """Decoder slack from half to all of ``⌊(g − 1)/2⌋``."""
    return _tolerance_sweep(int(params.get("g", 9)), 0, (0.5, 0.6, 0.7, 0.8, 0.9, 1.0))


def _small_instance(params: Mapping[str, Any]) -> tuple[dict[str, Any], list[Any]]:
    """F_5, m = 3, t = 1: all ten 3-subsets (5^1 · 4^2 = 80 randomness values each)."""
    return {"p": 5, "m": 3, "t": 1}, [list(c) for c in itertools.combinations(range(5), 3)]


class FuzzyVault(SecureSketch[ElementSet, ElementSet]):
    """Complete fuzzy vault over ``F_p`` for sets of ``m`` elements, tolerating ``t`` wrong ones.

    Enc(``d``): draw ``F`` of degree ``m − 2t − 1`` (coefficients uniform in ``F_p``); for each
    ``i ∈ F_p`` the helper lists ``y_i = F(i)`` if ``i ∈ d``, else ``y_i`` uniform in
    ``F_p \\ {F(i)}``. Dec(``d'``), ``|d'| = m``: Berlekamp–Welch on ``{(i, y_i) : i ∈ d'}`` with
    message length ``k = m − 2t`` (radius ``⌊(m−k)/2⌋ = t``) gives ``F``; return
    ``{i : y_i = F(i)}``, which must have exactly ``m`` elements.

    Guarantee: decode returns ``d`` if and only if ``|d' \\ d| ≤ t``. *If*: the points of
    ``d' ∩ d`` lie on ``F`` and every other point is chaff, ``≠ F(i)``, so ``F`` is within ``t``
    and is the decoder's unique answer, and the agreeing set is exactly ``d``. *Only if*: an
    answer ``F'`` whose agreeing set is ``d`` matches ``F`` on ``m > deg F`` points, so ``F' = F``,
    but ``F`` disagrees with more than ``t`` points of ``d'`` and the decoder only returns
    polynomials within ``t``. Beyond ``t`` decode raises :class:`DecodeError` unless the vault
    holds a *spurious* polynomial of the same degree within ``t`` of the sample whose agreeing set
    has exactly ``m`` elements (likely only for small ``p``; :func:`spurious_polynomials`); then
    it returns that other set, and the caller's hash check rejects it. With ``t = 0`` every
    ``m`` points interpolate, so a wrong sample is caught only by that size check (the
    ``p − m`` chaff values each match the interpolant with probability ``1/(p−1)``).

    Accounting (Juels–Sudan): the helper is any vector of ``F_p^p``, ``|S| = p·log2 p``.
    Given ``(d, S)``, ``F`` is the interpolant of the ``m ≥ k`` points on ``d`` and each offset is
    ``y_i − [y_i > F(i)]``, so the randomness is recoverable, uniform over
    ``p^(m−2t)·(p−1)^(p−m)`` values: ``H∞(R) = (m−2t)·log2 p + (p−m)·log2(p−1)``, and the loss is at
    most ``|S| − H∞(R) = 2t·log2 p + (p−m)·log2(p/(p−1))``.

    Limits: ``p`` prime, ``p ≤ 2^21`` listed values (:data:`MAX_LISTED_SLOTS`),
    ``m ≤ 512`` (:data:`MAX_CANDIDATE_POINTS`), ``m ≥ 2t + 1``.

    ``backend`` (``"auto"``, ``"native"``, ``"numpy"``) selects the arithmetic for this object
    (see :func:`sketchauth.sketches.backend`); it never changes results or the helper format.
    """

    descriptor = SchemeDescriptor(
        name="fuzzy-vault",
        sample_kind="set",
        summary="complete Juels-Sudan fuzzy vault over F_p: close iff at most t of the m elements differ",
        parameters=PARAMETERS,
        length_parameters=("m",),
        sweep="t",
        default_sweep=_default_sweep,
        small_instance=_small_instance,
        linkage_attacks={"fuzzy-vault": "differential-cross-matching"},
        example=(
            {"p": 257, "m": 8, "t": 2},
            [[3, 17, 40, 66, 101, 150, 200, 251]],
            [3, 17, 40, 66, 101, 150, 9, 10],
        ),
    )

    def __init__(self, p: int, m: int, t: int, *, backend: str = "auto") -> None:
        self.backend = resolve_backend(backend)
        self.p = _check_prime_modulus("p", check_int("p", p, 2, MAX_LISTED_SLOTS))
        self.m = check_int("m", m, 1, min(self.p, MAX_CANDIDATE_POINTS))
        self.t = check_int("t", t, 0)
        self.k = self.m - 2 * self.t
        if self.k < 1:
            raise ParameterError(f"t={self.t} is too large for m={self.m}: need m >= 2t + 1")
        self._width = uint_width(self.p - 1)

    # -- parameters -------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {"p": self.p, "m": self.m, "t": self.t}

    # -- secrets and randomness -------------------------------------------------------------------
    def _element_set(self, elements: Any, name: str) -> np.ndarray:
        d = as_element_set(elements, 0, self.p, max_size=self.p, name=name)
        if d.shape[0] != self.m:
            raise SampleError(f"{name} must have exactly {self.m} elements (the vault's m), got {d.shape[0]}")
        return d

    def check_secret(self, secret: Any) -> np.ndarray:
        return self._element_set(secret, "secret")

    def secret_bytes(self, secret: Any) -> bytes:
        return pack_uints(self.check_secret(secret), self._width)

    def draw_randomness(self, secret: Any) -> VaultRandomness:
        return VaultRandomness(uniform_below(self.p, self.k), uniform_below(self.p - 1, self.p - self.m))

    def randomness_space(self, secret: Any) -> Iterable[tuple[VaultRandomness, float]]:
        total = self.p**self.k * (self.p - 1) ** (self.p - self.m)
        _enumerate("fuzzy vault", total)
        prob = 1.0 / total
        for coeffs in itertools.product(range(self.p), repeat=self.k):
            for offsets in itertools.product(range(self.p - 1), repeat=self.p - self.m):
                yield VaultRandomness(np.array(coeffs, np.int64), np.array(offsets, np.int64)), prob

    def _check_randomness(self, randomness: Any) -> VaultRandomness:
        if not isinstance(randomness, VaultRandomness):
            raise ParameterError("randomness must be a VaultRandomness")
        coeffs = np.asarray(randomness.coefficients, dtype=np.int64)
        offsets = np.asarray(randomness.chaff_offsets, dtype=np.int64)
        if coeffs.shape != (self.k,) or np.any((coeffs < 0) | (coeffs >= self.p)):
            raise ParameterError(f"randomness needs {self.k} coefficients in [0, {self.p})")
        if offsets.shape != (self.p - self.m,) or np.any((offsets < 0) | (offsets >= self.p - 1)):
            raise ParameterError(f"randomness needs {self.p - self.m} chaff offsets in [0, {self.p - 1})")
        return VaultRandomness(coeffs, offsets)

    # -- encode / decode --------------------------------------------------------------------------
    def _encode_payload(self, secret: np.ndarray, randomness: Any) -> bytes:
        r = self._check_randomness(randomness)
        values = _lock_rows(
            r.coefficients[None, :], self.p, self.p, secret[None, :], r.chaff_offsets[None, :], self.backend
        )
        return pack_uints(values[0], self._width)

    def _values(self, payload: bytes) -> np.ndarray:
        return cast("np.ndarray", unpack_uints(payload, self._width, self.p).astype(np.int64))

    def _check_payload(self, payload: bytes) -> None:
        # Range is the whole structure: with the chaff, every vector of F_p^p is a vault value
        # vector (mixing relies on this: it adds pads in F_p to the values).
        if np.any(self._values(payload) >= self.p):
            raise SketchFormatError(f"fuzzy vault value out of range for F_{self.p}")

    def _decode_payload(self, payload: bytes, sample: Any) -> np.ndarray:
        return cast(
            "np.ndarray", self._decode_rows([self._values(payload)], [self._element_set(sample, "sample")], "raise")[0]
        )

    def _decode_rows(
        self, values: Sequence[np.ndarray], samples: Sequence[np.ndarray], errors: ErrorPolicy
    ) -> list[Any]:
        """Decode a batch of (vault values, validated sample) pairs."""
        results: list[Any] = [None] * len(values)
        for rows in _chunks(len(values)):
            ys = np.stack(values[rows])
            xs = np.stack(samples[rows])
            coeffs, ok = berlekamp_welch(xs, np.take_along_axis(ys, xs, axis=1), self.k, self.p, backend=self.backend)
            agreeing = _agreeing_rows(coeffs, ys, self.p, self.m, ok, self.backend)
            for i, row in enumerate(range(rows.start, rows.stop)):
                found = agreeing[i]
                if found is not None and found.shape[0] == self.m:
                    results[row] = found.astype(np.int64)
                    continue
                error = DecodeError(f"sample is too far from the enrolled set (more than {self.t} wrong elements)")
                if errors == "raise":
                    raise error
                results[row] = error
        return results

    # -- batch APIs ----------------------------------------------------------------------------------
    def encode_many(self, secrets: Iterable[Any]) -> list[bytes]:
        """Helper data for many secrets, fresh randomness each, vectorised over the batch.

        Same output distribution as calling :meth:`encode` on each; the polynomial evaluation and
        chaff mapping run on ``(rows × p)`` arrays, at most 64 rows at a time.
        """
        checked = [self.check_secret(s) for s in as_collection(secrets, "secrets", what="sets", ordered=True)]
        helpers: list[bytes] = []
        for rows in _chunks(len(checked)):
            batch = np.stack(checked[rows])
            coeffs = uniform_below(self.p, batch.shape[0] * self.k).reshape(batch.shape[0], self.k)
            offsets = uniform_below(self.p - 1, batch.shape[0] * (self.p - self.m))
            values = _lock_rows(coeffs, self.p, self.p, batch, offsets.reshape(batch.shape[0], -1), self.backend)
            helpers.extend(self._wrap(pack_uints(row, self._width)) for row in values)
        return helpers

    def decode_many(
        self, helpers: Iterable[bytes], samples: Iterable[Any], *, errors: ErrorPolicy = "raise"
    ) -> list[Any]:
        """Decode many (helper, sample) pairs; Berlekamp–Welch runs on the whole batch at once.

        Malformed helpers or samples raise at once (``SketchFormatError`` / ``SampleError``).
        A sample too far from its secret raises :class:`DecodeError` with ``errors="raise"``; with
        ``errors="return"`` the list holds that ``DecodeError`` instance in its place, so
        evaluation code can count failures without losing the batch.
        """
        helpers, samples = check_batch(helpers, samples, errors)
        values = [self._values(self.payload(h)) for h in helpers]
        checked = [self._element_set(s, "sample") for s in samples]
        return self._decode_rows(values, checked, errors)

    # -- accounting -----------------------------------------------------------------------------------
    def report(self) -> EntropyReport:
        log_p = math.log2(self.p)
        randomness = self.k * log_p + (self.p - self.m) * math.log2(self.p - 1)
        log2_spurious = log2_spurious_polynomials(REPORT_MU, self.p, self.p, self.m, self.t)
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=self.p * log_p,
            randomness_bits=randomness,
            notes=(
                f"complete vault over F_{self.p}: |S| = p log2 p, H(R) = (m-2t) log2 p + (p-m) log2(p-1)",
                "loss <= 2t log2 p + (p-m) log2(p/(p-1))",
                f"Juels-Sudan: with probability 1 - {REPORT_MU:g} at least 2^{log2_spurious:.1f} "
                f"spurious polynomials of degree {self.k - 1} (mu = {REPORT_MU:g}, r = p)",
            ),
            extra={"log2_spurious_polynomials": log2_spurious, "mu": REPORT_MU, "degree": self.k - 1},
        )

    # -- symbols (for mixing) -------------------------------------------------------------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        moduli = np.full(self.p, self.p, dtype=np.uint64)
        return self._values(payload).astype(np.uint64), SymbolSpace("mod", moduli=moduli)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        return pack_uints(symbols, self._width)


# -- the weighted vault ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WeightedVaultRandomness:
    """Encoder randomness of :class:`WeightedFuzzyVault`.

    ``coefficients``: ``g − 2t`` values in ``[0, P)`` (lowest degree first);
    ``genuine_slots``: ``g`` slot indices ``j ∈ [0, q)``, the ``v_i`` distinct increasing indices
    of each enrolled element in turn (elements ascending); ``chaff_offsets``: ``p·q − g`` values in
    ``[0, P−1)``, one per chaff slot in increasing slot order.
    """

    coefficients: np.ndarray
    genuine_slots: np.ndarray
    chaff_offsets: np.ndarray


WeightedSecret = tuple[np.ndarray, np.ndarray]

_WEIGHTED_FORMS = (
    "a weighted secret is a mapping {element: weight}, (element, weight) pairs such as "
    "[(3, 2), (17, 1)] or dict.items(), or (elements, weights) such as ([3, 17], [2, 1])"
)


def weighted_parts(secret: Any, *, max_elements: int | None = None) -> tuple[Any, Any]:
    """Split a weighted secret into ``(elements, weights)``, from the forms a caller naturally holds.

    * a **mapping** ``{element: weight}`` (a ``dict``, a ``collections.Counter``, ...);
    * **pairs** ``(element, weight)``: any iterable of two-item pairs — a list of tuples,
      ``dict.items()``, ``zip(elements, weights)``, a generator (read once), a set of tuples,
      an ``(N, 2)`` array;
    * **parallel** ``(elements, weights)``: two ordered collections of equal length — what
      :func:`sketchauth.templates.enrol_weighted_set` returns — or a ``(2, N)`` array.

    Two entries of two values each fit both of the last two forms. Such an input is read as
    ``(elements, weights)`` when it is a tuple whose entries are not both tuples (``([3, 17],
    [2, 2])``, a tuple of two arrays), as pairs when it is not a tuple and its entries are tuples
    (``[(3, 2), (17, 2)]``, ``dict.items()``), and refused as ambiguous otherwise
    (``[[3, 2], [17, 2]]``, a 2×2 array): pass a mapping. The values themselves are checked by
    the caller (:meth:`WeightedFuzzyVault.check_secret`).
    """
    if isinstance(secret, Mapping):
        return list(secret.keys()), list(secret.values())
    if isinstance(secret, np.ndarray) and secret.ndim == 2:
        return _array_parts(secret)
    if isinstance(secret, (numbers.Number, np.generic)):
        raise SampleError(f"secret needs a weight for each element: {_WEIGHTED_FORMS}")
    limit = None if max_elements is None else max_elements + 2
    entries = list(as_collection(secret, "secret", what="(element, weight) pairs", max_size=limit))
    parts = [_weighted_entry(entry, index, limit) for index, entry in enumerate(entries)]
    if entries and all(part is None for part in parts):
        raise SampleError(f"secret needs a weight for each element: {_WEIGHTED_FORMS}")
    if any(part is None for part in parts):
        raise SampleError(f"secret mixes numbers and collections: {_WEIGHTED_FORMS}")
    outer_tuple = isinstance(secret, tuple)
    inner_tuples = bool(entries) and all(isinstance(entry, tuple) for entry in entries)
    pairs = all(len(part) == 2 for part in parts)  # type: ignore[arg-type]
    # A set has no first and second entry; tuples inside a non-tuple are written as pairs.
    parallel = len(parts) == 2 and not isinstance(secret, AbstractSet) and (outer_tuple or not inner_tuples)
    if pairs and parallel:
        if outer_tuple == inner_tuples:
            raise SampleError(
                "secret is ambiguous: two entries of two values read both as (elements, weights) and as two "
                "(element, weight) pairs; pass a mapping {element: weight}, a tuple (elements, weights) "
                "or a list of tuples [(element, weight), ...]"
            )
        parallel = outer_tuple
    if parallel:
        return parts[0], parts[1]
    if pairs:
        return [part[0] for part in parts], [part[1] for part in parts]  # type: ignore[index]
    bad = next(i for i, part in enumerate(parts) if len(part) != 2)  # type: ignore[arg-type]
    raise SampleError(f"secret entry {bad} is not an (element, weight) pair: {_WEIGHTED_FORMS}")


def _array_parts(secret: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows, cols = secret.shape
    if (rows, cols) == (2, 2):
        raise SampleError("a 2x2 array is ambiguous as a weighted secret: pass a mapping {element: weight}")
    if rows == 2:
        return secret[0], secret[1]
    if cols == 2:
        return secret[:, 0], secret[:, 1]
    raise SampleError(
        f"a weighted secret array must have shape (N, 2) (pairs) or (2, N) (elements, weights), got {secret.shape}"
    )


def _weighted_entry(entry: Any, index: int, limit: int | None) -> list[Any] | np.ndarray | None:
    """One entry of a weighted secret: ``None`` for a number, else its items, read once and in order."""
    if isinstance(entry, (numbers.Number, np.generic)) or (isinstance(entry, np.ndarray) and entry.ndim == 0):
        return None
    return as_collection(entry, f"secret entry {index}", max_size=limit, ordered=True)


class WeightedFuzzyVault(SecureSketch[WeightedSet, ElementSet]):
    """Weighted fuzzy vault (Fang's thesis §6.3): elements of ``[0, p)`` with weights, total weight ``g``.

    Secret: distinct elements of ``[0, p)`` with weights in ``[0, q)``, as a mapping
    ``{element: weight}``, ``(element, weight)`` pairs (a list of tuples, ``dict.items()``,
    ``zip(elements, weights)``, a generator) or ``(elements, weights)`` — see
    :func:`weighted_parts` for the exact rules. Weight-0 elements carry no slot, so they are
    dropped: the canonical secret is the elements of positive weight, ascending, with their
    weights, and the weights must sum to exactly ``g``. Samples are plain sets of elements (a
    ``set``, list, generator, array, ...).

    Field: element ``x`` owns slots ``H(j, x) = j + q·x``, ``j ∈ [0, q)``, an injection of
    ``[0, q) × [0, p)`` onto ``[0, p·q)``. The field is ``F_P`` with ``P`` the *smallest prime*
    ``≥ p·q``: a prime field keeps every vault on the same integer arithmetic as
    :class:`FuzzyVault` (one decoder), and the smallest one keeps the helper short. The helper
    lists ``y_s`` for all ``p·q`` slots (the complete weighted vault, ``r = p`` elements).

    Enc: ``F`` of degree ``D = g − 2t − 1`` with uniform coefficients; each enrolled ``x_i``
    puts ``F(slot)`` on ``v_i`` of its slots chosen uniformly; every other slot carries chaff
    uniform in ``F_P \\ {F(slot)}``.

    Why ``g`` is a fixed parameter: the decoder must know ``deg F``. If ``g`` were each person's
    own ``Σ v_i``, it would be stored in (or derivable from) the helper, and a sum of
    identity-dependent weights is exactly the clear auxiliary data that links two enrolments of
    one person (Fang's thesis §6.2, s1). With ``g`` fixed for a deployment every helper has the same
    parameters; enrolment must produce weights summing to ``g``.

    Dec(``d'``) — a set of elements, ``1 ≤ |d'|``, ``q·|d'| ≤ 512``: the candidate points are all
    ``n = q·|d'|`` slots of the elements of ``d'``. Berlekamp–Welch with message length
    ``k = g − 2t`` finds the unique polynomial within ``⌊(n − k)/2⌋`` of them; the genuine slots
    are those where the vault agrees with it, the elements are their owners and the weights
    their counts. **Acceptance condition**: with ``c`` the number of candidate slots that carry
    ``F`` (``c = Σ_{x ∈ d' ∩ d} v_x``) and ``w = n − c`` the others,

        decode returns the enrolled ``(elements, weights)``  ⇔  ``c − w ≥ g − 2t``.

    (``w ≤ ⌊(n−k)/2⌋ ⇔ 2w ≤ n − k ⇔ c − w ≥ k``.) If it holds, chaff never equals ``F`` so the
    agreeing slots are exactly the genuine ones. If it fails, ``F`` is outside the decoder's
    radius and any polynomial whose agreeing slots were the genuine ones would equal ``F``
    (``g > D`` points), so the true secret is never returned: decode raises
    :class:`DecodeError`, or, for a spurious polynomial in range whose agreeing slots total ``g``
    with no element on all ``q`` of its slots, returns another secret (the hash check rejects
    it). Each element of ``d'`` adds ``2v_x − q`` to ``c − w`` (``−q`` if it is not enrolled),
    so a heavier element helps more, and decoding needs enrolled weights above ``q/2`` on
    average: that is why ``q ≥ 3`` (with ``q = 2`` every weight is 1, ``c − w ≤ 0`` and no
    unique decoder can succeed).

    Accounting: ``|S| = p·q·log2 P``. The slot choice is *not* recoverable from ``(d, S)`` (two
    choices can both be consistent with one helper), so it is not counted: for each choice at
    most one ``(F, chaff)`` yields ``S``, hence ``Pr[S = s | d] ≤ 2^(−H∞(F, chaff))`` and the loss
    is at most ``|S| − H∞(F, chaff)`` with ``H∞(F, chaff) = (g−2t)·log2 P + (p·q − g)·log2(P−1)``.

    Limits: ``q ≥ 3``, ``p·q ≤ 2^21`` slots, ``g ≤ min(p·(q−1), 512)``, ``g ≥ 2t + 1``.
    ``backend`` as for :class:`FuzzyVault`.

    Example::

        >>> vault = WeightedFuzzyVault(p=50, q=4, g=9, t=3)     # k = 3
        >>> helper = vault.encode({3: 3, 17: 3, 40: 3})         # or ([3, 17, 40], [3, 3, 3])
        >>> elements, weights = vault.decode(helper, {3, 17})  # c - w = 6 - 2 >= 3
        >>> elements.tolist(), weights.tolist()
        ([3, 17, 40], [3, 3, 3])
    """

    descriptor = SchemeDescriptor(
        name="weighted-vault",
        sample_kind="set",
        summary="weighted fuzzy vault: several captured sets give elements weighted by consistency "
        "(sketchauth.templates.enrol_weighted_set, fitted to total weight g); accepts iff c - w >= g - 2t",
        parameters=WEIGHTED_PARAMETERS,
        template="sketchauth.templates:weighted_vault_template",
        template_options=WEIGHTED_TEMPLATE_OPTIONS,
        min_captures=2,
        max_captures=None,
        sweep="t",
        default_sweep=_weighted_default_sweep,
        linkage_attacks={"weighted-vault": "differential-cross-matching"},
        example=({"p": 50, "q": 4, "g": 9, "t": 3}, [[3, 17, 40], [3, 17, 40], [3, 17, 40, 5]], [3, 17]),
    )

    def __init__(self, p: int, q: int, g: int, t: int, *, backend: str = "auto") -> None:
        self.backend = resolve_backend(backend)
        self.p = check_int("p", p, 2, MAX_LISTED_SLOTS)
        self.q = check_int("q", q, 3, MAX_WEIGHT_SLOTS)
        if self.p * self.q > MAX_LISTED_SLOTS:
            raise ParameterError(f"p*q = {self.p * self.q} slots exceeds {MAX_LISTED_SLOTS}")
        # g ≤ 512: presenting the whole template takes more than g candidate points, which must
        # fit the decoder (MAX_CANDIDATE_POINTS); this also keeps report() fast.
        self.g = check_int("g", g, 1, min(self.p * (self.q - 1), MAX_CANDIDATE_POINTS))
        self.t = check_int("t", t, 0)
        self.k = self.g - 2 * self.t
        if self.k < 1:
            raise ParameterError(f"t={self.t} is too large for g={self.g}: need g >= 2t + 1")
        if self.k > MAX_CANDIDATE_POINTS:
            raise ParameterError(f"g - 2t = {self.k} exceeds {MAX_CANDIDATE_POINTS} decoder points")
        self.slots = self.p * self.q
        self.field_size = next_prime(self.slots)
        self._width = uint_width(self.field_size - 1)
        self._element_width = uint_width(self.p - 1)
        self._weight_width = uint_width(self.q - 1)
        self._max_sample = MAX_CANDIDATE_POINTS // self.q

    # -- parameters -------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        return {"p": self.p, "q": self.q, "g": self.g, "t": self.t}

    # -- secrets and randomness -------------------------------------------------------------------
    def check_secret(self, secret: Any) -> WeightedSecret:
        """The canonical ``(elements, weights)`` from any of the forms of :func:`weighted_parts`."""
        elements, weights = weighted_parts(secret, max_elements=self.p)
        e = as_integers(elements, "secret elements", low=0, high=self.p, ordered=True)
        w = as_integers(weights, "secret weights", ordered=True)
        if e.shape != w.shape:
            raise SampleError(f"secret has {e.shape[0]} elements but {w.shape[0]} weights: give one weight per element")
        as_element_set(e, 0, self.p, name="secret elements")
        if np.any((w < 0) | (w >= self.q)):
            raise SampleError(f"secret weights must be in [0, {self.q}) (q={self.q})")
        keep = w > 0
        order = np.argsort(e[keep])
        e, w = e[keep][order], w[keep][order]
        if int(w.sum()) != self.g:
            raise SampleError(f"secret weights must sum to g={self.g}, got {int(w.sum())}")
        return e, w

    def secret_bytes(self, secret: Any) -> bytes:
        e, w = self.check_secret(secret)
        return struct.pack(">I", e.shape[0]) + pack_uints(e, self._element_width) + pack_uints(w, self._weight_width)

    def _draw_genuine_slots(self, weights: np.ndarray) -> np.ndarray:
        """For each enrolled element, ``v`` distinct slot indices of ``[0, q)``, uniformly, ascending."""
        rng = _secrets.SystemRandom()
        # One draw per enrolled element (at most g of them), not per slot: not a hot loop.
        chosen = [sorted(rng.sample(range(self.q), int(v))) for v in weights]
        return np.array([j for group in chosen for j in group], dtype=np.int64)

    def draw_randomness(self, secret: Any) -> WeightedVaultRandomness:
        _, weights = secret
        return WeightedVaultRandomness(
            uniform_below(self.field_size, self.k),
            self._draw_genuine_slots(weights),
            uniform_below(self.field_size - 1, self.slots - self.g),
        )

    def randomness_space(self, secret: Any) -> Iterable[tuple[WeightedVaultRandomness, float]]:
        _, weights = self.check_secret(secret)
        P = self.field_size
        choices = [list(itertools.combinations(range(self.q), int(v))) for v in weights]
        n_choices = math.prod(len(c) for c in choices)
        total = P**self.k * n_choices * (P - 1) ** (self.slots - self.g)
        _enumerate("weighted vault", total)
        prob = 1.0 / total
        for coeffs in itertools.product(range(P), repeat=self.k):
            for choice in itertools.product(*choices):
                slots = np.array([j for group in choice for j in group], dtype=np.int64)
                for offsets in itertools.product(range(P - 1), repeat=self.slots - self.g):
                    yield WeightedVaultRandomness(np.array(coeffs, np.int64), slots, np.array(offsets, np.int64)), prob

    def _genuine(self, secret: WeightedSecret, genuine_slots: np.ndarray) -> np.ndarray:
        elements, weights = secret
        return cast("np.ndarray", np.repeat(elements * self.q, weights) + genuine_slots)

    def _check_randomness(self, secret: WeightedSecret, randomness: Any) -> WeightedVaultRandomness:
        if not isinstance(randomness, WeightedVaultRandomness):
            raise ParameterError("randomness must be a WeightedVaultRandomness")
        P = self.field_size
        coeffs = np.asarray(randomness.coefficients, dtype=np.int64)
        slots = np.asarray(randomness.genuine_slots, dtype=np.int64)
        offsets = np.asarray(randomness.chaff_offsets, dtype=np.int64)
        if coeffs.shape != (self.k,) or np.any((coeffs < 0) | (coeffs >= P)):
            raise ParameterError(f"randomness needs {self.k} coefficients in [0, {P})")
        if slots.shape != (self.g,) or np.any((slots < 0) | (slots >= self.q)):
            raise ParameterError(f"randomness needs {self.g} genuine slot indices in [0, {self.q})")
        if np.unique(self._genuine(secret, slots)).shape[0] != self.g:
            raise ParameterError("genuine slot indices repeat within an element")
        if offsets.shape != (self.slots - self.g,) or np.any((offsets < 0) | (offsets >= P - 1)):
            raise ParameterError(f"randomness needs {self.slots - self.g} chaff offsets in [0, {P - 1})")
        return WeightedVaultRandomness(coeffs, slots, offsets)

    # -- encode / decode --------------------------------------------------------------------------
    def _encode_payload(self, secret: WeightedSecret, randomness: Any) -> bytes:
        r = self._check_randomness(secret, randomness)
        genuine = self._genuine(secret, r.genuine_slots)
        coefficients, offsets = r.coefficients[None, :], r.chaff_offsets[None, :]
        values = _lock_rows(coefficients, self.slots, self.field_size, genuine[None, :], offsets, self.backend)
        return pack_uints(values[0], self._width)

    def _values(self, payload: bytes) -> np.ndarray:
        return cast("np.ndarray", unpack_uints(payload, self._width, self.slots).astype(np.int64))

    def _check_payload(self, payload: bytes) -> None:
        if np.any(self._values(payload) >= self.field_size):
            raise SketchFormatError(f"weighted vault value out of range for F_{self.field_size}")

    def _sample_set(self, sample: Any) -> np.ndarray:
        d = as_element_set(sample, 0, self.p, max_size=self._max_sample, name="sample")
        if d.shape[0] == 0:
            raise SampleError("sample is empty")
        return d

    def _decode_payload(self, payload: bytes, sample: Any) -> WeightedSecret:
        return cast(
            "WeightedSecret", self._decode_rows([self._values(payload)], [self._sample_set(sample)], "raise")[0]
        )

    def _decode_group(self, ys: np.ndarray, samples: np.ndarray) -> list[WeightedSecret | None]:
        """Decode rows whose samples all have the same size; ``None`` marks a failure."""
        n = samples.shape[1] * self.q
        if n < self.k:
            return [None] * ys.shape[0]
        xs = (samples[:, :, None] * self.q + np.arange(self.q)).reshape(samples.shape[0], n)
        coeffs, ok = berlekamp_welch(
            xs, np.take_along_axis(ys, xs, axis=1), self.k, self.field_size, backend=self.backend
        )
        agreeing = _agreeing_rows(coeffs, ys, self.field_size, self.g, ok, self.backend)
        out: list[WeightedSecret | None] = []
        for slots in agreeing:
            if slots is None or slots.shape[0] != self.g:
                out.append(None)
                continue
            elements, weights = np.unique(slots // self.q, return_counts=True)
            out.append(None if weights.max() >= self.q else (elements.astype(np.int64), weights.astype(np.int64)))
        return out

    def _decode_rows(
        self, values: Sequence[np.ndarray], samples: Sequence[np.ndarray], errors: ErrorPolicy
    ) -> list[Any]:
        results: list[Any] = [None] * len(values)
        sizes = sorted({s.shape[0] for s in samples})
        for size in sizes:
            members = [i for i, s in enumerate(samples) if s.shape[0] == size]
            for chunk in _chunks(len(members)):
                rows = members[chunk]
                decoded = self._decode_group(np.stack([values[i] for i in rows]), np.stack([samples[i] for i in rows]))
                for row, secret in zip(rows, decoded, strict=False):
                    if secret is None:
                        error = DecodeError(
                            "sample is too far from the enrolled template (acceptance needs c - w >= g - 2t)"
                        )
                        if errors == "raise":
                            raise error
                        results[row] = error
                    else:
                        results[row] = secret
        return results

    # -- batch APIs ----------------------------------------------------------------------------------
    def encode_many(self, secrets: Iterable[Any]) -> list[bytes]:
        """Helper data for many secrets, fresh randomness each, vectorised over the batch."""
        checked = [
            self.check_secret(s) for s in as_collection(secrets, "secrets", what="weighted secrets", ordered=True)
        ]
        helpers: list[bytes] = []
        for rows in _chunks(len(checked)):
            batch = checked[rows]
            genuine = np.stack([self._genuine(s, self._draw_genuine_slots(s[1])) for s in batch])
            coeffs = uniform_below(self.field_size, len(batch) * self.k).reshape(len(batch), self.k)
            offsets = uniform_below(self.field_size - 1, len(batch) * (self.slots - self.g))
            values = _lock_rows(
                coeffs, self.slots, self.field_size, genuine, offsets.reshape(len(batch), -1), self.backend
            )
            helpers.extend(self._wrap(pack_uints(row, self._width)) for row in values)
        return helpers

    def decode_many(
        self, helpers: Iterable[bytes], samples: Iterable[Any], *, errors: ErrorPolicy = "raise"
    ) -> list[Any]:
        """Decode many (helper, sample) pairs; samples of equal size are decoded as one batch.

        Errors as in :meth:`FuzzyVault.decode_many` (``errors="return"`` puts each
        :class:`DecodeError` in its place instead of raising).
        """
        helpers, samples = check_batch(helpers, samples, errors)
        values = [self._values(self.payload(h)) for h in helpers]
        checked = [self._sample_set(s) for s in samples]
        return self._decode_rows(values, checked, errors)

    # -- accounting -----------------------------------------------------------------------------------
    def report(self) -> EntropyReport:
        P = self.field_size
        D = self.k - 1
        log2_spurious = log2_weighted_spurious_polynomials(REPORT_MU, self.p, self.q, self.p, self.g, D)
        fewest = -(-self.g // (self.q - 1))
        fraction = candidate_fraction(self.p, self.g, fewest, q=self.q)
        return EntropyReport.from_bits(
            self.scheme_name,
            sketch_bits=self.slots * math.log2(P),
            randomness_bits=self.k * math.log2(P) + (self.slots - self.g) * math.log2(P - 1),
            notes=(
                f"{self.slots} slots in F_{P} (smallest prime >= p*q): |S| = p q log2 P",
                "H(R) counts F and the chaff only: the choice of genuine slots is not recoverable",
                f"decodes exactly when c - w >= g - 2t = {self.k} (c genuine, w other candidate slots)",
                f"spurious polynomials (mu = {REPORT_MU:g}, r = p, D = {D}): 2^{log2_spurious:.1f}",
                f"candidate fraction (slots on <= {fewest} elements, the fewest a template spans): {fraction:.3g}",
            ),
            extra={
                "field_size": P,
                "degree": D,
                "mu": REPORT_MU,
                "log2_weighted_spurious_polynomials": log2_spurious,
                "candidate_fraction": {"a": fewest, "q": self.q, "fraction": fraction},
            },
        )

    # -- symbols (for mixing) -------------------------------------------------------------------------
    def symbols(self, payload: bytes) -> tuple[np.ndarray, SymbolSpace]:
        moduli = np.full(self.slots, self.field_size, dtype=np.uint64)
        return self._values(payload).astype(np.uint64), SymbolSpace("mod", moduli=moduli)

    def _with_symbols(self, payload: bytes, symbols: np.ndarray) -> bytes:
        return pack_uints(symbols, self._width)
