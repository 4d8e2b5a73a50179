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
* the **fuzzy vaults** are decided by their real batch decoders
  (:func:`decide_batch`), which are already the scheme.

The array deciders (:data:`VECTORISED`, or any decider with a true ``vectorised`` attribute: numpy
releases the GIL) run on threads, the others on processes (:func:`decide_chunked`).

:func:`crosscheck_by_decoding` re-decides a seeded sample of trials by real ``decode`` and
compares: every trial when a run has at most :data:`CROSSCHECK_MIN` comparisons, otherwise at
least that many over the sweep, a third of them *boundary* trials (accepted at some setting and
rejected at another, where an off-by-one rule would show), a third accepted, a third at random;
:func:`crosscheck_with_verify` re-runs trials through the real argon2 ``enrol``/``verify``.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from typing import Any

import numpy as np

from sketchauth.enrolment import Enrolment, hasher, secret_message, verify
from sketchauth.errors import DecodeError, SampleError
from sketchauth.evaluate.trials import Enrolled
from sketchauth.sketches.angular import AngularSketch, probe_matrix
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SecureSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch

__all__ = [
    "ASYMMETRIC_RULES",
    "CROSSCHECK_MIN",
    "INTERVAL_CHUNK",
    "VECTORISED",
    "AcceptanceRule",
    "DecideFn",
    "crosscheck_by_decoding",
    "crosscheck_sample",
    "crosscheck_with_verify",
    "decide_angular",
    "decide_asymmetric",
    "decide_batch",
    "decide_by_decoding",
    "decide_chunked",
    "decide_code_offset",
    "decide_exact",
    "decide_interval",
    "decide_interval_exact",
    "decide_pinsketch",
    "register_asymmetric_rule",
]

#: ``decide(sketch, enrolled, probes, enrolled_index, probe_index) -> (accepted, malformed)``.
DecideFn = Callable[[SecureSketch, Enrolled, Sequence[Any], np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]

#: Comparisons re-decided by real ``decode`` per run (all of them when a run has fewer).
CROSSCHECK_MIN = 10_000
#: Pairs per chunk of the array deciders (bounded memory).
CHUNK = 65_536
#: Pairs per work item of :func:`decide_chunked` for an array decider is four times this.
INTERVAL_CHUNK = 16_384
#: Largest PinSketch universe decided on bitmaps (bits per set).
MAX_BITMAP_UNIVERSE = 1 << 16

#: ``rule(delta, v) -> accepted`` per feature, ``delta = d' − b`` (int arrays, broadcasting).
AcceptanceRule = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _s1_rule(delta: np.ndarray, v: np.ndarray) -> np.ndarray:
    return np.abs(delta) < v


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
    sketch: SecureSketch,
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
    sketch: SecureSketch,
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


# -- helpers ---------------------------------------------------------------------------------------
def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)


def _levels(
    sketch: IntervalSketch | AsymmetricIntervalSketch, probes: Any, used: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Levels of the probes ``used`` by the sketch's own quantiser, or ``None`` if not a matrix."""
    rows = probes[used] if isinstance(probes, np.ndarray) else [probes[i] for i in used.tolist()]
    try:
        return sketch.quantiser.levels_many(rows, sketch.features)
    except (SampleError, ValueError):
        return None


def _box(
    diff_of: Callable[[np.ndarray, np.ndarray], np.ndarray],
    rule: Callable[[np.ndarray, np.ndarray], np.ndarray],
    e: np.ndarray,
    q: np.ndarray,
) -> np.ndarray:
    accepted = np.empty(e.size, dtype=bool)
    for start in range(0, e.size, CHUNK):
        ee, qq = e[start : start + CHUNK], q[start : start + CHUNK]
        accepted[start : start + ee.size] = rule(diff_of(ee, qq), ee).all(axis=1)
    return accepted


# -- interval ---------------------------------------------------------------------------------------
def decide_interval_exact(
    sketch: SecureSketch, enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Interval sketch: accept ⇔ ``|d'_j − b_j| < v_j`` for every feature (module docstring).

    Costs one subtraction, one absolute value and one comparison per feature and pair: about a
    plain L∞ comparison of the same arrays (``benchmarks/bench_deciders.py``). Another
    scheme's sketch is decided by its real batch decoder.
    """
    if len(enrolled_index) == 0:
        return _empty()
    if not isinstance(sketch, IntervalSketch):
        return decide_batch(sketch, enrolled, probes, enrolled_index, probe_index)
    used_q, local_q = np.unique(probe_index, return_inverse=True)
    got = _levels(sketch, probes, used_q)
    if got is None:
        return decide_batch(sketch, enrolled, probes, enrolled_index, probe_index)
    levels, refused = got
    used_e, local_e = np.unique(enrolled_index, return_inverse=True)
    b = np.stack([np.asarray(enrolled.secrets[i], dtype=np.int64) for i in used_e.tolist()])
    v = np.asarray(sketch.v, dtype=np.int64)
    moduli = 2 * v - 1
    stored = np.stack(
        [sketch.symbols(sketch.payload(enrolled.helpers[i]))[0].astype(np.int64) for i in used_e.tolist()]
    )
    consistent = np.all(stored == b % moduli, axis=1)  # S ≡ b (mod 2v − 1), once per identity
    span = max(int(sketch.n), int(np.abs(levels).max(initial=0))) * 2 + 1
    dtype = np.int16 if span < 2**15 else np.int32 if span < 2**31 else np.int64
    levels, b, v = levels.astype(dtype), b.astype(dtype), v.astype(dtype)
    accepted = _box(
        lambda ee, qq: np.abs(levels[qq] - b[ee]),
        lambda diff, ee: diff < v,
        local_e,
        local_q,
    )
    malformed = refused[local_q]
    accepted &= ~malformed
    odd = ~consistent[local_e]
    if odd.any():
        redo = decide_by_real(sketch, enrolled, probes, enrolled_index[odd], probe_index[odd])
        accepted[odd], malformed[odd] = redo
    return accepted, malformed


#: The interval adapter's decider (the exact rule; name kept for callers and docs).
decide_interval = decide_interval_exact


def decide_by_real(
    sketch: SecureSketch, enrolled: Enrolled, probes: Any, e: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    return decide_by_decoding(sketch, enrolled, probes, e, q)


# -- asymmetric interval -----------------------------------------------------------------------------
def decide_asymmetric(
    sketch: AsymmetricIntervalSketch,
    enrolled: Enrolled,
    probes: Any,
    enrolled_index: np.ndarray,
    probe_index: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Asymmetric interval sketch: the registered rule of its construction on ``Δ = d' − b``."""
    if len(enrolled_index) == 0:
        return _empty()
    rule = ASYMMETRIC_RULES.get(sketch.scheme)
    used_q, local_q = np.unique(probe_index, return_inverse=True)
    got = None if rule is None else _levels(sketch, probes, used_q)
    if rule is None or got is None:
        return decide_by_real(sketch, enrolled, probes, enrolled_index, probe_index)
    levels, refused = got
    used_e, local_e = np.unique(enrolled_index, return_inverse=True)
    b = np.stack([np.asarray(enrolled.secrets[i][0], dtype=np.int64) for i in used_e.tolist()])
    v = np.stack([np.asarray(enrolled.secrets[i][1], dtype=np.int64) for i in used_e.tolist()])
    accepted = _box(lambda ee, qq: levels[qq] - b[ee], lambda delta, ee: rule(delta, v[ee]), local_e, local_q)
    malformed = refused[local_q]
    return accepted & ~malformed, malformed


# -- code-offset --------------------------------------------------------------------------------------
def _byte_rows(rows: Sequence[Any], n: int) -> np.ndarray | None:
    if not all(isinstance(r, (bytes, bytearray)) and len(r) == n for r in rows):
        return None
    return np.frombuffer(b"".join(bytes(r) for r in rows), dtype=np.uint8).reshape(len(rows), n)


def decide_code_offset(
    sketch: CodeOffsetSketch, enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Code-offset: accept ⇔ at most ``t`` bytes of the probe differ from the enrolled secret."""
    if len(enrolled_index) == 0:
        return _empty()
    n, t = sketch.n, sketch.t
    used_q, local_q = np.unique(probe_index, return_inverse=True)
    p = _byte_rows([probes[i] for i in used_q.tolist()], n)
    used_e, local_e = np.unique(enrolled_index, return_inverse=True)
    s = _byte_rows([enrolled.secrets[i] for i in used_e.tolist()], n)
    if p is None or s is None:
        return decide_by_real(sketch, enrolled, probes, enrolled_index, probe_index)
    accepted = np.empty(enrolled_index.size, dtype=bool)
    for start in range(0, accepted.size, CHUNK):
        ee, qq = local_e[start : start + CHUNK], local_q[start : start + CHUNK]
        accepted[start : start + ee.size] = np.count_nonzero(p[qq] != s[ee], axis=1) <= t
    return accepted, np.zeros(accepted.size, dtype=bool)


# -- PinSketch ---------------------------------------------------------------------------------------
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


def _popcount_rows(words: np.ndarray) -> np.ndarray:
    """Set bits per row of a uint64 matrix (``np.bitwise_count`` on numpy ≥ 2, a byte table before)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(words).sum(axis=1, dtype=np.int64)
    return _POPCOUNT[words.view(np.uint8)].sum(axis=1, dtype=np.int64)


def decide_pinsketch(
    sketch: PinSketch, enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """PinSketch: accept ⇔ ``|A Δ B| ≤ t`` (module docstring: exact, spurious sets included)."""
    if len(enrolled_index) == 0:
        return _empty()
    universe = 1 << sketch.m
    if universe > MAX_BITMAP_UNIVERSE:
        return decide_batch(sketch, enrolled, probes, enrolled_index, probe_index)
    used_q, local_q = np.unique(probe_index, return_inverse=True)
    p = _bitmaps([probes[i] for i in used_q.tolist()], universe)
    used_e, local_e = np.unique(enrolled_index, return_inverse=True)
    s = _bitmaps([enrolled.secrets[i] for i in used_e.tolist()], universe)
    if p is None or s is None:
        return decide_batch(sketch, enrolled, probes, enrolled_index, probe_index)
    t = sketch.t
    accepted = np.empty(enrolled_index.size, dtype=bool)
    step = max(1, CHUNK * 32 // max(1, p.shape[1]))
    for start in range(0, accepted.size, step):
        ee, qq = local_e[start : start + step], local_q[start : start + step]
        accepted[start : start + ee.size] = _popcount_rows(p[qq] ^ s[ee]) <= t
    return accepted, np.zeros(accepted.size, dtype=bool)


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
    if sketch.min_cos > 0:
        total = (y[:, support] * c[support]).sum(axis=1)
        lhs = total * total
        rhs = sketch.min_cos**2 * sketch.alpha * float(1 << 28) * np.einsum("ij,ij->i", probes, probes)
        close = (margin > 0) & (np.abs(lhs - rhs) <= ANGLE_BAND * rhs)
        angle_ok = lhs >= rhs
        for k in np.flatnonzero(close).tolist():
            angle_ok[k] = sketch.angle_accepts(float(total[k]), probes[k])
        margin = np.where(angle_ok, margin, -np.inf)
    return margin


def decide_angular(
    sketch: AngularSketch, enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Angular sketch: the exact margin rule (module docstring), one matrix product per identity."""
    if len(enrolled_index) == 0:
        return _empty()
    used_q, local_q = np.unique(probe_index, return_inverse=True)
    rows = probes[used_q] if isinstance(probes, np.ndarray) else [probes[i] for i in used_q.tolist()]
    quantised, refused = probe_matrix(rows, sketch.dimension)
    accepted = np.zeros(enrolled_index.size, dtype=bool)
    for e in np.unique(enrolled_index).tolist():
        pairs = np.flatnonzero(enrolled_index == e)
        matrix = sketch.matrix(enrolled.helpers[e])
        margin = angular_scores(sketch, matrix, enrolled.secrets[e], quantised[local_q[pairs]])
        accepted[pairs] = margin > 0
    malformed = refused[local_q]
    return accepted & ~malformed, malformed


def decide_exact(
    sketch: SecureSketch, enrolled: Enrolled, probes: Any, enrolled_index: np.ndarray, probe_index: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The scheme's exact array decider, or its real batch decoder when it has none."""
    if isinstance(sketch, AngularSketch):
        return decide_angular(sketch, enrolled, probes, enrolled_index, probe_index)
    if isinstance(sketch, IntervalSketch):
        return decide_interval_exact(sketch, enrolled, probes, enrolled_index, probe_index)
    if isinstance(sketch, AsymmetricIntervalSketch):
        return decide_asymmetric(sketch, enrolled, probes, enrolled_index, probe_index)
    if isinstance(sketch, CodeOffsetSketch):
        return decide_code_offset(sketch, enrolled, probes, enrolled_index, probe_index)
    if isinstance(sketch, PinSketch):
        return decide_pinsketch(sketch, enrolled, probes, enrolled_index, probe_index)
    return decide_batch(sketch, enrolled, probes, enrolled_index, probe_index)


#: The array deciders (numpy releases the GIL): :func:`decide_chunked` runs them on threads, as
#: it does any decider with a true ``vectorised`` attribute; the others run on processes.
VECTORISED: frozenset[Callable[..., Any]] = frozenset({decide_interval_exact, decide_exact, decide_angular})


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


def _real_decide(args: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    return decide_by_decoding(*args)


def crosscheck_by_decoding(
    sketch: SecureSketch,
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
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            results = list(pool.map(_real_decide, [(sketch, enrolled, probes, e[p], q[p]) for p in parts]))
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
    sketch: SecureSketch,
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


# -- running a decider over many pairs ------------------------------------------------------------------
def decide_chunked(
    decide: DecideFn,
    sketch: SecureSketch,
    enrolled: Enrolled,
    probes: Any,
    pairs: np.ndarray,
    *,
    jobs: int,
    chunk: int,
    progress: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``decide`` over chunks of ``pairs`` on ``jobs`` workers, calling ``progress.update(n)``."""
    chunks = [pairs[:, i : i + chunk] for i in range(0, pairs.shape[1], chunk)]
    results: list[tuple[np.ndarray, np.ndarray]] = []
    if jobs <= 1 or len(chunks) <= 1:
        for c in chunks:
            results.append(decide(sketch, enrolled, probes, c[0], c[1]))
            progress.update(c.shape[1])
    else:
        # Array deciders release the GIL inside numpy, so threads suffice; decoding in Python
        # (reedsolo, field arithmetic) needs processes.
        pool_type: type[ThreadPoolExecutor] | type[ProcessPoolExecutor] = (
            ThreadPoolExecutor if decide in VECTORISED or getattr(decide, "vectorised", False) else ProcessPoolExecutor
        )
        with pool_type(max_workers=jobs) as pool:
            futures = [pool.submit(decide, sketch, enrolled, *_probe_subset(probes, c, pool_type)) for c in chunks]
            for c, fut in zip(chunks, futures, strict=False):
                results.append(fut.result())
                progress.update(c.shape[1])
    if not results:
        return _empty()
    return np.concatenate([r[0] for r in results]), np.concatenate([r[1] for r in results])


def _probe_subset(probes: Any, pairs: np.ndarray, pool_type: type) -> tuple[Any, np.ndarray, np.ndarray]:
    """The probes a chunk needs, re-indexed: processes get only those, not the whole data set."""
    if pool_type is ThreadPoolExecutor:
        return probes, pairs[0], pairs[1]
    used, local = np.unique(pairs[1], return_inverse=True)
    subset = probes[used] if isinstance(probes, np.ndarray) else [probes[q] for q in used.tolist()]
    return subset, pairs[0], local.astype(np.int64)
