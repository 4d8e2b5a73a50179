"""Exact vectorised deciders: each scheme's acceptance rule on many trials at once, and the
cross-check that proves, in the same run, that the rule equals real encode → decode.

A *decider* has the signature :data:`DecideFn`: ``decide(sketch, enrolled, probes, enrolled_index,
probe_index) -> (accepted, malformed)``, boolean arrays over the pairs ``(enrolled_index[k],
probe_index[k])`` (``malformed``: the probe raised ``SampleError``, a rejection counted apart). The
real path decodes one trial at a time (:func:`decide_by_decoding`) or a batch through the scheme's
``decode_many`` (:func:`decide_batch`): at PinSketch
``t = 154`` that is ~60 comparisons a second, hours for a 450,000-comparison evaluation. Every
scheme below has an *exact* acceptance rule — a statement about the enrolled secret and the probe
that holds if and only if ``decode`` returns the enrolled secret — and the deciders evaluate that
rule with numpy:

* **interval** (Dodis–Ostrovsky–Reyzin–Smith, the lattice ``{c ≡ b mod (2v − 1)}``): the nearest
  lattice point to ``d'`` is ``b`` iff ``|d' − b| < v`` (``2v − 1`` is odd, so no ties), and any
  other nearest point is another secret or out of range (``DecodeError``). Accept ⇔ every feature
  has ``|d'_j − b_j| < v_j``. The helper's residue ``S ≡ b (mod 2v − 1)`` is checked once per
  identity (not per pair); an identity whose helper does not match goes through real decodes.
* **asymmetric interval** (Fang's thesis ch. 6): a rule per construction, registered in
  :data:`ASYMMETRIC_RULES` (a new construction plugs in with :func:`register_asymmetric_rule`;
  one without a rule is decided by real decodes). ``s1`` stores ``v`` and ``b mod (2v − 1)``:
  accept ⇔ ``|Δ| < v`` with ``Δ = d' − b``. ``s2`` decodes to the interval whose *first point
  above* ``d'`` closes it, so the secret interval ``(b − v, b + v)`` also takes its left end:
  accept ⇔ ``−v ≤ Δ < v`` (``2v`` values, one more than ``|Δ| < v``).
* **code-offset** (Juels–Wattenberg fuzzy commitment over Reed–Solomon ``[n, n − 2t]``): the
  decoder corrects every pattern of at most ``t`` byte errors; with more it fails or lands on
  another codeword, i.e. another secret, which the comparison rejects. Accept ⇔ at most ``t``
  bytes of the probe differ from the secret.
* **PinSketch** (BCH syndromes, Dodis–Ostrovsky–Reyzin–Smith §6.3): with ``|A Δ B| ≤ t``
  Berlekamp–Massey finds the unique locator of ``A Δ B`` and decoding always returns ``A``.
  With ``|A Δ B| > t`` it either fails or returns the unique set ``A'`` within ``t`` of ``B``
  with the same syndromes — the *spurious set*, ``A' ≠ A`` because ``|A Δ B| > t ≥ |A' Δ B|`` —
  which the comparison rejects. Accept ⇔ ``|A Δ B| ≤ t``, exactly. This also holds when some
  odd syndromes depend on others (``t > 2^(⌈m/2⌉−1)``, e.g. the thermometer pipeline's
  ``m = 11, t = 154``): the dependence only means the code's true minimum distance may exceed
  the designed ``2t + 1`` (fewer spurious sets) and that the sketch carries fewer than ``t·m``
  bits; the decoder still uses all ``2t`` power sums and corrects exactly up to ``t``. The
  symmetric difference is counted on bitmaps of the universe (``2^m − 1 ≤ 2^16`` elements);
  larger fields are decided by the real batch decoder.
* **angular** (IronMask, Kim et al. CVPR 2021): ``y = R̂ p̂`` in integers (exact in float64, any
  summation order); accept ⇔ ``min_{i ∈ supp c} sign(c_i)·y_i > max_{j ∉ supp c} |y_j|`` (ties are
  refused by the decoder) and, with ``min_cos = τ``, ``(Σ_{supp} sign·y)² ≥ τ²·α·2^28·‖p̂‖²``; the
  last comparison is made in floats and, within ``10^−9`` of equality, in exact integers by the
  sketch's own :meth:`~sketchauth.sketches.angular.AngularSketch.angle_accepts`.
* **angular-polar** (the same helper on a polar code): the sketch's own list decoder
  (:func:`~sketchauth.sketches.polar.decode_batch`, exact integer arithmetic) run on the batch
  ``P̂ R̂ᵀ`` — the decoder itself, vectorised over probes, not a second rule — then the same exact
  angle check with ``α = n``.
* the **fuzzy vaults** are decided by their real batch decoders
  (:func:`decide_batch`), which are already the scheme.

**Streaming** (:mod:`sketchauth.evaluate.blocks`): each exact decider has a *prepared* form
(:class:`PreparedDecider`, registered in :data:`TILE_DECIDERS`) bound to one setting's enrolled
population and the probes, which decides a tile of identities × probes with broadcasting (no
gathers, no per-call re-quantisation or helper parsing). A new family's decider streams as it is
(the generic :class:`PreparedDecider` calls it on each tile's pair list); to stream at array speed
it registers a preparer with :func:`register_tile_decider` — the contract is in its docstring.

:func:`crosscheck_by_decoding` re-decides a seeded sample of trials by real ``decode`` and
compares: every trial when a run has at most :data:`CROSSCHECK_MIN` comparisons, otherwise at
least that many over the sweep, a third of them *boundary* trials (accepted at some setting and
rejected at another, where an off-by-one rule would show), a third accepted, a third at random
(chosen from the pairs a streaming run keeps, :class:`sketchauth.evaluate.tally.Candidates`);
:func:`crosscheck_with_verify` re-runs trials through the real argon2 ``enrol``/``verify``.
"""

from __future__ import annotations

import hmac
import itertools
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

from sketchauth.enrolment import Enrolment, hasher, secret_message, verify
from sketchauth.errors import DecodeError, SampleError
from sketchauth.evaluate.trials import Enrolled
from sketchauth.sketches.angular import AngularSketch, probe_matrix
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.polar import correlation, decode_batch, signs

__all__ = [
    "ASYMMETRIC_RULES",
    "CROSSCHECK_MIN",
    "TILE_DECIDERS",
    "VECTORISED",
    "AcceptanceRule",
    "DecideFn",
    "PreparedDecider",
    "crosscheck_by_decoding",
    "crosscheck_sample",
    "crosscheck_with_verify",
    "decide_angular",
    "decide_angular_polar",
    "decide_asymmetric",
    "decide_batch",
    "decide_by_decoding",
    "decide_code_offset",
    "decide_exact",
    "decide_interval",
    "decide_interval_exact",
    "decide_pinsketch",
    "polar_accepts",
    "prepare_decider",
    "register_asymmetric_rule",
    "register_tile_decider",
]

#: ``decide(sketch, enrolled, probes, enrolled_index, probe_index) -> (accepted, malformed)``.
DecideFn = Callable[
    [SecureSketch[Any, Any], Enrolled, Sequence[Any], np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]
]

#: Comparisons re-decided by real ``decode`` per run (all of them when a run has fewer).
CROSSCHECK_MIN = 10_000
#: Pairs per chunk of the array deciders on pair lists (bounded memory).
CHUNK = 65_536
#: Largest PinSketch universe decided on bitmaps (bits per set).
MAX_BITMAP_UNIVERSE = 1 << 16

#: ``rule(delta, v) -> accepted`` per feature, ``delta = d' − b`` (int arrays, broadcasting).
AcceptanceRule = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _s1_rule(delta: np.ndarray, v: np.ndarray) -> np.ndarray:
    return cast("np.ndarray", np.abs(delta) < v)


def _s2_rule(delta: np.ndarray, v: np.ndarray) -> np.ndarray:
    # The decoder takes "the first g_i > d'": d' = b − v belongs to the interval (b − v, b + v).
    return (delta >= -v) & (delta < v)


#: Acceptance rule of each asymmetric-interval construction, by its ``scheme`` parameter.
ASYMMETRIC_RULES: dict[str, AcceptanceRule] = {"s1": _s1_rule, "s2": _s2_rule}


def register_asymmetric_rule(scheme: str, rule: AcceptanceRule) -> None:
    """Declare the exact per-feature acceptance rule of an asymmetric construction.

    Evaluations then decide it with arrays; the same run's cross-check against real decodes
    reports any disagreement, so a wrong rule cannot go unnoticed.
    """
    ASYMMETRIC_RULES[str(scheme)] = rule


# -- the real path -------------------------------------------------------------------------------------
def decide_by_decoding(
    sketch: SecureSketch[Any, Any],
    enrolled: Enrolled,
    probes: Sequence[Any],
    enrolled_index: np.ndarray,
    probe_index: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """One real ``decode`` per trial; accepted iff the recovered canonical secret matches.

    The comparison is :func:`hmac.compare_digest` of the canonical secret bytes — what
    :func:`sketchauth.enrolment.verify` compares behind argon2id (deterministic for a given salt,
    so hash equality is secret equality up to a 2^-256 collision). ``DecodeError`` is a rejection;
    ``SampleError`` a rejection counted as ``malformed``.
    """
    accepted = np.zeros(len(enrolled_index), dtype=bool)
    malformed = np.zeros(len(enrolled_index), dtype=bool)
    for k, (e, q) in enumerate(zip(enrolled_index.tolist(), probe_index.tolist(), strict=False)):
        try:
            candidate = sketch.decode(enrolled.helpers[e], probes[q])
            accepted[k] = hmac.compare_digest(sketch.secret_bytes(candidate), enrolled.canonical[e])
        except DecodeError:
            pass
        except SampleError:
            malformed[k] = True
    return accepted, malformed


def decide_batch(
    sketch: SecureSketch[Any, Any],
    enrolled: Enrolled,
    probes: Sequence[Any],
    enrolled_index: np.ndarray,
    probe_index: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Decisions through the scheme's batch decoder (the vaults: one Berlekamp–Welch solve per
    batch; PinSketch: one pass for the samples' power sums); same outcome as :func:`decide_by_decoding`.

    Called as ``sketch.decode_many(helpers, samples, errors="return")``: a failed decoding comes
    back as a ``DecodeError`` instance in its place (a rejection). A malformed probe makes the
    whole batch raise ``SampleError``; that batch then goes through the per-trial decider, which
    counts the malformed ones.
    """
    helpers = [enrolled.helpers[e] for e in enrolled_index.tolist()]
    samples = [probes[q] for q in probe_index.tolist()]
    try:
        results = sketch.decode_many(helpers, samples, errors="return")
    except SampleError:
        return decide_by_decoding(sketch, enrolled, probes, enrolled_index, probe_index)
    accepted = np.zeros(len(results), dtype=bool)
    for k, (e, found) in enumerate(zip(enrolled_index.tolist(), results, strict=False)):
        if not isinstance(found, DecodeError):
            accepted[k] = hmac.compare_digest(sketch.secret_bytes(found), enrolled.canonical[e])
    return accepted, np.zeros(len(results), dtype=bool)


# -- prepared deciders: one setting's population, decided tile by tile --------------------------------
class PreparedDecider:
    """A decider bound to one setting's enrolled population and to every probe, prepared once.

    The streaming evaluation (:mod:`sketchauth.evaluate.blocks`) decides *tiles*: enrolled
    identities ``e0:e1`` × probe positions ``p0:p1`` (``probes`` in the order they were given).
    :meth:`tile` returns ``(accepted, malformed)`` boolean arrays of shape ``(e1 − e0, p1 − p0)``;
    :meth:`pairs` decides a list of ``(identity, probe position)`` pairs. This base class decides
    by a :data:`DecideFn` on the pair lists (the generic path: any decider streams, e.g. a real
    batch decoder); the families with an exact array rule subclass it and prepare arrays once
    (templates, quantised probe levels, bitmaps), so a tile costs a few numpy operations per
    feature and pair with no gathers. Instances must pickle (worker processes, a Dask cluster).
    """

    def __init__(
        self, decide: DecideFn, sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Sequence[Any]
    ) -> None:
        self.decide, self.sketch, self.enrolled, self.probes = decide, sketch, enrolled, probes

    def pairs(self, e: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(accepted, malformed)`` of the pairs ``(e[k], p[k])``."""
        if e.size == 0:
            return _empty()
        return self.decide(self.sketch, self.enrolled, self.probes, e, p)

    def tile(self, e0: int, e1: int, p0: int, p1: int) -> tuple[np.ndarray, np.ndarray]:
        """``(accepted, malformed)`` of identities ``e0:e1`` × probe positions ``p0:p1``."""
        e = np.repeat(np.arange(e0, e1, dtype=np.int64), p1 - p0)
        p = np.tile(np.arange(p0, p1, dtype=np.int64), e1 - e0)
        accepted, malformed = self.pairs(e, p)
        return accepted.reshape(e1 - e0, p1 - p0), malformed.reshape(e1 - e0, p1 - p0)


#: ``prepare(sketch, enrolled, probes) -> PreparedDecider | None`` (``None``: use the generic path).
Preparer = Callable[[SecureSketch[Any, Any], Enrolled, Sequence[Any]], "PreparedDecider | None"]
#: The array rule behind each exact decider (:func:`register_tile_decider` adds one).
TILE_DECIDERS: dict[Callable[..., Any], Preparer] = {}


def register_tile_decider(decide: Callable[..., Any], prepare: Preparer) -> None:
    """Stream ``decide`` through ``prepare``: the contract of a new family's fast decider.

    ``prepare(sketch, enrolled, probes)`` returns a :class:`PreparedDecider` subclass whose
    :meth:`~PreparedDecider.tile` and :meth:`~PreparedDecider.pairs` equal ``decide`` on the same
    pairs, or ``None`` when the inputs do not suit its arrays (``decide`` then runs on pair lists).
    Without a registration ``decide`` still streams (the generic path); the evaluation re-decides
    a seeded sample by real ``decode`` either way.
    """
    TILE_DECIDERS[decide] = prepare


def prepare_decider(
    decide: DecideFn, sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Sequence[Any]
) -> PreparedDecider:
    """The prepared form of ``decide`` for one setting (its registered array rule, else generic)."""
    prepare = TILE_DECIDERS.get(decide)
    prepared = None if prepare is None else prepare(sketch, enrolled, probes)
    return prepared if prepared is not None else PreparedDecider(decide, sketch, enrolled, probes)


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)


#: What an array decider keeps of the population once its arrays are built (nothing: it never decodes).
_NOTHING = Enrolled((), (), ())


def _on_pairs(
    prepare: Preparer,
    fallback: DecideFn,
    sketch: SecureSketch[Any, Any],
    enrolled: Enrolled,
    probes: Any,
    enrolled_index: np.ndarray,
    probe_index: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """A pair-list decider from a preparer: prepare the identities and probes used, decide the pairs."""
    if len(enrolled_index) == 0:
        return _empty()
    subset, rows, local_e, local_q = _restrict(enrolled, probes, enrolled_index, probe_index)
    prepared = prepare(sketch, subset, rows)
    if prepared is None:
        return fallback(sketch, enrolled, probes, enrolled_index, probe_index)
    return prepared.pairs(local_e, local_q)


def _compact(index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(index, return_inverse=True)`` in linear time (indices are small non-negative ints).

    >>> [x.tolist() for x in _compact(np.array([5, 2, 5, 9]))]
    [[2, 5, 9], [1, 0, 1, 2]]
    """
    index = np.asarray(index, dtype=np.int64)
    seen = np.zeros(int(index.max(initial=-1)) + 1, dtype=bool)
    seen[index] = True
    used = np.flatnonzero(seen)
    remap = np.cumsum(seen, dtype=np.int64) - 1
    return used, remap[index]


def _restrict(
    enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[Enrolled, Any, np.ndarray, np.ndarray]:
    """Only the identities and probes some pair uses, and the pairs re-indexed into them."""
    used_e, local_e = _compact(enrolled_index)
    used_q, local_q = _compact(probe_index)
    subset = Enrolled(
        *(tuple(getattr(enrolled, f)[i] for i in used_e.tolist()) for f in ("helpers", "canonical", "secrets"))
    )
    rows = probes[used_q] if isinstance(probes, np.ndarray) else [probes[i] for i in used_q.tolist()]
    return subset, rows, local_e.astype(np.int64), local_q.astype(np.int64)


def _by_runs(e: np.ndarray, p: np.ndarray, rule: Callable[[Any, np.ndarray], np.ndarray]) -> np.ndarray:
    """``rule(identity, probe positions)`` over a pair list, in bounded chunks.

    Pair lists of an evaluation come identity by identity: over a long run of one identity the
    rule gets that identity as an int (its template row broadcasts, only the probes are
    gathered); otherwise it gets the identities' array (both sides gathered).
    """
    out = np.empty(e.size, dtype=bool)
    cut = np.flatnonzero(np.diff(e)) + 1
    if e.size >= 64 * (cut.size + 1):
        bounds = [0, *cut.tolist(), e.size]
        for a, b in itertools.pairwise(bounds):
            for start in range(a, b, CHUNK):
                stop = min(start + CHUNK, b)
                out[start:stop] = rule(int(e[a]), p[start:stop])
        return out
    for start in range(0, e.size, CHUNK):
        out[start : start + CHUNK] = rule(e[start : start + CHUNK], p[start : start + CHUNK])
    return out


def _levels(sketch: IntervalSketch | AsymmetricIntervalSketch, probes: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """Levels of the probes by the sketch's own quantiser, or ``None`` if they are not a matrix."""
    try:
        return sketch.quantiser.levels_many(probes if isinstance(probes, np.ndarray) else list(probes), sketch.features)
    except (SampleError, ValueError):
        return None


def _window_bits(low: int, top: int, width: int) -> int | None:
    """Narrowest unsigned width (8, 16, 32 bits) in which ``(d − lo) mod 2^w < width`` ⇔ ``0 ≤ d − lo < width``.

    With ``d − lo ∈ [low, top]``: non-negative values must stay below ``2^w`` (``top < 2^w``) and
    negative ones must wrap to at least ``width`` (``2^w + low ≥ width``). ``None``: none fits.
    """
    for bits in (8, 16, 32):
        if top < (1 << bits) and (1 << bits) + low >= width:
            return bits
    return None


class _IntervalTiles(PreparedDecider):
    """Interval sketch: accept ⇔ ``|d'_j − b_j| < v_j`` ⇔ ``0 ≤ d'_j − lo_j < w_j`` with
    ``lo_j = b_j − v_j + 1`` and ``w_j = 2v_j − 1``, evaluated as one unsigned comparison
    ``(d'_j − lo_j) mod 2^k < w_j`` in the narrowest type where it is exact (:func:`_window_bits`):
    one subtraction and one comparison per feature and pair, where a plain L∞ comparison needs a
    subtraction, an absolute value and a maximum. With one tolerance for every feature the
    comparison is a maximum over the features (as L∞), else a comparison then ``all``.
    """

    def __init__(
        self, sketch: IntervalSketch, enrolled: Enrolled, probes: Any, levels: np.ndarray, refused: np.ndarray
    ) -> None:
        super().__init__(decide_by_decoding, sketch, enrolled, probes)
        b = np.stack([np.asarray(s, dtype=np.int64) for s in enrolled.secrets])
        v = np.asarray(sketch.v, dtype=np.int64)
        stored = np.stack([sketch.symbols(sketch.payload(h))[0].astype(np.int64) for h in enrolled.helpers])
        # S ≡ b (mod 2v − 1), once per identity; an identity whose helper does not match is decoded for real.
        self.odd = ~np.all(stored == b % (2 * v - 1), axis=1)
        lo, width, levels = b - v + 1, 2 * v - 1, levels.astype(np.int64)
        bits = _window_bits(
            int(levels.min(initial=0) - lo.max()), int(levels.max(initial=0) - lo.min()), int(width.max())
        )
        kind = np.dtype(f"uint{bits}") if bits is not None else np.dtype(np.int64)
        if bits is None:  # no unsigned type fits (huge n): signed 64-bit, still exact
            self.lo, self.levels, self.width = lo, levels, width
        else:
            self.lo, self.levels = (lo % (1 << bits)).astype(kind), (levels % (1 << bits)).astype(kind)
            self.width = width.astype(kind)
        self.unsigned = bits is not None
        self.uniform = bool(np.all(width == width[0]))
        self.refused = refused
        if not self.odd.any():  # nothing to decode for real: do not carry (or ship) the population
            self.enrolled, self.probes = _NOTHING, ()

    def _rule(self, x: np.ndarray) -> np.ndarray:
        if not self.unsigned:
            return np.asarray(((x >= 0) & (x < self.width)).all(axis=-1))
        if self.uniform:
            return np.asarray(x.max(axis=-1) < self.width[0])
        return _all_below(x, self.width)

    def _redo(self, accepted: np.ndarray, malformed: np.ndarray, e: np.ndarray, p: np.ndarray) -> None:
        """Pairs of identities whose helper residues do not match: real decodes, in place."""
        mask = self.odd[e]
        if mask.any():
            accepted[mask], malformed[mask] = decide_by_decoding(
                self.sketch, self.enrolled, self.probes, e[mask], p[mask]
            )

    def tile(self, e0: int, e1: int, p0: int, p1: int) -> tuple[np.ndarray, np.ndarray]:
        accepted = self._rule(self.levels[None, p0:p1] - self.lo[e0:e1, None])
        malformed = np.repeat(self.refused[None, p0:p1], e1 - e0, axis=0)
        accepted &= ~malformed
        if self.odd[e0:e1].any():
            e, p = np.meshgrid(np.arange(e0, e1), np.arange(p0, p1), indexing="ij")
            self._redo(accepted.reshape(-1), malformed.reshape(-1), e.ravel(), p.ravel())
        return accepted, malformed

    def pairs(self, e: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        accepted = _by_runs(e, p, lambda ee, pp: self._rule(self.levels[pp] - self.lo[ee]))
        malformed = self.refused[p]
        accepted &= ~malformed
        self._redo(accepted, malformed, e, p)
        return accepted, malformed


#: Eight ``True`` bytes read as one 64-bit word (the same in either byte order).
_EIGHT_TRUE = np.uint64(0x0101010101010101)


def _all_below(x: np.ndarray, width: np.ndarray) -> np.ndarray:
    """``(x < width).all(axis=-1)``, with the ``all`` done eight features at a time.

    The comparisons go to a boolean buffer whose last axis is padded with ``True`` to a multiple
    of 8; read as 64-bit words, a pair is accepted iff the AND of its words is eight ``True``
    bytes (``0x01`` each). Same result as the plain reduction, about twice as fast, since numpy's
    ``all`` over a short last axis costs more than the comparison itself.

    >>> x = np.array([[1, 2, 3], [1, 5, 3]], dtype=np.uint8)
    >>> _all_below(x, np.array([2, 4, 4], dtype=np.uint8)).tolist()
    [True, False]
    """
    k = x.shape[-1]
    padded = -(-k // 8) * 8
    below = np.empty((*x.shape[:-1], padded), dtype=bool)
    below[..., k:] = True
    np.less(x, width, out=below[..., :k])
    words = below.view(np.uint64)
    acc = words[..., 0].copy()
    for i in range(1, words.shape[-1]):
        acc &= words[..., i]
    return np.asarray(acc == _EIGHT_TRUE)


def _prepare_interval(sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Any) -> PreparedDecider | None:
    if not isinstance(sketch, IntervalSketch) or not enrolled.secrets:
        return None
    got = _levels(sketch, probes)
    return None if got is None else _IntervalTiles(sketch, enrolled, probes, *got)


class _RuleTiles(PreparedDecider):
    """Asymmetric interval sketch: the construction's registered rule on ``Δ = d' − b`` per feature."""

    def __init__(
        self,
        sketch: AsymmetricIntervalSketch,
        enrolled: Enrolled,
        probes: Any,
        rule: AcceptanceRule,
        levels: np.ndarray,
        refused: np.ndarray,
    ):
        super().__init__(decide_by_decoding, sketch, _NOTHING, ())
        self.rule, self.levels, self.refused = rule, levels.astype(np.int64), refused
        self.b = np.stack([np.asarray(s[0], dtype=np.int64) for s in enrolled.secrets])
        self.v = np.stack([np.asarray(s[1], dtype=np.int64) for s in enrolled.secrets])

    def tile(self, e0: int, e1: int, p0: int, p1: int) -> tuple[np.ndarray, np.ndarray]:
        delta = self.levels[None, p0:p1] - self.b[e0:e1, None]
        accepted = self.rule(delta, self.v[e0:e1, None]).all(axis=-1)
        malformed = np.broadcast_to(self.refused[None, p0:p1], accepted.shape)
        return accepted & ~malformed, malformed

    def pairs(self, e: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        accepted = _by_runs(
            e, p, lambda ee, pp: np.asarray(self.rule(self.levels[pp] - self.b[ee], self.v[ee]).all(axis=-1))
        )
        malformed = self.refused[p]
        return accepted & ~malformed, malformed


def _prepare_asymmetric(sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Any) -> PreparedDecider | None:
    if not isinstance(sketch, AsymmetricIntervalSketch) or not enrolled.secrets:
        return None
    rule = ASYMMETRIC_RULES.get(sketch.scheme)
    got = None if rule is None else _levels(sketch, probes)
    return None if rule is None or got is None else _RuleTiles(sketch, enrolled, probes, rule, *got)


class _CountTiles(PreparedDecider):
    """Accept ⇔ at most ``t`` differences: code-offset (bytes ``!=``) and PinSketch (bitmap XOR popcount)."""

    def __init__(
        self,
        sketch: SecureSketch[Any, Any],
        enrolled: Enrolled,
        probes: Any,
        secrets: np.ndarray,
        rows: np.ndarray,
        *,
        bitmaps: bool,
    ):
        super().__init__(decide_by_decoding, sketch, _NOTHING, ())
        self.s, self.p, self.t, self.bitmaps = secrets, rows, int(sketch.t), bitmaps  # type: ignore[attr-defined]

    def _differences(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        if self.bitmaps:
            return _popcount(a ^ b)
        return cast("np.ndarray", np.count_nonzero(a != b, axis=-1))

    def tile(self, e0: int, e1: int, p0: int, p1: int) -> tuple[np.ndarray, np.ndarray]:
        accepted = self._differences(self.p[None, p0:p1], self.s[e0:e1, None]) <= self.t
        return accepted, np.zeros(accepted.shape, dtype=bool)

    def pairs(self, e: np.ndarray, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        accepted = _by_runs(e, p, lambda ee, pp: self._differences(self.p[pp], self.s[ee]) <= self.t)
        return accepted, np.zeros(e.size, dtype=bool)


def _byte_rows(rows: Sequence[Any], n: int) -> np.ndarray | None:
    if not all(isinstance(r, (bytes, bytearray)) and len(r) == n for r in rows):
        return None
    return np.frombuffer(b"".join(bytes(r) for r in rows), dtype=np.uint8).reshape(len(rows), n)


def _prepare_code_offset(sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Any) -> PreparedDecider | None:
    if not isinstance(sketch, CodeOffsetSketch):
        return None
    p, s = _byte_rows(list(probes), sketch.n), _byte_rows(list(enrolled.secrets), sketch.n)
    return None if p is None or s is None else _CountTiles(sketch, enrolled, probes, s, p, bitmaps=False)


def _bitmaps(sets: Sequence[Any], universe: int) -> np.ndarray | None:
    """Packed membership bitmaps (one row per set) of integer sets in ``[1, universe)``."""
    rows = np.zeros((len(sets), universe), dtype=bool)
    for i, s in enumerate(sets):
        arr = np.asarray(s)
        if arr.ndim != 1 or (arr.size and (arr.dtype.kind not in "iu" or arr.min() < 1 or arr.max() >= universe)):
            return None
        if np.unique(arr).size != arr.size:
            return None
        rows[i, arr.astype(np.int64)] = True
    packed = np.packbits(rows, axis=1)
    pad = -packed.shape[1] % 8
    # Whole 64-bit words: one XOR and one population count per word.
    return np.ascontiguousarray(np.pad(packed, ((0, 0), (0, pad)))).view(np.uint64)


_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint16)


def _popcount(words: np.ndarray) -> np.ndarray:
    """Set bits along the last axis of a uint64 array (``np.bitwise_count`` on numpy ≥ 2, a byte table before)."""
    if hasattr(np, "bitwise_count"):
        return cast("np.ndarray", np.bitwise_count(words).sum(axis=-1, dtype=np.int64))
    return cast("np.ndarray", _POPCOUNT[words.view(np.uint8)].sum(axis=-1, dtype=np.int64))


def _prepare_pinsketch(sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Any) -> PreparedDecider | None:
    if not isinstance(sketch, PinSketch) or (1 << sketch.m) > MAX_BITMAP_UNIVERSE:
        return None
    p, s = _bitmaps(list(probes), 1 << sketch.m), _bitmaps(list(enrolled.secrets), 1 << sketch.m)
    return None if p is None or s is None else _CountTiles(sketch, enrolled, probes, s, p, bitmaps=True)


# -- angular -----------------------------------------------------------------------------------------
#: Relative band around ``τ`` within which the angle check is redone in exact integers.
ANGLE_BAND = 1e-9


def angular_scores(sketch: AngularSketch, matrix: np.ndarray, codeword: Any, probes: np.ndarray) -> np.ndarray:
    """Per quantised probe row: the decoding margin (> 0 iff it decodes to ``codeword``).

    ``matrix`` is the helper's ``R̂`` (float64 integers), ``probes`` quantised rows ``P̂``.
    """
    c = np.asarray(codeword, dtype=np.int64)
    support = np.flatnonzero(c)
    y = probes @ matrix.T  # exact: integers below 2^53 (AngularSketch module docstring)
    inside = (y[:, support] * c[support]).min(axis=1)
    mask = np.ones(sketch.dimension, dtype=bool)
    mask[support] = False
    outside = np.abs(y[:, mask]).max(axis=1)
    margin = inside - outside
    if sketch.decision_cos > 0:
        total = (y[:, support] * c[support]).sum(axis=1)
        lhs = total * total
        rhs = sketch.decision_cos**2 * sketch.alpha * float(1 << 28) * np.einsum("ij,ij->i", probes, probes)
        close = (margin > 0) & (np.abs(lhs - rhs) <= ANGLE_BAND * rhs)
        angle_ok = lhs >= rhs
        for k in np.flatnonzero(close).tolist():
            angle_ok[k] = sketch.angle_accepts(float(total[k]), probes[k])
        margin = np.where(angle_ok, margin, -np.inf)
    return cast("np.ndarray", margin)


def _decide_rotated(
    sketch: AngularSketch,
    enrolled: Enrolled,
    probes: Any,
    enrolled_index: np.ndarray,
    probe_index: np.ndarray,
    rule: Callable[[np.ndarray, Any, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray]:
    """The angular families' pair decider: probes quantised once, then per enrolled identity its
    helper's ``R̂`` and ``rule(R̂, secret, quantised probes) → accepted`` on that identity's pairs."""
    if len(enrolled_index) == 0:
        return _empty()
    used_q, local_q = np.unique(probe_index, return_inverse=True)
    rows = probes[used_q] if isinstance(probes, np.ndarray) else [probes[i] for i in used_q.tolist()]
    quantised, refused = probe_matrix(rows, sketch.dimension)
    accepted = np.zeros(enrolled_index.size, dtype=bool)
    for e in np.unique(enrolled_index).tolist():
        pairs = np.flatnonzero(enrolled_index == e)
        accepted[pairs] = rule(sketch.matrix(enrolled.helpers[e]), enrolled.secrets[e], quantised[local_q[pairs]])
    malformed = refused[local_q]
    return accepted & ~malformed, malformed


def decide_angular(
    sketch: AngularSketch, enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Angular sketch: the exact margin rule (module docstring), one matrix product per identity."""

    def rule(matrix: np.ndarray, secret: Any, quantised: np.ndarray) -> np.ndarray:
        return angular_scores(sketch, matrix, secret, quantised) > 0

    return _decide_rotated(sketch, enrolled, probes, enrolled_index, probe_index, rule)


#: Probes per call of the polar list decoder in :func:`decide_angular_polar`.
POLAR_CHUNK = 512


def polar_accepts(sketch: PolarAngularSketch, matrix: np.ndarray, secret: Any, quantised: np.ndarray) -> np.ndarray:
    """Which quantised probes the polar sketch accepts under ``R̂`` (its list decoder on the batch,
    then the exact angle check)."""
    y = quantised @ matrix.T  # exact: integers below 2^53
    # The list decoder's working set is chunk × list × n floats: bounded chunks keep it small.
    coded = np.concatenate(
        [decode_batch(y[s : s + POLAR_CHUNK], sketch.code, sketch.list_size) for s in range(0, len(y), POLAR_CHUNK)]
    )
    same = np.all(signs(coded) == np.asarray(secret, dtype=np.int8)[None, :], axis=1)
    if sketch.decision_cos > 0:
        total = correlation(coded, y)
        lhs = total * total
        rhs = sketch.decision_cos**2 * sketch.dimension * float(1 << 28) * np.einsum("ij,ij->i", quantised, quantised)
        angle_ok = (total > 0) & (lhs >= rhs)
        for k in np.flatnonzero(same & (total > 0) & (np.abs(lhs - rhs) <= ANGLE_BAND * rhs)).tolist():
            angle_ok[k] = sketch.angle_accepts(float(total[k]), quantised[k])
        same &= angle_ok
    return cast("np.ndarray", same)


def decide_angular_polar(
    sketch: PolarAngularSketch, enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Angular sketch on a polar code: the sketch's own list decoder on a batch (it *is* the decoder:
    :func:`~sketchauth.sketches.polar.decode_batch`), then the exact angle check, per identity."""

    def rule(matrix: np.ndarray, secret: Any, quantised: np.ndarray) -> np.ndarray:
        return polar_accepts(sketch, matrix, secret, quantised)

    return _decide_rotated(sketch, enrolled, probes, enrolled_index, probe_index, rule)


def _prepare_exact(sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Any) -> PreparedDecider | None:
    for kind, prepare in (
        (IntervalSketch, _prepare_interval),
        (AsymmetricIntervalSketch, _prepare_asymmetric),
        (CodeOffsetSketch, _prepare_code_offset),
        (PinSketch, _prepare_pinsketch),
    ):
        if isinstance(sketch, kind):
            return prepare(sketch, enrolled, probes)
    return None


# -- the exact deciders on pair lists (the same array rules) ------------------------------------------
def decide_interval_exact(
    sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Interval sketch: accept ⇔ ``|d'_j − b_j| < v_j`` for every feature (module docstring).

    Written ``(d'_j − (b_j − v_j + 1)) mod 2^w < 2v_j − 1`` on the narrowest unsigned type: one
    subtraction and one comparison per feature and pair, against a plain L∞ comparison's
    subtraction, absolute value and maximum (``benchmarks/bench_deciders.py``). Another scheme's
    sketch is decided by its real batch decoder.
    """
    return _on_pairs(_prepare_interval, decide_batch, sketch, enrolled, probes, enrolled_index, probe_index)


#: The interval adapter's decider (the exact rule; name kept for callers and docs).
decide_interval = decide_interval_exact


def decide_by_real(
    sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Any, e: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    return decide_by_decoding(sketch, enrolled, probes, e, q)


def _pair_decider(name: str, prepare: Preparer, fallback: DecideFn, doc: str) -> DecideFn:
    """A public pair-list decider: ``prepare``'s array rule on the pairs, ``fallback`` when it does not apply."""

    def decide(
        sketch: Any, enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        return _on_pairs(prepare, fallback, sketch, enrolled, probes, enrolled_index, probe_index)

    decide.__name__ = decide.__qualname__ = name
    decide.__doc__ = doc
    return decide


decide_asymmetric = _pair_decider(
    "decide_asymmetric",
    _prepare_asymmetric,
    decide_by_real,
    "Asymmetric interval sketch: the registered rule of its construction on ``Δ = d' − b``.",
)
decide_code_offset = _pair_decider(
    "decide_code_offset",
    _prepare_code_offset,
    decide_by_real,
    "Code-offset: accept ⇔ at most ``t`` bytes of the probe differ from the enrolled secret.",
)
decide_pinsketch = _pair_decider(
    "decide_pinsketch",
    _prepare_pinsketch,
    decide_batch,
    "PinSketch: accept ⇔ ``|A Δ B| ≤ t`` (module docstring: exact, spurious sets included).",
)


def _exact_fallback(
    sketch: SecureSketch[Any, Any], enrolled: Enrolled, probes: Any, e: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The angular family's own exact rule (it has no tile form), else the real batch decoder."""
    if isinstance(sketch, PolarAngularSketch):
        return decide_angular_polar(sketch, enrolled, probes, e, q)
    if isinstance(sketch, AngularSketch):
        return decide_angular(sketch, enrolled, probes, e, q)
    return decide_batch(sketch, enrolled, probes, e, q)


decide_exact = _pair_decider(
    "decide_exact",
    _prepare_exact,
    _exact_fallback,
    "The scheme's exact array decider, or its real batch decoder when it has none.",
)


for _decide, _prepare in (
    (decide_interval_exact, _prepare_interval),
    (decide_asymmetric, _prepare_asymmetric),
    (decide_code_offset, _prepare_code_offset),
    (decide_pinsketch, _prepare_pinsketch),
    (decide_exact, _prepare_exact),
):
    register_tile_decider(_decide, _prepare)

#: The array deciders (numpy releases the GIL). Kept for callers that ask whether a decider is one.
VECTORISED: frozenset[Callable[..., Any]] = frozenset({*TILE_DECIDERS, decide_angular, decide_angular_polar})


# -- the cross-check ---------------------------------------------------------------------------------
def crosscheck_sample(
    accepted: np.ndarray, *, count: int, rng: np.random.Generator, boundary: np.ndarray | None = None
) -> np.ndarray:
    """Indices of ``count`` trials: a third boundary, a third accepted, the rest at random (seeded)."""
    total = accepted.size
    if count >= total:
        return np.arange(total)
    chosen: list[np.ndarray] = []
    taken = np.zeros(total, dtype=bool)
    for candidates, want in (
        (np.flatnonzero(boundary) if boundary is not None else np.zeros(0, dtype=np.int64), count // 3),
        (np.flatnonzero(accepted), count // 3),
    ):
        pool = candidates[~taken[candidates]]
        pick = rng.choice(pool, size=min(want, pool.size), replace=False) if pool.size else pool
        taken[pick] = True
        chosen.append(pick)
    rest = np.flatnonzero(~taken)
    need = count - sum(c.size for c in chosen)
    chosen.append(rng.choice(rest, size=min(need, rest.size), replace=False))
    return np.sort(np.concatenate(chosen)).astype(np.int64)


def real_decode_recovers(sketch: SecureSketch[Any, Any], helper: bytes, canonical: bytes, probe: Any) -> bool:
    """Whether real ``decode`` of ``probe`` under ``helper`` recovers the secret whose bytes are ``canonical``."""
    try:
        found = sketch.decode(helper, probe)
    except (DecodeError, SampleError):
        return False
    return hmac.compare_digest(sketch.secret_bytes(found), canonical)


@dataclass
class Disagreements:
    """The trials where real decoding and a row's rule differ: their count and the first five."""

    count: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    def record(self, real: bool, rule: bool, **trial: Any) -> None:
        """Count the trial if ``real`` and ``rule`` differ; keep it (its indices, never a sample) as an example."""
        if real != rule:
            self.count += 1
            if len(self.examples) < 5:
                self.examples.append({**trial, "rule_accepts": rule})


def _real_decide(args: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    return decide_by_decoding(*args)


def crosscheck_by_decoding(
    sketch: SecureSketch[Any, Any],
    enrolled: Enrolled,
    probes: Any,
    pairs: np.ndarray,
    accepted: np.ndarray,
    malformed: np.ndarray,
    chosen: np.ndarray,
    *,
    jobs: int = 1,
) -> tuple[int, int, list[dict[str, Any]]]:
    """Re-decide the trials ``chosen`` (indices into ``pairs``) by real ``decode``.

    Returns ``(checked, disagreements, examples)``; an example names the trial (enrolled
    identity index, probe row) and both decisions — never a sample or a secret.
    """
    if chosen.size == 0:
        return 0, 0, []
    e, q = pairs[0, chosen], pairs[1, chosen]
    if jobs > 1 and chosen.size >= 64:
        parts = np.array_split(np.arange(chosen.size), jobs * 4)
        # Each worker gets only the identities and probes of its part, not the population.
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_real_decide, [(sketch, *_restrict(enrolled, probes, e[p], q[p])) for p in parts]))
        real_acc = np.concatenate([r[0] for r in results])
        real_bad = np.concatenate([r[1] for r in results])
    else:
        real_acc, real_bad = _real_decide((sketch, enrolled, probes, e, q))
    differ = (real_acc != accepted[chosen]) | (real_bad != malformed[chosen])
    examples = [
        {
            "enrolled_identity": int(e[k]),
            "probe_row": int(q[k]),
            "fast_accepts": bool(accepted[chosen[k]]),
            "decode_accepts": bool(real_acc[k]),
        }
        for k in np.flatnonzero(differ)[:5].tolist()
    ]
    return int(chosen.size), int(differ.sum()), examples


def crosscheck_with_verify(
    sketch: SecureSketch[Any, Any],
    enrolled: Enrolled,
    probes: Any,
    pairs: np.ndarray,
    accepted: np.ndarray,
    count: int,
    *,
    seed: int = 0,
    profile: str = "test",
) -> tuple[int, int]:
    """Re-decide ``count`` seeded trials with the real argon2 ``verify``; ``(agreed, checked)``.

    The stored record is built as :func:`sketchauth.enrolment.enrol` builds it (the same
    ``secret_message`` hashed with argon2id) around the helper that the evaluation decoded,
    so the check compares the two decision paths on identical helper data. Half of the checked
    trials are accepted ones when there are any, so both outcomes are exercised.
    """
    rng = np.random.default_rng(seed)
    ph = hasher(profile)
    yes, no = np.flatnonzero(accepted), np.flatnonzero(~accepted)
    half = min(yes.size, count // 2)
    chosen = np.concatenate(
        [rng.choice(yes, size=half, replace=False), rng.choice(no, size=min(no.size, count - half), replace=False)]
    )
    agreed = 0
    for k in chosen.tolist():
        e, q = int(pairs[0, k]), int(pairs[1, k])
        record = Enrolment(
            helper=enrolled.helpers[e],
            secret_hash=ph.hash(secret_message(sketch, enrolled.secrets[e])),
            report=sketch.report(),
        )
        try:
            outcome = verify(sketch, record, probes[q], password_hasher=ph)
        except SampleError:
            outcome = False
        agreed += int(outcome == bool(accepted[k]))
    return agreed, int(chosen.size)
