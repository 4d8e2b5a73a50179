"""Unlinkability (ISO/IEC 30136 style) and reversibility of stored sketches (Gomez-Barrero et al. 2018).

**The measures** (Gomez-Barrero et al., "General framework to evaluate unlinkability in
biometric template protection systems", IEEE TIFS 2018). An attacker holds two sketches and
computes a *linkage score*; mated pairs (two enrolments of one person) and non-mated pairs
give two score distributions. :func:`linkability` histograms both on common bins over the joint
range and, per bin ``s``, with ``LR(s) = p(s|mated) / p(s|non-mated)`` and
``ω = P(mated)/P(non-mated)`` (default 1):

* local ``D↔(s) = 2·ω·LR/(1 + ω·LR) − 1`` where ``ω·LR > 1``, else 0; 1 where the non-mated
  mass is 0 but the mated one is not;
* global ``D↔sys = Σ_s p(s|mated)·D↔(s)`` ∈ [0, 1]: 0 for identical distributions (fully
  unlinkable), 1 for disjoint ones (fully linkable).

Bins: integer-valued scores spanning at most :data:`MAX_UNIT_BINS` values get one bin per
integer (counts are exact); otherwise :data:`DEFAULT_BINS` equal-width bins.

**The attacks** — each scheme's natural linkage score, computed from real helper data:

* interval (Fang's thesis, ch. 6): the helper is ``b mod (2v−1)``; close templates give close residues, so
  the score is the circular residue distance ``Σ_j min(δ_j, M_j − δ_j)``,
  ``δ_j = (S_j − S'_j) mod M_j`` (low ⇒ mated);
* asymmetric s1/s2 (Fang's thesis §6.2): the adversaries of :mod:`sketchauth.evaluate.linkage` —
  :func:`~sketchauth.evaluate.linkage.s1_linkage_score` on the published tolerances and
  :func:`~sketchauth.evaluate.linkage.s2_similar_intervals` on the published partitions
  (high ⇒ mated), with closeness ``τ`` (``tau``);
* code-offset and PinSketch — *difference decoding*: both are linear, so the symbol-wise
  difference of two sketches is a sketch of the difference (``(w ⊕ C(x)) ⊕ (w' ⊕ C(x')) =
  (w ⊕ w') ⊕ C(x ⊕ x')``; syndromes add: ``s(A) ⊕ s(B) = s(A Δ B)``). Decoding that combined
  sketch against the zero sample (the empty set) returns ``w ⊕ w'`` (``A Δ B``) whenever it has
  weight at most ``t``; score = its weight, ``t + 1`` when decoding fails (low ⇒ mated). Built
  with the schemes' own ``symbols``/``with_symbols``/``decode``;
* fuzzy vaults — *differential cross-matching*: with vault values ``y``, ``y'`` over the same
  slots, ``z = y − y'`` equals ``(F − F')(slot)`` on every slot genuine in both vaults (a
  polynomial of degree ``≤ D``) and is uniform elsewhere. The attacker draws ``trials`` random
  sets of ``D + 1`` slots, interpolates, and counts the slots agreeing with that polynomial;
  score = the largest count (high ⇒ mated). A trial succeeds only if all ``D + 1`` slots are
  common genuine slots, probability ``C(c, D+1)/C(N, D+1)`` for ``c`` common genuine among ``N``
  slots — which is why complete vaults of useful size resist it; the report states the
  budget and that probability.
* angular (IronMask) — *rotation pairing*: ``M = R_2 R_1ᵀ`` maps ``c_1`` close to ``c_2`` for
  two enrolments of one person; score = the largest ``⟨ĉ_2, M ĉ_1⟩`` over sparse signed pairs
  found by truncated power iteration from every column (high ⇒ mated;
  :mod:`sketchauth.evaluate.angular_attacks`).

**Reversibility probe** (``reversibility``): what two linked sketches of one person give away
about the template, where the algebra allows it:

* interval: the same person enrolled in a second deployment with tolerance ``v + 1``: two
  residues modulo ``2v − 1`` and ``2v + 1`` (coprime) pin ``b`` modulo their product by the
  Chinese remainder theorem — exactly, once the product reaches ``n``;
* asymmetric s1: the same CRT on features where the two enrolments' tolerances differ;
* asymmetric s2: intervals present in both partitions with the same end points are almost
  surely the secret interval: when exactly one interval of a feature is shared, it gives
  ``(b, v)``;
* code-offset / PinSketch: only the *difference* ``w ⊕ w'`` / ``A Δ B`` is learnt, no template
  symbol — the recovered fraction is 0; the share of mated pairs whose difference was learnt is
  reported;
* vaults: the slots agreeing with the best differential polynomial, when it beats chance, are
  genuine in both vaults: they name template elements.
* angular: the pair that links two helpers is their *codewords*: the share of mated pairs whose
  ``ĉ_1`` is the first enrolment's codeword up to its sign (the secret, in two guesses).

The fraction reported is over template features (or elements) of the *first* enrolment,
averaged over mated pairs: ``1`` means the template is fully recovered from two sketches.

Example::

    >>> result = linkability([1, 1, 2, 2], [1, 1, 2, 2])
    >>> result.d_sys
    0.0
    >>> linkability([5, 6], [1, 2]).d_sys
    1.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from math import comb
from typing import Any, cast

import numpy as np

from sketchauth.errors import DecodeError, ParameterError
from sketchauth.evaluate.angular_attacks import linkage_pair, linkage_score
from sketchauth.evaluate.data import LabelledSets, LabelledVectors
from sketchauth.evaluate.linkage import s1_linkage_score, s2_similar_intervals
from sketchauth.sketches.angular import AngularSketch
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SecureSketch, SymbolSpace
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.fields import inverse_mod
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.params import check_int
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.registry import descriptors, scheme_descriptor
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault

__all__ = [
    "LINKAGE_ATTACKS",
    "AttackedScheme",
    "LinearSketch",
    "Linkability",
    "LinkagePairs",
    "UnlinkabilityOptions",
    "UnlinkabilityResult",
    "attack_for_key",
    "chance_level",
    "crt_candidates",
    "difference_decoding_score",
    "evaluate_unlinkability",
    "interval_residue_distance",
    "link_pairs",
    "linkability",
    "linkage_attack",
    "vault_differential_score",
]

#: Integer scores spanning at most this many values get one bin per integer.
MAX_UNIT_BINS = 512
#: Number of equal-width bins otherwise.
DEFAULT_BINS = 100
#: Random (D+1)-subsets the vault differential attacker tries per pair (default budget).
VAULT_TRIALS = 64

#: The linear families difference decoding applies to, and the vault families.
LinearSketch = CodeOffsetSketch | PinSketch
VaultSketch = FuzzyVault | WeightedFuzzyVault


# -- the measures ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Linkability:
    """Local and global linkability from mated and non-mated linkage scores."""

    edges: np.ndarray
    p_mated: np.ndarray
    p_nonmated: np.ndarray
    d_local: np.ndarray
    d_sys: float
    omega: float
    mated_pairs: int
    nonmated_pairs: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "d_sys": self.d_sys,
            "omega": self.omega,
            "mated_pairs": self.mated_pairs,
            "nonmated_pairs": self.nonmated_pairs,
            "bins": int(self.d_local.size),
            "max_d_local": float(self.d_local.max()),
        }


def _bin_edges(scores: np.ndarray, bins: int | None) -> np.ndarray:
    lo, hi = float(scores.min()), float(scores.max())
    integral = bool(np.all(scores == np.round(scores)))
    if bins is None and integral and hi - lo < MAX_UNIT_BINS:
        return np.arange(lo - 0.5, hi + 1.0, 1.0)
    count = DEFAULT_BINS if bins is None else bins
    if hi == lo:
        return np.array([lo - 0.5, hi + 0.5])
    return np.linspace(lo, hi, count + 1)


def linkability(mated: Any, nonmated: Any, *, omega: float = 1.0, bins: int | None = None) -> Linkability:
    """``D↔(s)`` per bin and ``D↔sys`` (formulas in the module docstring)."""
    m = np.asarray(mated, dtype=float).ravel()
    n = np.asarray(nonmated, dtype=float).ravel()
    if m.size == 0 or n.size == 0:
        raise ParameterError("linkability needs at least one mated and one non-mated score")
    if not (np.all(np.isfinite(m)) and np.all(np.isfinite(n))):
        raise ParameterError("linkage scores must be finite")
    if not (np.isfinite(omega) and omega > 0):
        raise ParameterError(f"omega must be a positive finite number, got {omega!r}")
    bins = None if bins is None else check_int("bins", bins)
    edges = _bin_edges(np.concatenate([m, n]), bins)
    p_m = np.histogram(m, edges)[0] / m.size
    p_n = np.histogram(n, edges)[0] / n.size
    d = np.zeros_like(p_m)
    both = p_n > 0
    wlr = omega * p_m[both] / p_n[both]
    d[both] = np.where(wlr > 1.0, 2.0 * wlr / (1.0 + wlr) - 1.0, 0.0)
    d[(~both) & (p_m > 0)] = 1.0
    d_sys = float(np.clip(np.sum(p_m * d), 0.0, 1.0))
    return Linkability(edges, p_m, p_n, d, d_sys, float(omega), int(m.size), int(n.size))


def chance_level(
    mated: Any,
    nonmated: Any,
    *,
    omega: float = 1.0,
    bins: int | None = None,
    permutations: int = 200,
    seed: int = 0,
) -> dict[str, float]:
    """``D↔sys`` of the pairs with its chance level and permutation p-value.

    The null distribution is ``D↔sys`` of ``permutations`` seeded relabellings of the pooled
    scores: what the estimator reads from these many pairs when nothing links them. ``D↔sys`` is
    biased upwards on finite samples, so a measured value is evidence of linkage only against it.
    Returned: the null's mean and 95th percentile (0 without permutations) and the p-value
    ``(1 + #{null ≥ D↔sys}) / (1 + permutations)``. ``bins`` as for :func:`linkability`.

    >>> c = chance_level(np.arange(50) % 7, np.arange(500) % 7, permutations=50)
    >>> 0.0 <= c["chance_d_sys_mean"] <= c["chance_d_sys_p95"] < 0.5 < c["p_value"]
    True
    """
    d_sys = linkability(mated, nonmated, omega=omega, bins=bins).d_sys
    m = np.asarray(mated, dtype=float).ravel()
    pooled = np.concatenate([m, np.asarray(nonmated, dtype=float).ravel()])
    rng = np.random.default_rng(seed)
    shuffles = (rng.permutation(pooled) for _ in range(check_int("permutations", permutations, low=0)))
    null = np.array([linkability(x[: m.size], x[m.size :], omega=omega, bins=bins).d_sys for x in shuffles])
    values = null if null.size else np.zeros(1)
    return {
        "d_sys": d_sys,
        "chance_d_sys_mean": float(values.mean()),
        "chance_d_sys_p95": float(np.quantile(values, 0.95)),
        "p_value": float((1 + np.count_nonzero(null >= d_sys)) / (1 + null.size)),
    }


# -- enrolling each person twice -----------------------------------------------------------------------
@dataclass(frozen=True)
class LinkagePairs:
    """Two enrolments per identity (helpers and secrets) and the mated/non-mated pair lists.

    ``first[i]``/``second[i]`` are identity ``i``'s enrolments from two disjoint groups of its
    samples; mated pairs are ``(i, i)``, non-mated ``(i, j ≠ i)`` (seeded choice).
    """

    first_helpers: tuple[bytes, ...]
    second_helpers: tuple[bytes, ...]
    first_secrets: tuple[Any, ...]
    second_secrets: tuple[Any, ...]
    nonmated: np.ndarray  # (2, P): first index, second index


def link_pairs(
    sketch: SecureSketch[Any, Any],
    enrol_fn: Callable[[SecureSketch[Any, Any], Any, Any], Any],
    data: LabelledVectors | LabelledSets,
    *,
    enrol_samples: int = 1,
    setting: Any = None,
    nonmated_per_identity: int = 10,
    seed: int = 0,
    second_sketch: SecureSketch[Any, Any] | None = None,
) -> LinkagePairs:
    """Enrol every identity with ``2·enrol_samples`` samples twice, with fresh randomness.

    ``second_sketch`` (default: the same) enrols the second group — e.g. another deployment
    with a different tolerance, for the reversibility probe.
    """
    second_sketch = second_sketch or sketch
    groups = data.by_identity()
    usable = [g for g in groups if len(g[1]) >= 2 * enrol_samples]
    if len(usable) < 2:
        raise ParameterError(f"need at least two identities with {2 * enrol_samples} samples each")
    fh, sh, fs, ss = [], [], [], []
    for _, samples in usable:
        a, b = samples[:enrol_samples], samples[enrol_samples : 2 * enrol_samples]
        raw_a, raw_b = enrol_fn(sketch, a, setting), enrol_fn(second_sketch, b, setting)
        fh.append(sketch.encode(raw_a))
        sh.append(second_sketch.encode(raw_b))
        fs.append(sketch.check_secret(raw_a))
        ss.append(second_sketch.check_secret(raw_b))
    rng = np.random.default_rng(seed)
    count = len(usable)
    per = min(nonmated_per_identity, count - 1)
    firsts, seconds = [], []
    for i in range(count):
        others = np.delete(np.arange(count), i)
        chosen = np.sort(rng.choice(others, size=per, replace=False))
        firsts.append(np.full(per, i))
        seconds.append(chosen)
    nonmated = np.vstack([np.concatenate(firsts), np.concatenate(seconds)]).astype(np.int64)
    return LinkagePairs(tuple(fh), tuple(sh), tuple(fs), tuple(ss), nonmated)


# -- scores -------------------------------------------------------------------------------------------------
def _moduli(space: SymbolSpace) -> np.ndarray:
    """The moduli of a ``"mod"`` symbol group (the interval and vault families' payloads)."""
    if space.moduli is None:
        raise ParameterError(f"expected symbols modulo integers, got a {space.kind!r} group")
    return space.moduli.astype(np.int64)


def interval_residue_distance(sketch: SecureSketch[Any, Any], helper_a: bytes, helper_b: bytes) -> float:
    """Circular distance of the residues of two interval helpers (low ⇒ same person)."""
    a, space = sketch.symbols(sketch.payload(helper_a))
    b, _ = sketch.symbols(sketch.payload(helper_b))
    moduli = _moduli(space)
    delta = (a.astype(np.int64) - b.astype(np.int64)) % moduli
    return float(np.minimum(delta, moduli - delta).sum())


def _zero_sample(sketch: LinearSketch) -> Any:
    return bytes(sketch.n) if isinstance(sketch, CodeOffsetSketch) else []


def difference_decoding(sketch: LinearSketch, helper_a: bytes, helper_b: bytes) -> Any:
    """Decode the symbol-wise difference of two linear sketches against the zero sample.

    Returns the difference of the secrets (``w ⊕ w'`` as bytes, ``A Δ B`` as a sorted array)
    when it is within the sketch's tolerance; raises :class:`DecodeError` otherwise.
    """
    a, _ = sketch.symbols(sketch.payload(helper_a))
    b, _ = sketch.symbols(sketch.payload(helper_b))
    combined = sketch.with_symbols(helper_a, a ^ b)
    return sketch.decode(combined, _zero_sample(sketch))


def difference_decoding_score(sketch: LinearSketch, helper_a: bytes, helper_b: bytes) -> float:
    """Weight of the decoded difference, ``t + 1`` when it does not decode (low ⇒ same person)."""
    try:
        diff = difference_decoding(sketch, helper_a, helper_b)
    except DecodeError:
        return float(sketch.t + 1)
    if isinstance(diff, bytes):
        return float(sum(1 for x in diff if x))
    return float(len(diff))


def _vault_values(sketch: VaultSketch, helper: bytes) -> tuple[np.ndarray, int, int]:
    values, space = sketch.symbols(sketch.payload(helper))
    field_size = int(_moduli(space)[0])
    degree = sketch.k - 1
    return values.astype(np.int64), field_size, degree


def _excluding_products(x: np.ndarray, p: int) -> np.ndarray:
    """``out[..., j] = Π_{k≠j} x[..., k] mod p`` via prefix and suffix products (no inverses)."""
    width = x.shape[-1]
    prefix = np.ones_like(x)
    suffix = np.ones_like(x)
    for k in range(1, width):
        prefix[..., k] = prefix[..., k - 1] * x[..., k - 1] % p
        suffix[..., width - 1 - k] = suffix[..., width - k] * x[..., width - k] % p
    return cast("np.ndarray", prefix * suffix % p)


def _differential_best(
    z: np.ndarray, field_size: int, degree: int, trials: int, rng: np.random.Generator
) -> np.ndarray:
    """Agreeing-slot mask of the best of ``trials`` random interpolations of ``z``.

    All trials at once: for nodes ``x_0..x_D`` of a trial, the interpolant at slot ``x`` is
    ``Σ_j z(x_j)·Π_{k≠j}(x − x_k) / Π_{k≠j}(x_j − x_k)`` mod P. Values stay below P ≤ 2^21, so
    every product of two fits in int64.
    """
    slots = z.size
    width = degree + 1
    if width > slots:
        return np.zeros(slots, dtype=bool)
    nodes = np.argsort(rng.random((trials, slots)), axis=1)[:, :width]  # distinct per trial
    points = np.arange(slots, dtype=np.int64)
    numer = _excluding_products((points[None, :, None] - nodes[:, None, :]) % field_size, field_size)
    gaps = (nodes[:, :, None] - nodes[:, None, :]) % field_size
    gaps[:, np.arange(width), np.arange(width)] = 1
    denom = np.ones((trials, width), dtype=np.int64)
    for k in range(width):
        denom = denom * gaps[:, :, k] % field_size
    weights = inverse_mod(denom, field_size) * z[nodes] % field_size  # trials × width
    value = np.zeros((trials, slots), dtype=np.int64)
    for j in range(width):
        value = (value + numer[:, :, j] * weights[:, j : j + 1]) % field_size
    agree = value == z[None, :]
    return cast("np.ndarray", agree[int(np.argmax(agree.sum(axis=1)))])


def vault_differential_score(
    sketch: VaultSketch, helper_a: bytes, helper_b: bytes, *, trials: int = VAULT_TRIALS, seed: int = 0
) -> tuple[float, np.ndarray]:
    """Best agreement count of the differential attack and the agreeing-slot mask."""
    ya, field_size, degree = _vault_values(sketch, helper_a)
    yb, _, _ = _vault_values(sketch, helper_b)
    best = _differential_best((ya - yb) % field_size, field_size, degree, trials, np.random.default_rng(seed))
    return float(best.sum()), best


# -- CRT reversibility ---------------------------------------------------------------------------------
def crt_candidates(r1: np.ndarray, m1: np.ndarray, r2: np.ndarray, m2: np.ndarray, n: int) -> np.ndarray:
    """Per feature, the unique ``b ∈ [0, n)`` with ``b ≡ r1 (m1)`` and ``b ≡ r2 (m2)``, else −1.

    Vectorised by listing every ``b = r1 + k·m1 < n`` (at most ``n/m1`` per feature) and keeping
    those with the right residue modulo ``m2``. −1 marks "not determined" in this internal array
    (zero or several consistent values); callers turn it into a fraction, never a result.
    """
    r1, m1, r2, m2 = (np.asarray(x, dtype=np.int64) for x in (r1, m1, r2, m2))
    steps = np.arange(-(-n // int(m1.min())), dtype=np.int64)
    cand = r1[:, None] + steps[None, :] * m1[:, None]
    ok = (cand < n) & (cand % m2[:, None] == r2[:, None])
    unique = ok.sum(axis=1) == 1
    return np.where(unique, np.where(ok, cand, 0).sum(axis=1), -1)


# -- per-scheme attacks ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Attack:
    """A linkage attack (named by the descriptors' ``linkage_attacks``): how scores are computed.

    ``score(sketch, helper_a, helper_b, **options)`` takes the sketch class the attack is for
    (``needs``: the public structure its score and probe read); ``probe`` turns the scored pairs
    into the reversibility finding (:class:`Probe`); ``by_sample_kind`` words the description per
    sample kind where it reads differently. One entry per attack in :data:`LINKAGE_ATTACKS` is
    all a new attack needs.
    """

    name: str
    higher_is_mated: bool
    score: Callable[..., float]
    description: str
    needs: type[SecureSketch[Any, Any]] | tuple[type[SecureSketch[Any, Any]], ...] = ()
    probe: Callable[[Probe], dict[str, Any]] | None = None
    by_sample_kind: Mapping[str, str] = field(default_factory=dict)

    def describe(self, sample_kind: str) -> str:
        return self.by_sample_kind.get(sample_kind, self.description)


def _s1_score(sketch: AsymmetricIntervalSketch, ha: bytes, hb: bytes, *, tau: int = 2, **_: Any) -> float:
    return float(s1_linkage_score(sketch.published_tolerances(ha), sketch.published_tolerances(hb), tau))


def _s2_score(sketch: AsymmetricIntervalSketch, ha: bytes, hb: bytes, *, tau: int = 2, **_: Any) -> float:
    return float(s2_similar_intervals(sketch.partition(ha), sketch.partition(hb), tau))


def _residue_score(sketch: SecureSketch[Any, Any], ha: bytes, hb: bytes, **_: Any) -> float:
    return interval_residue_distance(sketch, ha, hb)


def _difference_score(sketch: LinearSketch, ha: bytes, hb: bytes, **_: Any) -> float:
    return difference_decoding_score(sketch, ha, hb)


def _rotation_score(sketch: AngularSketch, ha: bytes, hb: bytes, **_: Any) -> float:
    return linkage_score(sketch, ha, hb)


def _vault_score(
    sketch: VaultSketch, ha: bytes, hb: bytes, *, trials: int = VAULT_TRIALS, seed: int = 0, **_: Any
) -> float:
    return vault_differential_score(sketch, ha, hb, trials=trials, seed=seed)[0]


def _unknown_key(key: str) -> ParameterError:
    known = sorted(k for found in descriptors().values() for k in found.linkage_attacks)
    return ParameterError(f"no linkage attack for scheme {key!r}; known: {', '.join(known)}")


def attack_for_key(key: str) -> Attack:
    """The linkage attack the descriptors name for an attack key (``interval``,
    ``asymmetric-interval/s2``: see :meth:`~sketchauth.sketches.base.SchemeDescriptor.attack_key`),
    described for that family's sample kind. ``ParameterError`` for a key no family names."""
    try:
        d = scheme_descriptor(key.partition("/")[0])
    except ParameterError:  # unknown, or a composite without a descriptor
        raise _unknown_key(key) from None
    name = d.linkage_attacks.get(key)
    if name is None or name not in LINKAGE_ATTACKS:
        raise _unknown_key(key)
    attack = LINKAGE_ATTACKS[name]
    return replace(attack, description=attack.describe(d.sample_kind))


def linkage_attack(sketch: SecureSketch[Any, Any]) -> tuple[str, Attack]:
    """The descriptor's attack key of ``sketch`` (``asymmetric-interval/s2``) and its linkage attack.

    ``ParameterError`` for a sketch whose family names none (or a composite without a
    descriptor), or that is not of the class the attack reads.
    """
    d = getattr(type(sketch), "descriptor", None)
    key = sketch.scheme_name if d is None else d.attack_key(sketch.params())
    attack = attack_for_key(key)
    if not isinstance(sketch, attack.needs):
        raise _unknown_key(key)
    return key, attack


# -- reversibility probes ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Probe:
    """What a reversibility probe reads: the attacked sketch, its linkage pairs and the scores.

    ``mated`` holds the mated pairs' ``(score, agreeing slots)`` where the attack keeps them (the
    vaults), ``chance`` the best non-mated score; ``relink(second)`` enrols the same people again
    under a second sketch (the interval probe's second deployment); ``extra`` collects what the
    probe adds to the result's ``extra``.
    """

    sketch: Any
    pairs: LinkagePairs
    attack: str
    mated: Sequence[tuple[float, np.ndarray]]
    chance: float
    relink: Callable[[SecureSketch[Any, Any]], LinkagePairs]
    extra: dict[str, Any]


def _reversibility_interval(probe: Probe) -> dict[str, Any]:
    sketch: IntervalSketch = probe.sketch
    second = _second_interval(sketch)
    pairs = probe.relink(second)
    recovered = []
    for ha, hb, secret in zip(pairs.first_helpers, pairs.second_helpers, pairs.first_secrets, strict=False):
        ra, sa = sketch.symbols(sketch.payload(ha))
        rb, sb = second.symbols(second.payload(hb))
        cand = crt_candidates(ra, _moduli(sa), rb, _moduli(sb), sketch.n)
        recovered.append(float(np.mean(cand == np.asarray(secret))))
    return {
        "applicable": True,
        "method": "CRT of residues under tolerances v and v+1 (a second deployment)",
        "second_params": second.params(),
        "recovered_fraction": float(np.mean(recovered)),
    }


def _reversibility_s1(probe: Probe) -> dict[str, Any]:
    sketch: AsymmetricIntervalSketch = probe.sketch
    pairs = probe.pairs
    recovered = []
    for ha, hb, (b, _) in zip(pairs.first_helpers, pairs.second_helpers, pairs.first_secrets, strict=False):
        va, vb = sketch.published_tolerances(ha), sketch.published_tolerances(hb)
        ra, _ = sketch.symbols(sketch.payload(ha))
        rb, _ = sketch.symbols(sketch.payload(hb))
        cand = crt_candidates(ra, 2 * va - 1, rb, 2 * vb - 1, sketch.n)
        recovered.append(float(np.mean((cand == b) & (va != vb))))
    return {
        "applicable": True,
        "method": "CRT of residues on features whose clear tolerances differ between enrolments",
        "recovered_fraction": float(np.mean(recovered)),
    }


def _reversibility_s2(probe: Probe) -> dict[str, Any]:
    sketch: AsymmetricIntervalSketch = probe.sketch
    pairs = probe.pairs
    recovered = []
    for ha, hb, (b, v) in zip(pairs.first_helpers, pairs.second_helpers, pairs.first_secrets, strict=False):
        hits = 0
        for j, (pa, pb) in enumerate(zip(sketch.partition(ha), sketch.partition(hb), strict=False)):
            ia = set(zip(pa[:-1].tolist(), pa[1:].tolist(), strict=False))
            # Only even intervals can be (b - v, b + v) (s3's odd decoys cannot; s2 has no others).
            shared = {
                (lo, hi)
                for lo, hi in ia & set(zip(pb[:-1].tolist(), pb[1:].tolist(), strict=False))
                if (hi - lo) % 2 == 0
            }
            if len(shared) == 1:
                lo, hi = next(iter(shared))
                hits += int((lo + hi) // 2 == b[j] and (hi - lo) // 2 == v[j])
        recovered.append(hits / len(b))
    return {
        "applicable": True,
        "method": "the single interval shared by both partitions of a feature gives (b, v)",
        "recovered_fraction": float(np.mean(recovered)),
    }


def _reversibility_difference(probe: Probe) -> dict[str, Any]:
    sketch: LinearSketch = probe.sketch
    pairs = probe.pairs
    learnt = 0
    for ha, hb in zip(pairs.first_helpers, pairs.second_helpers, strict=False):
        try:
            difference_decoding(sketch, ha, hb)
            learnt += 1
        except DecodeError:
            pass
    return {
        "applicable": False,
        "method": "linear sketch: two sketches give only the difference of the secrets, no template symbol",
        "recovered_fraction": 0.0,
        "difference_learnt_fraction": learnt / len(pairs.first_helpers),
    }


def _reversibility_vault(probe: Probe) -> dict[str, Any]:
    sketch: VaultSketch = probe.sketch
    pairs, mated, chance = probe.pairs, probe.mated, probe.chance
    probe.extra["success_probability_per_trial"] = _trial_success(sketch, pairs)
    probe.extra["degree"] = sketch.k - 1
    recovered = []
    q = sketch.q if isinstance(sketch, WeightedFuzzyVault) else 1
    for (score, mask), secret in zip(mated, pairs.first_secrets, strict=False):
        elements = secret[0] if isinstance(secret, tuple) else secret
        # Only a polynomial beating every non-mated pair's best (chance level) names genuine slots.
        if score <= chance:
            recovered.append(0.0)
            continue
        named = np.unique(np.flatnonzero(mask) // q)
        recovered.append(float(np.isin(np.asarray(elements), named).mean()))
    return {
        "applicable": True,
        "method": (
            "slots agreeing with the best differential polynomial, when it beats every non-mated pair, "
            "name template elements"
        ),
        "recovered_fraction": float(np.mean(recovered)),
    }


# -- the evaluation -----------------------------------------------------------------------------------------
def _reversibility_rotation(probe: Probe) -> dict[str, Any]:
    """Mated pairs whose linkage attack returns the first enrolment's codeword itself (up to its sign)."""
    sketch: AngularSketch = probe.sketch
    pairs = probe.pairs
    recovered = 0
    for ha, hb, secret in zip(pairs.first_helpers, pairs.second_helpers, pairs.first_secrets, strict=False):
        found = linkage_pair(sketch, ha, hb)[1]
        word = np.asarray(secret, dtype=np.int8)
        recovered += int(np.array_equal(found, word) or np.array_equal(found, -word))
    people = len(pairs.first_helpers)
    return {
        "method": "the (c1, c2) maximising <c2, R2 R1^T c1> compared with the enrolled codeword, up to its sign",
        "codewords_recovered": recovered,
        "mated_pairs": people,
        # The secret is the codeword: recovered whole (in two guesses) or not at all.
        "recovered_fraction": recovered / people if people else 0.0,
    }


#: Linkage attacks by name; which one applies to a sketch is its descriptor's ``linkage_attacks``.
LINKAGE_ATTACKS: dict[str, Attack] = {
    "residue-distance": Attack(
        "residue-distance",
        False,
        _residue_score,
        "circular distance of the residues b mod (2v-1)",
        needs=IntervalSketch,
        probe=_reversibility_interval,
    ),
    "s1-tolerances": Attack(
        "s1-tolerances",
        True,
        _s1_score,
        "features whose published tolerances differ by < tau",
        needs=AsymmetricIntervalSketch,
        probe=_reversibility_s1,
    ),
    "s2-similar-intervals": Attack(
        "s2-similar-intervals",
        True,
        _s2_score,
        "similar intervals of the two partitions (tau)",
        needs=AsymmetricIntervalSketch,
        probe=_reversibility_s2,
    ),
    "s3-similar-intervals": Attack(
        "s3-similar-intervals",
        True,
        _s2_score,
        "similar intervals of the two partitions (tau)",
        needs=AsymmetricIntervalSketch,
        probe=_reversibility_s2,
    ),
    "difference-decoding": Attack(
        "difference-decoding",
        False,
        _difference_score,
        "weight of the difference decoded from the combined sketches",
        needs=(CodeOffsetSketch, PinSketch),
        probe=_reversibility_difference,
        by_sample_kind={"bytes": "weight of decode(S xor S', 0)", "set": "size of decode(s(A) xor s(B), {})"},
    ),
    "differential-cross-matching": Attack(
        "differential-cross-matching",
        True,
        _vault_score,
        "best agreement of random interpolations of y - y'",
        needs=(FuzzyVault, WeightedFuzzyVault),
        probe=_reversibility_vault,
    ),
    "rotation-pairing": Attack(
        "rotation-pairing",
        True,
        _rotation_score,
        "max <c2, R2 R1^T c1> over sparse signed c1, c2 (truncated power iteration from every column)",
        needs=AngularSketch,
        probe=_reversibility_rotation,
    ),
}


@dataclass(frozen=True)
class AttackedScheme:
    """Which scheme, with which parameters, an attack ran against, and the attack's name and description.

    The common head of the attack results (:class:`UnlinkabilityResult`,
    :class:`sketchauth.evaluate.repeated.RepeatedEnrolmentResult`) and of their JSON.
    """

    scheme: str
    params: dict[str, Any]
    attack: str
    description: str

    def _head(self) -> dict[str, Any]:
        return {
            "scheme": self.scheme,
            "params": dict(self.params),
            "attack": self.attack,
            "description": self.description,
        }


@dataclass(frozen=True)
class UnlinkabilityResult(AttackedScheme):
    """Linkage scores, the Gomez-Barrero measures and the reversibility probe for one scheme."""

    higher_is_mated: bool
    mated_scores: np.ndarray
    nonmated_scores: np.ndarray
    measures: Linkability
    reversibility: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            **self._head(),
            "higher_is_mated": self.higher_is_mated,
            "mated_mean": float(self.mated_scores.mean()),
            "nonmated_mean": float(self.nonmated_scores.mean()),
            **self.measures.to_dict(),
            "reversibility": dict(self.reversibility),
            "extra": dict(self.extra),
        }


def _trial_success(sketch: VaultSketch, pairs: LinkagePairs) -> float:
    """Mean over mated pairs of ``C(c, D+1)/C(N, D+1)``: the chance that one random node set of
    the differential attack is all common genuine slots (``c`` counted from the secrets; for the
    weighted vault the genuine slots are random per enrolment, so ``c`` uses common elements'
    smaller weight — an upper bound on the expected common slots)."""
    degree = sketch.k - 1
    slots = sketch.slots if isinstance(sketch, WeightedFuzzyVault) else sketch.p
    probs = []
    for a, b in zip(pairs.first_secrets, pairs.second_secrets, strict=False):
        if isinstance(a, tuple):
            _common, ia, ib = np.intersect1d(a[0], b[0], return_indices=True)
            c = int(np.minimum(a[1][ia], b[1][ib]).sum())
        else:
            c = int(np.intersect1d(a, b).size)
        probs.append(comb(c, degree + 1) / comb(slots, degree + 1))
    return float(np.mean(probs))


def _second_interval(sketch: IntervalSketch) -> IntervalSketch:
    v = sketch.v + 1
    return IntervalSketch(sketch.n, np.minimum(v, sketch.n).tolist(), step=sketch.step, offset=sketch.offset)


@dataclass(frozen=True, slots=True)
class UnlinkabilityOptions:
    """How :func:`evaluate_unlinkability` enrols, pairs and measures.

    ``enrol_samples`` captures per enrolment at the scheme's ``setting``; ``nonmated_per_identity``
    non-mated pairs per person; ``omega`` and ``bins`` the ``D↔`` measure's prior ratio and
    histogram (Gomez-Barrero et al., IEEE TIFS 2018); ``tau`` the asymmetric attacks' similarity;
    ``trials`` the vault attack's random interpolations per pair; ``seed`` the population's
    generator; ``progress`` a progress bar on the terminal.
    """

    enrol_samples: int = 1
    setting: Any = None
    nonmated_per_identity: int = 10
    omega: float = 1.0
    bins: int | None = None
    tau: int = 2
    trials: int = VAULT_TRIALS
    seed: int = 0
    progress: bool = False


def evaluate_unlinkability(
    sketch: SecureSketch[Any, Any],
    enrol_fn: Callable[[SecureSketch[Any, Any], Any, Any], Any],
    data: LabelledVectors | LabelledSets,
    options: UnlinkabilityOptions = UnlinkabilityOptions(),
) -> UnlinkabilityResult:
    """Enrol every identity twice, score mated and non-mated pairs, measure, probe reversibility."""
    o = options
    enrol_samples, setting, seed, tau, trials = o.enrol_samples, o.setting, o.seed, o.tau, o.trials
    key, attack = linkage_attack(sketch)
    pairs = link_pairs(
        sketch,
        enrol_fn,
        data,
        enrol_samples=enrol_samples,
        setting=setting,
        nonmated_per_identity=o.nonmated_per_identity,
        seed=seed,
    )
    people = len(pairs.first_helpers)
    all_pairs = [(i, i) for i in range(people)] + list(
        zip(pairs.nonmated[0].tolist(), pairs.nonmated[1].tolist(), strict=False)
    )
    iterator: Sequence[tuple[int, int]] | Any = all_pairs
    if o.progress:
        # Imported here for start-up cost: tqdm loads importlib.metadata (~0.1 s), and only progress bars need it.
        from tqdm import tqdm

        iterator = tqdm(all_pairs, desc=f"linkage {key}", unit="pair", leave=False)
    # linkage_attack checked that the sketch is of the class its attack reads: the probes below
    # narrow on that class.
    vault = sketch if isinstance(sketch, (FuzzyVault, WeightedFuzzyVault)) else None
    scores, masks = [], []
    for k, (i, j) in enumerate(iterator):
        if vault is not None and k < people:
            # Keep the mated pairs' agreeing slots for the reversibility probe.
            score, mask = vault_differential_score(
                vault, pairs.first_helpers[i], pairs.second_helpers[j], trials=trials, seed=seed + k
            )
            masks.append((score, mask))
        else:
            score = attack.score(
                sketch, pairs.first_helpers[i], pairs.second_helpers[j], tau=tau, trials=trials, seed=seed + k
            )
        scores.append(score)
    mated, nonmated = np.array(scores[:people]), np.array(scores[people:])
    measures = linkability(mated, nonmated, omega=o.omega, bins=o.bins)
    extra: dict[str, Any] = {"tau": tau} if isinstance(sketch, AsymmetricIntervalSketch) else {}
    if vault is not None:
        extra["trials_per_pair"] = trials

    def relink(second: SecureSketch[Any, Any]) -> LinkagePairs:
        return link_pairs(
            sketch, enrol_fn, data, enrol_samples=enrol_samples, setting=setting, seed=seed, second_sketch=second
        )

    if attack.probe is None:  # every attack of LINKAGE_ATTACKS has its probe
        raise ParameterError(f"no reversibility probe for the {attack.name} attack")
    probe = Probe(sketch, pairs, attack.name, masks, float(nonmated.max()), relink, extra)
    reversibility = attack.probe(probe)
    return UnlinkabilityResult(
        scheme=sketch.scheme_name,
        params=sketch.params(),
        attack=attack.name,
        description=attack.description,
        higher_is_mated=attack.higher_is_mated,
        mated_scores=mated,
        nonmated_scores=nonmated,
        measures=measures,
        reversibility=reversibility,
        extra=extra,
    )
