"""Entropy accounting for cascaded mixing of several secrets (Fang's thesis, ch. 7), and exact toy checks.

Notation (all in bits; ``b``: a fuzzy secret with sketch ``S = Enc(b; R)``, ``k``: the secret
whose key mixes it, ``Q = f(S, K, R_f)`` the mixed sketch; ``L_X`` the length of the compact
description of ``X``):

* **Concatenation** (each sketch stored in clear): ``H̃∞(b|S) ≥ H∞(b) + H∞(R) − L_S``.
* **Lemma 6** (:func:`joint_secrets_bound`, the whole): ``H̃∞(b,k|S) ≥ H∞(b) + H∞(k) + H∞(R) − L_S``, the same as
  concatenation.
* **Theorem 7** (:func:`mixed_secret_bound`; key ``β``-recoverable from ``(S, Q)``):
  ``H̃∞(b|Q) ≥ H∞(b) + H∞(k) − L_S − β``.
  Fang's thesis (ch. 7) states it for ``β = L_{R_f}``; our pad (:mod:`sketchauth.mixing.pads`) stores its nonce
  ``R_f`` in clear, so per nonce the mix is deterministic and the only slack is ``β``, the
  log of the number of keys consistent with one ``(S, Q)``. For randomness that is not uniform
  the derivation costs ``L_R − H∞(R)`` more (``L_R`` the log of its support), which we subtract
  too (zero for uniform randomness).
  Mixing is no worse than concatenation iff ``H∞(k) ≥ L_R + β``; for a deterministic sketch the
  bound on ``b`` improves by ``H∞(k) − β``: that loss is *diverted* to ``k``.
* **Theorem 8** (:func:`mixing_key_bound`): ``H̃∞(k|Q) ≥ H∞(k) + H∞(R) − L_S`` (tight).
* **Two fuzzy secrets** (``K = Ext(b_2)`` with extractor overhead ``δ``; ``S = Q ‖ S_2``):
  ``H̃∞(b_1|S) ≥ H∞(b_1) + H∞(b_2) + H∞(R_2) − L_{S_2} − δ − L_{S_1}`` and
  ``H̃∞(b_2|S) ≥ H∞(b_2) + H∞(R_2) + H∞(R_1) − L_{S_1} − L_{S_2} − δ``. With the extractor
  output length ``ℓ = H∞(b_2) + H∞(R_2) − L_{S_2} − δ`` the first is Theorem 7 with
  ``H∞(k) = ℓ``.

Trees of more than two secrets (fanning, chaining, hybrid) are accounted edge by edge: a sketch
mixed by key ``j`` gets the better of its concatenation and Theorem 7 bounds with ``j``'s key
entropy, and each secret whose key mixes sketches loses what Theorem 8 (or the second
two-fuzzy bound) charges for each of them. A remaining entropy is never reported below 0.
In the reports (:attr:`SecretAccount.bounds`, :meth:`ExactMixing.bounds`, ``whole_lemma6``) each
bound is keyed by the thesis's numbering: ``lemma6``, ``theorem7``, ``theorem8``.

``β`` (:func:`key_recoverability_bits`). Given ``Q`` alone *every* key is consistent: the mix
is format-preserving, each key maps ``Q`` to a valid sketch, so no key can be ruled out by the
shape of its result (that is the point). What bounds the slack in Theorem 7 is how many keys
are consistent with a pair ``(S, Q)``, i.e. share the pad ``Q − S``. The pad is SHAKE-256 of
(key, nonce), modelled as a random oracle; the number of keys of a ``2^κ``-key space that map
``(S, Q)`` to one pad is the load of the fullest of ``|G| = 2^g`` bins after throwing ``2^κ`` balls. By the union bound
``Pr[some bin holds ≥ c] ≤ |G|·C(2^κ, c)·|G|^−c ≤ |G|·(2^κ)^c/c!·|G|^−c``; ``β = log2(c − 1)``
for the least ``c`` making this ``≤ 2^−40``. For a 6-digit PIN over a 128-bit PinSketch, ``β = 0``: the PIN is
determined by ``(S, Q)``.

Example::

    >>> round(mixed_secret_bound(h_b=100.0, h_k=19.93, sketch_bits=128.0, beta=0.0), 2)
    -8.07
    >>> key_recoverability_bits(19.93, 128.0)
    0.0
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.mixing.pads import mix_symbols
from sketchauth.sketches.base import SecureSketch

__all__ = [
    "KEY_RECOVERY_FAILURE_LOG2",
    "ComponentFacts",
    "ExactMixing",
    "MixAccount",
    "MixingReport",
    "SecretAccount",
    "account",
    "concatenation_bound",
    "exact_mixing",
    "extractor_overhead",
    "joint_secrets_bound",
    "key_recoverability_bits",
    "mixed_secret_bound",
    "mixing_key_bound",
    "two_fuzzy_bounds",
]

#: ``β`` holds except with probability at most ``2^KEY_RECOVERY_FAILURE_LOG2`` per nonce.
KEY_RECOVERY_FAILURE_LOG2 = -40.0


# -- the bounds, as Fang's thesis (ch. 7) states them ---------------------------------------------------------
def concatenation_bound(h_b: float, h_r: float, sketch_bits: float) -> float:
    """``H̃∞(b|S) ≥ H∞(b) + H∞(R) − L_S`` (a sketch stored in clear)."""
    return h_b + h_r - sketch_bits


def joint_secrets_bound(h_secrets: Sequence[float], h_randomness: Sequence[float], sketch_bits: float) -> float:
    """``H̃∞(b_1,…,b_n|S) ≥ Σ H∞(b_i) + Σ H∞(R_i) − L_S``: all secrets together (Lemma 6 of Fang's thesis, ch. 7).

    Mixing and concatenation alike: mixing only moves loss between the secrets, never removes it.
    """
    return float(sum(h_secrets)) + float(sum(h_randomness)) - sketch_bits


def mixed_secret_bound(h_b: float, h_k: float, sketch_bits: float, beta: float, randomness_slack: float = 0.0) -> float:
    """``H̃∞(b|Q) ≥ H∞(b) + H∞(k) − L_S − β − (L_R − H∞(R))``: the secret whose sketch is mixed.

    Theorem 7 of Fang's thesis, ch. 7 (key ``k`` ``β``-recoverable from ``(S, Q)``; the slack
    ``L_R − H∞(R)`` is zero for uniform sketch randomness).
    """
    return h_b + h_k - sketch_bits - beta - randomness_slack


def mixing_key_bound(h_k: float, h_r: float, sketch_bits: float) -> float:
    """``H̃∞(k|Q) ≥ H∞(k) + H∞(R) − L_S`` (tight): the secret whose key mixes the sketch.

    Theorem 8 of Fang's thesis, ch. 7: the mixed sketch's loss is diverted to the key's secret.
    """
    return h_k + h_r - sketch_bits


def two_fuzzy_bounds(
    h_b1: float,
    h_b2: float,
    h_r1: float,
    h_r2: float,
    sketch1_bits: float,
    sketch2_bits: float,
    delta: float,
) -> tuple[float, float]:
    """The bounds of Fang's thesis, ch. 7, on ``(H̃∞(b_1|S), H̃∞(b_2|S))`` when ``Ext(b_2)`` mixes ``S_1``."""
    b1 = h_b1 + h_b2 + h_r2 - sketch2_bits - delta - sketch1_bits
    b2 = h_b2 + h_r2 + h_r1 - sketch1_bits - sketch2_bits - delta
    return b1, b2


def _log2_binomial_bound(log2_n: float, c: float) -> float:
    """``log2(n^c / c!) ≥ log2 C(n, c)``: an upper bound that stays exact in floating point
    even for ``n = 2^128`` (a difference of two ``lgamma`` values that size would cancel)."""
    return c * log2_n - math.lgamma(c + 1) / math.log(2)


def key_recoverability_bits(
    key_space_bits: float, group_bits: float, failure_log2: float = KEY_RECOVERY_FAILURE_LOG2
) -> float:
    """``β``: log2 of the most keys consistent with one ``(S, Q)`` (random-oracle pad).

    ``key_space_bits`` is log2 of the number of keys (a 6-digit PIN: ``log2 10^6``),
    ``group_bits`` log2 of the number of pads. Holds except with probability
    ``2^failure_log2``; never more than ``key_space_bits`` (all keys consistent).
    """
    if key_space_bits < 0 or group_bits < 0:
        raise ParameterError("key_space_bits and group_bits must be non-negative")
    if key_space_bits < 1.0:
        return 0.0

    def bad(c: float) -> bool:  # Pr[some bin holds ≥ c keys] may exceed the allowed failure
        return group_bits + _log2_binomial_bound(key_space_bits, c) - c * group_bits > failure_log2

    if not bad(2):
        return 0.0
    if key_space_bits > 62:
        return _large_key_space_beta(key_space_bits, group_bits, bad)
    keys = 2.0**key_space_bits
    lo, hi = 2, int(keys)  # bad(lo) is True; find the least c with bad(c) False
    if bad(hi):
        return float(key_space_bits)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bad(mid):
            lo = mid
        else:
            hi = mid
    return float(min(key_space_bits, math.log2(hi - 1)))


def _large_key_space_beta(key_space_bits: float, group_bits: float, bad: Any) -> float:
    """``β`` when the loads exceed integer range: bisect on ``x = log2 c``, in logs throughout.

    Beyond ``c = 2^60`` the bound's sign is that of ``2^x·((K − G) − log2(c!)/c)`` (the additive
    terms are negligible next to ``2^x``), and Stirling gives ``log2(c!)/c ≥ x − log2 e``; so a
    load ``2^x`` is ruled out once ``x ≥ K − G + log2 e``. No ``2^x`` is ever formed for large
    ``x``: key spaces of thousands of bits (a 4096-bit extracted key) stay finite.
    """

    def bad_log(x: float) -> bool:
        if x <= 60:
            return bool(bad(2.0**x))
        return (key_space_bits - group_bits) - (x - math.log2(math.e)) > 0

    lo_x, hi_x = 1.0, float(key_space_bits)
    if bad_log(hi_x):
        return float(key_space_bits)
    for _ in range(200):
        mid = (lo_x + hi_x) / 2
        lo_x, hi_x = (mid, hi_x) if bad_log(mid) else (lo_x, mid)
    if hi_x > 60:
        return float(min(key_space_bits, hi_x))
    c = math.ceil(2.0**hi_x)  # the least integer load the union bound rules out
    return float(min(key_space_bits, math.log2(max(1, c - 1))))


def extractor_overhead(remaining_bits: float, key_bits: int) -> tuple[float, float, float]:
    """``(key entropy, δ, ε)`` of a universal-hash extractor with ``key_bits`` output bits.

    The leftover hash lemma makes ``ℓ = H̃∞ − δ`` output bits ``ε = 2^(−δ/2)``-close to uniform.
    The key's entropy is ``min(ℓ, H̃∞)``; when ``ℓ > H̃∞``, ``δ = 0`` and ``ε = 1`` (no guarantee).
    """
    key_entropy = max(0.0, min(float(key_bits), remaining_bits))
    delta = max(0.0, remaining_bits - key_bits)
    epsilon = 2.0 ** (-delta / 2.0) if key_bits <= remaining_bits else 1.0
    return key_entropy, delta, epsilon


# -- accounting of a whole structure ------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ComponentFacts:
    """What the accounting needs to know about one secret of a structure.

    ``kind``: ``"fuzzy"`` (stored as a sketch) or ``"exact"`` (PIN/password; nothing stored).
    ``min_entropy``: declared ``H∞`` of the secret (``None``: unknown). For an exact key,
    ``space_bits`` is log2 of the number of possible keys (defaults to ``min_entropy``).
    For a fuzzy secret: ``sketch_bits`` (``L_S``), ``randomness_bits`` (``H∞(R)``),
    ``randomness_support_bits`` (``L_R``) and ``key_bits`` (extractor output, if it is a key).
    ``pad_group_bits``: log2 of the smallest group a pad acts on (what bounds ``β``; defaults to
    ``sketch_bits``, right when the symbols are the whole sketch).
    """

    name: str
    kind: str
    min_entropy: float | None
    space_bits: float | None = None
    sketch_bits: float = 0.0
    randomness_bits: float = 0.0
    randomness_support_bits: float = 0.0
    key_bits: int = 0
    pad_group_bits: float | None = None


@dataclass(frozen=True, slots=True)
class SecretAccount:
    """Loss and remaining-entropy bounds for one secret, structure vs concatenation."""

    index: int
    name: str
    kind: str
    min_entropy: float | None
    concatenation_loss_bits: float
    loss_bits: float | None
    diverted_bits: float | None
    bounds: dict[str, float | None]

    @property
    def remaining_bits(self) -> float | None:
        if self.min_entropy is None or self.loss_bits is None:
            return None
        return max(0.0, self.min_entropy - self.loss_bits)

    @property
    def concatenation_remaining_bits(self) -> float | None:
        if self.min_entropy is None:
            return None
        return max(0.0, self.min_entropy - self.concatenation_loss_bits)

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "name": self.name,
            "kind": self.kind,
            "min_entropy": self.min_entropy,
            "concatenation_loss_bits": self.concatenation_loss_bits,
            "loss_bits": self.loss_bits,
            "diverted_bits": self.diverted_bits,
            "remaining_bits": self.remaining_bits,
            "concatenation_remaining_bits": self.concatenation_remaining_bits,
            "bounds": dict(self.bounds),
        }


@dataclass(frozen=True, slots=True)
class MixAccount:
    """One edge ``key → sketch``: key entropy, ``β``, extractor ``δ``/``ε``, whether it helps."""

    key_index: int
    sketch_index: int
    key_entropy: float | None
    beta: float | None
    delta: float | None
    epsilon: float | None
    mixing_randomness_bits: float
    helps: bool | None
    diverted_bits: float | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key_index": self.key_index,
            "sketch_index": self.sketch_index,
            "key_entropy": self.key_entropy,
            "beta": self.beta,
            "delta": self.delta,
            "epsilon": self.epsilon,
            "mixing_randomness_bits": self.mixing_randomness_bits,
            "helps": self.helps,
            "diverted_bits": self.diverted_bits,
        }


@dataclass(frozen=True, slots=True)
class MixingReport:
    """Per-secret and per-mix accounting of a structure, plus the whole (Lemma 6)."""

    secrets: tuple[SecretAccount, ...]
    mixes: tuple[MixAccount, ...]
    sketch_bits: float
    randomness_bits: float
    whole_lemma6: float | None
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "secrets": [s.to_dict() for s in self.secrets],
            "mixes": [m.to_dict() for m in self.mixes],
            "sketch_bits": self.sketch_bits,
            "randomness_bits": self.randomness_bits,
            "whole_lemma6": self.whole_lemma6,
            "notes": list(self.notes),
        }


def _key_facts(c: ComponentFacts) -> tuple[float | None, float | None, float | None, float | None]:
    """(key entropy, key space bits, δ, ε) of the key a component provides."""
    if c.kind == "exact":
        space = c.space_bits if c.space_bits is not None else c.min_entropy
        return c.min_entropy, space, None, None
    if c.min_entropy is None:
        return None, float(c.key_bits), None, None
    remaining = c.min_entropy + c.randomness_bits - c.sketch_bits
    key_entropy, delta, epsilon = extractor_overhead(remaining, c.key_bits)
    return key_entropy, float(c.key_bits), delta, epsilon


def _mix_account(j: int, i: int, components: Sequence[ComponentFacts]) -> MixAccount:
    key, child = components[j], components[i]
    key_entropy, space, delta, epsilon = _key_facts(key)
    group_bits = child.sketch_bits if child.pad_group_bits is None else child.pad_group_bits
    beta = None if space is None else key_recoverability_bits(space, group_bits)
    slack = child.randomness_support_bits - child.randomness_bits
    if key_entropy is None or beta is None:
        helps, diverted = None, None
    else:
        gain = key_entropy - beta - slack - child.randomness_bits
        helps = gain >= 0
        concat_loss = child.sketch_bits - child.randomness_bits
        diverted = max(0.0, min(concat_loss, gain))
    return MixAccount(j, i, key_entropy, beta, delta, epsilon, 0.0, helps, diverted)


def account(components: Sequence[ComponentFacts], mixes: Sequence[tuple[int, int]]) -> MixingReport:
    """Account every secret of a structure whose key ``j`` mixes sketch ``i`` for ``(j, i)``."""
    edges = [_mix_account(j, i, components) for j, i in mixes]
    by_child = {e.sketch_index: e for e in edges}
    rows = []
    for index, c in enumerate(components):
        children = [e for e in edges if e.key_index == index]
        rows.append(_secret_account(index, c, by_child.get(index), children, components))
    known = all(c.min_entropy is not None for c in components)
    sketch_bits = sum(c.sketch_bits for c in components if c.kind == "fuzzy")
    randomness = sum(c.randomness_bits for c in components if c.kind == "fuzzy")
    whole = (
        joint_secrets_bound([c.min_entropy for c in components], [randomness], sketch_bits)  # type: ignore[misc]
        if known
        else None
    )
    notes = (
        "nonces, salts and extractor seeds are public, independent of every secret: they add "
        "nothing to L_S and the mixing randomness counts 0 bits (L_Rf = 0 per nonce)",
        f"beta holds except with probability 2^{KEY_RECOVERY_FAILURE_LOG2:g} per nonce, "
        "modelling SHAKE-256 as a random oracle",
    )
    return MixingReport(tuple(rows), tuple(edges), sketch_bits, randomness, whole, notes)


def _secret_account(
    index: int,
    c: ComponentFacts,
    parent: MixAccount | None,
    children: Sequence[MixAccount],
    components: Sequence[ComponentFacts],
) -> SecretAccount:
    bounds: dict[str, float | None] = {}
    # What the sketches this secret's key mixes can reveal about it (Theorem 8 per child).
    child_loss = sum(
        components[e.sketch_index].sketch_bits - components[e.sketch_index].randomness_bits for e in children
    )
    if c.kind == "exact":
        h_k = c.min_entropy
        bounds["concatenation"] = h_k
        bounds["theorem8"] = None if h_k is None else h_k - child_loss
        key_loss = min(child_loss, h_k) if h_k is not None else child_loss
        return SecretAccount(index, c.name, c.kind, h_k, 0.0, key_loss, None, bounds)
    concat_loss = max(0.0, c.sketch_bits - c.randomness_bits)
    loss: float | None = concat_loss
    diverted: float | None = 0.0
    h = c.min_entropy
    bounds["concatenation"] = None if h is None else concatenation_bound(h, c.randomness_bits, c.sketch_bits)
    if parent is not None:
        if parent.key_entropy is None or parent.beta is None:
            loss, diverted = None, None
            bounds["theorem7"] = None
        else:
            slack = c.randomness_support_bits - c.randomness_bits
            mixed_loss = max(0.0, c.sketch_bits - parent.key_entropy + parent.beta + slack)
            loss = min(concat_loss, mixed_loss)
            diverted = concat_loss - loss
            bounds["theorem7"] = (
                None if h is None else mixed_secret_bound(h, parent.key_entropy, c.sketch_bits, parent.beta, slack)
            )
        key = components[parent.key_index]
        if key.kind == "fuzzy":
            bounds["two_fuzzy"] = _two_fuzzy(c, key, first=True, beta=parent.beta)
    if children:
        delta = next((e.delta for e in children if e.delta is not None), 0.0)
        extra = child_loss + (delta or 0.0)
        loss = None if loss is None else loss + extra
        bounds["theorem8"] = None if h is None else h + c.randomness_bits - c.sketch_bits - extra
        for e in children:
            bounds[f"two_fuzzy_as_key_of_{e.sketch_index}"] = _two_fuzzy(
                components[e.sketch_index], c, first=False, beta=e.beta
            )
    if h is not None and loss is not None:
        loss = min(loss, h)
    return SecretAccount(index, c.name, c.kind, h, concat_loss, loss, diverted, bounds)


def _two_fuzzy(b1: ComponentFacts, b2: ComponentFacts, *, first: bool, beta: float | None) -> float | None:
    """The two-fuzzy-secret bound of Fang's thesis, ch. 7, on ``b_1`` (``first``) or on ``b_2`` (the key's owner).

    Fang's thesis (ch. 7) states them for a key recoverable from ``(S_1, Q)``; with ``β > 0`` (more extracted
    keys than pads) the bound on ``b_1`` pays ``β`` as Theorem 7 does — without it the formula
    could exceed ``H∞(b_1)`` itself.
    """
    if b1.min_entropy is None or b2.min_entropy is None or beta is None:
        return None
    key_entropy, _, delta, _ = _key_facts(b2)
    one, two = two_fuzzy_bounds(
        b1.min_entropy,
        b2.min_entropy,
        b1.randomness_bits,
        b2.randomness_bits,
        b1.sketch_bits,
        b2.sketch_bits,
        delta or 0.0,
    )
    # With the extractor output shorter than what is left in b_2, the key carries only ℓ bits.
    if first:
        return min(one, b1.min_entropy + (key_entropy or 0.0) - b1.sketch_bits) - beta
    return two


# -- exact evaluation of a mixed toy sketch ------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExactMixing:
    """Exact entropies (bits) of a toy cascade ``Q = S + pad(k)``, enumerated exhaustively.

    ``h_b``/``h_k``: prior min-entropies; ``h_b_given_sketch``: ``H̃∞(b|S)`` (concatenation);
    ``h_b_given_q``, ``h_k_given_q``, ``h_bk_given_q``: after mixing; ``h_r``/``l_r``: min-entropy
    and log-support of the sketch's randomness (worst secret); ``sketch_bits``: log2 of the
    pad group's order; ``beta``: log2 of the largest number of keys sharing one pad.
    """

    h_b: float
    h_k: float
    h_r: float
    l_r: float
    sketch_bits: float
    beta: float
    h_b_given_sketch: float
    h_b_given_q: float
    h_k_given_q: float
    h_bk_given_q: float

    def bounds(self) -> dict[str, float]:
        """The lower bounds of Fang's thesis, ch. 7, evaluated with these exact inputs."""
        return {
            "concatenation": concatenation_bound(self.h_b, self.h_r, self.sketch_bits),
            "lemma6": joint_secrets_bound([self.h_b, self.h_k], [self.h_r], self.sketch_bits),
            "theorem7": mixed_secret_bound(self.h_b, self.h_k, self.sketch_bits, self.beta, self.l_r - self.h_r),
            "theorem8": mixing_key_bound(self.h_k, self.h_r, self.sketch_bits),
        }


def _avg_min_entropy(cells: dict[tuple[Any, Any], float]) -> float:
    best: dict[Any, float] = {}
    for (_row, col), p in cells.items():
        best[col] = max(best.get(col, 0.0), p)
    return -math.log2(sum(best.values()))


def exact_mixing(
    sketch: SecureSketch[Any, Any],
    secrets: Sequence[Any],
    pads: Any,
    *,
    prior: Any | None = None,
    key_prior: Any | None = None,
    mix: Callable[..., np.ndarray] | None = None,
) -> ExactMixing:
    """Enumerate every (secret, randomness, key) of a toy cascade and measure it exactly.

    ``pads[k]`` is the pad key ``k`` adds to the sketch's symbols (one row per key, e.g. the
    rows of :func:`sketchauth.mixing.pads.derive_pad` for a fixed nonce, or ``[[0], [1]]`` for the
    plain one-bit key ``Q = S + k``). Secrets and keys are uniform unless priors are given.
    """
    combine = mix or mix_symbols
    pads = np.asarray(pads, dtype=np.uint64)
    if pads.ndim != 2 or pads.shape[0] < 1:
        raise ParameterError("pads must be a 2-D array with one row per key")
    p_b = np.full(len(secrets), 1.0 / len(secrets)) if prior is None else np.asarray(prior, float)
    p_k = np.full(pads.shape[0], 1.0 / pads.shape[0]) if key_prior is None else np.asarray(key_prior, float)
    _, multiplicity = np.unique(pads, axis=0, return_counts=True)
    s_cells: dict[tuple[Any, Any], float] = {}
    b_cells: dict[tuple[Any, Any], float] = {}
    k_cells: dict[tuple[Any, Any], float] = {}
    bk_cells: dict[tuple[Any, Any], float] = {}
    h_r, l_r, group_bits = math.inf, 0.0, 0.0
    for bi, secret in enumerate(secrets):
        space = list(sketch.randomness_space(secret))
        h_r = min(h_r, -math.log2(max(p for _, p in space)))
        l_r = max(l_r, math.log2(len(space)))
        for randomness, pr in space:
            helper = sketch.encode_with(secret, randomness)
            symbols, group = sketch.symbols(sketch.payload(helper))
            group_bits = _group_bits(group, symbols.shape[0])
            s_key = symbols.tobytes()
            s_cells[bi, s_key] = s_cells.get((bi, s_key), 0.0) + p_b[bi] * pr
            for ki in range(pads.shape[0]):
                q = combine(symbols, pads[ki], group).tobytes()
                p = p_b[bi] * pr * p_k[ki]
                b_cells[bi, q] = b_cells.get((bi, q), 0.0) + p
                k_cells[ki, q] = k_cells.get((ki, q), 0.0) + p
                bk_cells[(bi, ki), q] = bk_cells.get(((bi, ki), q), 0.0) + p
    return ExactMixing(
        h_b=-math.log2(float(p_b.max())),
        h_k=-math.log2(float(p_k.max())),
        h_r=h_r,
        l_r=l_r,
        sketch_bits=group_bits,
        beta=math.log2(int(multiplicity.max())),
        h_b_given_sketch=_avg_min_entropy(s_cells),
        h_b_given_q=_avg_min_entropy(b_cells),
        h_k_given_q=_avg_min_entropy(k_cells),
        h_bk_given_q=_avg_min_entropy(bk_cells),
    )


def _group_bits(group: Any, count: int) -> float:
    if group.kind == "mod":
        return float(np.log2(np.asarray(group.moduli, dtype=float)).sum())
    return float(group.bits * count)
