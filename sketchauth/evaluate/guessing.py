"""Key-guessing simulation against format-preserving mixing (Fang's thesis, ch. 7, "redundancy leaks the key").

A mixed sketch ``Q = S + pad(K)`` hides the key only if no key's inverse stands out. The
attacker here sees ``Q``, inverts it under every candidate key of ``L`` bits and picks the key
whose inverse is the *most likely* sketch, the sketch distribution being estimated from many
fresh encodings (ties broken uniformly at random). Against a sketch whose values are uniform
the success rate is the baseline ``2^−L``; a sketch with a skewed distribution (the chaff
family, :class:`~sketchauth.sketches.chaff.ChaffPointSketch`) gives the attacker an edge.

Mixing functions simulated (``mixing=``):

* ``"pad"``: the library's keyed pad with a fresh nonce per trial, SHAKE-256 modelled as a random
  oracle: every (trial, key) pad is an independent uniform group element. This is what
  :func:`sketchauth.mixing.mix_helper` computes, in distribution.
* ``"shake"``: the real :func:`sketchauth.mixing.derive_pad` with a nonce and keys from the
  seeded generator (one hash per trial and key: slow; for cross-checking the model).
* ``"shift"``: the naive format-preserving mix ``Q = S + K`` (the key itself as the pad on every
  symbol), no expansion.

Everything random in the simulation comes from ``numpy.random.default_rng(seed)``: secrets
uniform over the listed secrets, each sketch drawn from its exact distribution
(``randomness_space``), keys and pads. The work is vectorised over chunks of trials.

:func:`count_chaff_sketches` counts the possible chaff sketches (by the chaff sketch's own
dynamic programme; :func:`chaff_sketches` lists them one by one, the reference).
:func:`exact_pad_success` is the random-oracle attacker's success in exact rational arithmetic,
for a sketch distribution given as exact probabilities (e.g.
:meth:`~sketchauth.sketches.chaff.ChaffPointSketch.sketch_distribution`).

Example::

    >>> from sketchauth.sketches.chaff import ChaffPointSketch
    >>> r = guessing_experiment(ChaffPointSketch(12, 2), key_bits=3, trials=2000, seed=1)
    >>> r.baseline
    0.125
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any, cast

import numpy as np

from sketchauth.errors import ParameterError
from sketchauth.evaluate.rates import wilson_interval
from sketchauth.mixing import derive_pad, mix_symbols, unmix_symbols
from sketchauth.sketches.base import SecureSketch, SymbolSpace
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.params import check_int

__all__ = [
    "MAX_EXACT_KEY_BITS",
    "MIXINGS",
    "GuessingResult",
    "chaff_sketches",
    "count_chaff_sketches",
    "default_secrets",
    "exact_pad_success",
    "expected_success",
    "guessing_experiment",
]

MIXINGS = ("pad", "shake", "shift")
#: Largest group of sketch values the simulation indexes by one integer.
MAX_GROUP_BITS = 62
#: Largest number of secrets enumerated by :func:`default_secrets`.
MAX_DEFAULT_SECRETS = 4096
_CHUNK_CELLS = 1 << 20
#: :func:`exact_pad_success` raises rationals to the power ``2^key_bits``: keep that moderate.
MAX_EXACT_KEY_BITS = 10


def chaff_sketches(universe: int, min_distance: int) -> Iterator[tuple[int, ...]]:
    """Every maximal set of points of ``[0, universe)`` pairwise more than ``min_distance`` apart.

    Depth-first over sorted point lists: a point is added at each free position after the last
    one; a list is yielded when no position of the universe is free.
    """
    n = check_int("universe", universe, 2, 64)
    d = check_int("min_distance", min_distance, 1, n - 1)

    def extend(points: tuple[int, ...]) -> Iterator[tuple[int, ...]]:
        last = points[-1] if points else -d - 1
        nxt = [p for p in range(last + d + 1, n)]
        # Maximal: nothing fits anywhere (positions before `last` are covered by construction
        # only if every gap is small, so check the whole universe).
        if all(any(abs(x - p) <= d for p in points) for x in range(n)):
            yield points
            return
        for p in nxt:
            candidate = (*points, p)
            # Prune: a gap that leaves a free position can never be filled later.
            if len(candidate) > 1 and candidate[-1] - candidate[-2] > 2 * d + 1:
                break
            if len(candidate) == 1 and p > d:
                break
            yield from extend(candidate)

    yield from extend(())


def count_chaff_sketches(universe: int, min_distance: int) -> int:
    """The exact number of possible chaff sketches (maximal point sets), by dynamic programming.

    The count of :class:`~sketchauth.sketches.chaff.ChaffPointSketch` (gaps in ``[d+1, 2d+1]``,
    first point ``≤ d``, last ``≥ n−1−d``), equal to the length of :func:`chaff_sketches`.
    """
    return ChaffPointSketch(universe, min_distance).sketch_count


def exact_pad_success(probabilities: Iterable[Fraction], group_order: int, key_bits: int) -> Fraction:
    """Exact success of the most-likely-inverse key guesser against random-oracle pads.

    ``probabilities`` are the (exact) probabilities of the sketch values that occur; the other
    ``group_order − len(probabilities)`` group elements have probability 0. With ``K = 2^key_bits``
    keys, the ``K − 1`` wrong keys' inverses are independent and uniform over the group, so for a
    true sketch ``s`` with ``a`` the share of the group strictly less likely than ``s`` and ``e``
    the share exactly as likely, uniform tie-breaking wins with probability
    ``((a + e)^K − a^K) / (K·e)`` (the closed form of :func:`expected_success`, here in
    :class:`~fractions.Fraction` arithmetic). The baseline is ``1/K``.

    >>> exact_pad_success([Fraction(1, 2), Fraction(1, 2)], 2, 1)   # uniform sketch: no edge
    Fraction(1, 2)
    """
    key_bits = check_int("key_bits", key_bits, 1, MAX_EXACT_KEY_BITS)
    values = [Fraction(p) for p in probabilities]
    if not values or any(p <= 0 for p in values) or sum(values) != 1:
        raise ParameterError("probabilities must be positive and sum to exactly 1")
    order = check_int("group_order", group_order, len(values))
    keys = 1 << key_bits
    below = order - len(values)  # never-occurring elements: less likely than any sketch
    success = Fraction(0)
    for value, count in sorted(Counter(values).items()):
        a, e = Fraction(below, order), Fraction(count, order)
        success += value * count * ((a + e) ** keys - a**keys) / (keys * e)
        below += count
    return success


@dataclass(frozen=True, slots=True)
class GuessingResult:
    """Outcome of :func:`guessing_experiment` (``to_dict`` is JSON-ready)."""

    scheme: str
    params: dict[str, Any]
    mixing: str
    key_bits: int
    trials: int
    seed: int
    estimate_encodings: int
    successes: int
    success_rate: float
    baseline: float
    advantage: float
    ci95: tuple[float, float]
    expected_success: float
    distinct_sketches: int
    group_bits: float
    sketch_min_entropy: float

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["ci95"] = list(self.ci95)
        return out


def default_secrets(sketch: SecureSketch[Any, Any]) -> list[Any]:
    """Every secret of a tiny sketch: the chaff family's own list, or all interval vectors."""
    if isinstance(sketch, ChaffPointSketch):
        secrets: list[Any] = list(sketch.secret_space())
    elif isinstance(sketch, IntervalSketch):
        n, features = sketch.n, sketch.features
        if n**features > MAX_DEFAULT_SECRETS:
            raise ParameterError(f"{n}^{features} secrets: pass `secrets` explicitly")
        secrets = [np.array(v) for v in itertools.product(range(n), repeat=features)]
    else:
        raise ParameterError(f"no default secret list for {sketch.scheme_name}: pass `secrets`")
    if len(secrets) > MAX_DEFAULT_SECRETS:
        raise ParameterError(f"{len(secrets)} secrets is too many: pass `secrets` explicitly")
    return secrets


@dataclass(frozen=True, slots=True)
class _Group:
    """The symbol group as a mixed-radix integer: sketch id ↔ digits."""

    kind: str
    radices: np.ndarray  # uint64, one per symbol

    @classmethod
    def of(cls, space: SymbolSpace, count: int) -> _Group:
        if space.kind == "xor":
            radices = np.full(count, 1 << space.bits, dtype=np.uint64) if space.bits < 64 else None
            bits = float(space.bits * count)
        else:
            radices = np.asarray(space.moduli, dtype=np.uint64)
            bits = float(np.log2(radices.astype(float)).sum())
        if radices is None or bits > MAX_GROUP_BITS:
            raise ParameterError(f"the sketch's group has {bits:.1f} bits; the simulation needs <= {MAX_GROUP_BITS}")
        return cls(space.kind, radices)

    @property
    def bits(self) -> float:
        return float(np.log2(self.radices.astype(float)).sum())

    def to_id(self, digits: np.ndarray) -> np.ndarray:
        weights = np.concatenate(([1], np.cumprod(self.radices[:-1]))).astype(np.uint64)
        return cast("np.ndarray", (digits * weights).sum(axis=-1, dtype=np.uint64))

    def to_digits(self, ids: np.ndarray) -> np.ndarray:
        out = np.empty((*ids.shape, self.radices.size), dtype=np.uint64)
        rest = ids.astype(np.uint64)
        for i, r in enumerate(self.radices):  # one pass per symbol, vectorised over trials
            out[..., i] = rest % r
            rest = rest // r
        return out

    def shifts(self, keys: int) -> np.ndarray:
        """The naive ``"shift"`` pads ``(keys, symbols)``: key ``k`` reduced into every symbol.

        For xor groups the radices are powers of two, so ``k mod 2^bits`` is the low bits of ``k``.
        """
        return cast("np.ndarray", np.arange(keys, dtype=np.uint64)[:, None] % self.radices)

    @property
    def space(self) -> SymbolSpace:
        if self.kind == "mod":
            return SymbolSpace("mod", moduli=self.radices)
        return SymbolSpace("xor", bits=int(self.radices[0]).bit_length() - 1)

    def unmix(self, q: np.ndarray, pad: np.ndarray) -> np.ndarray:
        return unmix_symbols(q, pad, self.space)

    def mix(self, s: np.ndarray, pad: np.ndarray) -> np.ndarray:
        """The library's own format-preserving mix, broadcast over leading (trial, key) axes."""
        return mix_symbols(s, pad, self.space)


@dataclass(frozen=True, slots=True)
class _SketchTable:
    """Every (secret, sketch id, probability), with per-secret CDFs laid end to end."""

    ids: np.ndarray  # sketch id of each row
    probs: np.ndarray  # probability of each row (secrets uniform)
    cdf: np.ndarray  # secret index + cumulative probability within the secret
    group: _Group
    count: int  # number of secrets

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        secret = rng.integers(0, self.count, size=size)
        rows = np.searchsorted(self.cdf, secret + rng.random(size), side="right")
        return self.ids[np.minimum(rows, self.ids.size - 1)]


def _table(sketch: SecureSketch[Any, Any], secrets: Sequence[Any]) -> _SketchTable:
    ids, cdf, rows = [], [], []
    group = None
    for index, secret in enumerate(secrets):
        space = list(sketch.randomness_space(secret))
        probs = np.array([p for _, p in space], dtype=float)
        cum = np.cumsum(probs / probs.sum())
        cum[-1] = 1.0
        rows.extend((probs / probs.sum() / len(secrets)).tolist())
        for randomness, _ in space:
            symbols, sym_space = sketch.symbols(sketch.payload(sketch.encode_with(secret, randomness)))
            group = group or _Group.of(sym_space, symbols.shape[0])
            ids.append(int(group.to_id(symbols.astype(np.uint64))))
        # Within secret `index` the CDF runs over (index, index + 1]; a uniform draw u in [0, 1)
        # shifted by the index lands in exactly one row of that secret.
        cdf.extend([*(index + cum[:-1]).tolist(), index + 1.0 - 1e-12])
    if group is None:
        raise ParameterError("no secrets to simulate")
    return _SketchTable(np.array(ids, dtype=np.uint64), np.array(rows), np.array(cdf), group, len(secrets))


def _exact_distribution(table: _SketchTable) -> tuple[np.ndarray, np.ndarray]:
    ids, inverse = np.unique(table.ids, return_inverse=True)
    return ids, np.bincount(inverse, weights=table.probs)


def expected_success(table: _SketchTable, mixing: str, keys: int) -> float:
    """Success of the same attacker knowing the sketch distribution exactly (no estimation).

    Pads from a random oracle (``"pad"``, ``"shake"``): the wrong keys' inverses are independent
    and uniform over the group of order ``N``. For a true sketch ``s`` let ``a`` and ``e`` be the
    shares of the group that are strictly less likely than ``s`` and exactly as likely; with
    uniform tie-breaking the attacker wins with probability
    ``Σ_j C(K−1, j) e^j a^(K−1−j) / (j+1) = ((a + e)^K − a^K) / (K·e)``. For ``"shift"`` every
    (sketch, key) pair is enumerated.
    """
    ids, p = _exact_distribution(table)
    if mixing == "shift":
        return _expected_shift_success(table.group, ids, p, keys)
    order = float(np.prod(table.group.radices.astype(float)))
    values, counts = np.unique(p, return_counts=True)
    below = np.concatenate(([0.0], np.cumsum(counts)[:-1]))
    # Group elements that never occur have probability 0: they are below every sketch.
    zeros = order - ids.size
    a = (below + zeros) / order
    e = counts / order
    win = ((a + e) ** keys - a**keys) / (keys * e)
    return float(np.sum(values * counts * win))


def _expected_shift_success(group: _Group, ids: np.ndarray, p: np.ndarray, keys: int) -> float:
    shift = group.shifts(keys)
    digits = group.to_digits(ids)  # (S, nsym)
    q = group.mix(digits[:, None, :], shift[None, :, :])  # (S, K, nsym)
    inv = group.to_id(group.unmix(q[:, :, None, :], shift[None, None, :, :]))  # (S, K, K)
    pos = np.minimum(np.searchsorted(ids, inv), ids.size - 1)
    score = np.where(ids[pos] == inv, p[pos], 0.0)
    top = score.max(axis=2)
    ties = (score == top[..., None]).sum(axis=2)
    truth = p[:, None]
    win = np.where(truth >= top, 1.0 / ties, 0.0)  # the true key's inverse is s itself
    return float(np.sum(p[:, None] * win) / keys)


def _pads(mixing: str, rng: np.random.Generator, group: _Group, trials: int, keys: int) -> np.ndarray:
    """Pads of shape (trials, keys, symbols) for every trial and candidate key."""
    nsym = group.radices.size
    if mixing == "pad":
        return rng.integers(0, group.radices, size=(trials, keys, nsym), dtype=np.uint64)
    if mixing == "shift":
        return np.broadcast_to(group.shifts(keys), (trials, keys, nsym))
    space = group.space
    width = max(1, (keys.bit_length() + 7) // 8)
    out = np.empty((trials, keys, nsym), dtype=np.uint64)
    for t in range(trials):
        nonce = rng.bytes(16)
        for key in range(keys):
            out[t, key] = derive_pad(key.to_bytes(width, "big"), nonce, space, nsym)
    return out


#: The 97.5% standard-normal quantile: the 95% Wilson interval of the success rate.
_Z95 = 1.959963984540054


def guessing_experiment(
    sketch: SecureSketch[Any, Any],
    key_bits: int,
    trials: int,
    seed: int,
    *,
    secrets: Sequence[Any] | None = None,
    estimate_encodings: int | None = None,
    mixing: str = "pad",
    progress: bool = False,
) -> GuessingResult:
    """Success rate of the most-likely-inverse key guesser, next to the baseline ``2^−key_bits``.

    ``secrets`` (default :func:`default_secrets`) are drawn uniformly; ``estimate_encodings``
    fresh encodings (default ``max(10·trials, 10^5)``) estimate the sketch distribution the
    attacker uses. ``progress`` shows a tqdm bar on stderr.
    """
    key_bits = check_int("key_bits", key_bits, 1, 16)
    trials = check_int("trials", trials, 1, 10**8)
    seed = check_int("seed", seed, 0)
    if mixing not in MIXINGS:
        raise ParameterError(f"mixing must be one of {', '.join(MIXINGS)}")
    estimate = check_int("estimate_encodings", estimate_encodings or max(10 * trials, 100_000), 1, 10**9)
    table = _table(sketch, default_secrets(sketch) if secrets is None else list(secrets))
    rng = np.random.default_rng(seed)
    observed, counts = np.unique(table.sample(rng, estimate), return_counts=True)
    freq = counts / estimate
    keys = 1 << key_bits
    chunk = max(1, _CHUNK_CELLS // (keys * table.group.radices.size))
    successes = 0
    # Imported here for start-up cost: tqdm loads importlib.metadata (~0.1 s), and only progress bars need it.
    from tqdm import tqdm

    with tqdm(total=trials, disable=not progress, unit="trial", desc="guessing") as bar:
        for start in range(0, trials, chunk):
            size = min(chunk, trials - start)
            successes += _attack_chunk(table, observed, freq, mixing, rng, size, keys)
            bar.update(size)
    rate = successes / trials
    baseline = 2.0**-key_bits
    return GuessingResult(
        scheme=sketch.scheme_name,
        params=sketch.params(),
        mixing=mixing,
        key_bits=key_bits,
        trials=trials,
        seed=seed,
        estimate_encodings=estimate,
        successes=successes,
        success_rate=rate,
        baseline=baseline,
        advantage=rate / baseline,
        ci95=wilson_interval(successes, trials, _Z95),
        expected_success=expected_success(table, mixing, keys),
        distinct_sketches=int(observed.size),
        group_bits=table.group.bits,
        sketch_min_entropy=float(-np.log2(freq.max())),
    )


def _attack_chunk(
    table: _SketchTable,
    observed: np.ndarray,
    freq: np.ndarray,
    mixing: str,
    rng: np.random.Generator,
    size: int,
    keys: int,
) -> int:
    group = table.group
    sketch = group.to_digits(table.sample(rng, size))  # (size, nsym)
    true_key = rng.integers(0, keys, size=size)
    pads = _pads(mixing, rng, group, size, keys)  # (size, keys, nsym)
    q = group.mix(sketch, pads[np.arange(size), true_key])  # what the attacker sees
    inverses = group.to_id(group.unmix(q[:, None, :], pads))  # (size, keys)
    pos = np.minimum(np.searchsorted(observed, inverses), observed.size - 1)
    score = np.where(observed[pos] == inverses, freq[pos], 0.0)
    best = score == score.max(axis=1, keepdims=True)
    tiebreak = np.where(best, rng.random(best.shape), -1.0)
    guess = tiebreak.argmax(axis=1)
    return int(np.count_nonzero(guess == true_key))
