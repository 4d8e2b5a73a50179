"""Which signal set could carry a code near the capacity floor at 128-D? Random-code ceilings per constellation.

The angular sketch maps a unit template onto a codeword of a spherical code by a Haar rotation;
a genuine probe at cosine ``c`` to the template is, in the rotated frame, ``y = c·w + √(1−c²)·z``
(``w`` the enrolled codeword, ``z`` uniform on the unit sphere orthogonal to it) — exactly, whatever
the code. Every codeword has unit norm, so decoding to the nearest codeword is decoding to the most
correlated one, and the enrolled word's correlation is ``c`` itself.

**Ceiling of a signal set.** A *signal set* is a per-block constellation: the codeword is cut into
``n/d`` blocks of ``d`` coordinates, each block a point of the constellation scaled to energy
``d/n``. A random code of ``2^k`` words drawn i.i.d. uniformly from the constellation's product
fails on a probe iff one of the ``2^k − 1`` others is at least as correlated with it:

    P(fail | y) = 1 − (1 − q(y))^(2^k − 1),   q(y) = P(Σ_j ⟨w'_j, y_j⟩ ≥ c),

``w'`` a uniform product word. The blocks are independent, so ``q`` is the upper tail of a sum of
``n/d`` independent bounded variables, computed by the Lugannani–Rice saddlepoint approximation
(Lugannani and Rice 1980; Butler, "Saddlepoint approximations", 2007, §1.2; its cumulant per block
exact: a finite mean of exponentials, or for a block uniform on ``S^(d−1)`` the Bessel moment
generating function ``Γ(d/2)(2/κ)^(d/2−1) I_(d/2−1)(κ)``). The random *spherical* code (one block of
``d = n``) is exact by the cap area (:func:`sketchauth.evaluate.capacity.log2_cap_fraction`, Shannon
1959), and the saddlepoint of the ``d = n`` block is checked against it (``sphere-d128``).

The random-code FNMR of a signal set is the ensemble average; structured codes over the set (polar,
PAC and other precoded binary codes on BPSK; multilevel codes on 8-PSK, …) are measured against it:
the best short codes known reach about the random-code level, not below it.

Signal sets (:data:`SIGNAL_SETS`): BPSK (every binary code, precoded or not), 8-PSK and 16-PSK on 64
complex pairs, the continuous ring (M-PSK as ``M → ∞``: the ceiling of every constant-envelope
2-D constellation), the 24 minimal vectors of D4 (``d = 4``), the 240 of E8 (``d = 8``), blocks
uniform on ``S^3``, ``S^7``, ``S^15`` (the ceiling of every constant-energy constellation of that
block size; ``d = 128`` is the random spherical code), and two sets of unequal energies whose words
are scaled onto the sphere: 16-APSK (4 + 12) per pair and 8-PAM per coordinate with Gaussian-like
(Maxwell–Boltzmann) probabilities — shaping, whose limit (Gaussian coordinates, normalised) *is* the
uniform sphere. For those, ML decoding compares ``⟨w', y⟩/‖w'‖`` and ``q = P(⟨w', y⟩ ≥ c·‖w'‖)`` is
estimated by importance sampling at the Chernoff tilt (:func:`log_tail_normalised`).

**The price of beating the ensemble** (:func:`gain_needed`): a structured code may beat its
ensemble's average; the ratio if it were better by 0.1–0.5 dB of signal-to-noise ratio says how much
it would have to be for the goal (:data:`GOAL`).

**Genuine probes.** (1) Real faces: the genuine (template, probe) pairs of the evaluation people of
lfw-dlib, exactly as ``bench_code_sizes`` measures the code alone (same split and transform,
3-capture enrolment, 1-capture attempts), each pair's cosine with :data:`DRAWS` seeded draws of
``z``; the floor on the same pairs; the ratio's spread by a bootstrap over people
(:data:`BOOTSTRAP`). (2) The synthetic model of ``bench_code_floor`` (genuine cosines normal with
spread 0.10 and mean set so that the floor FNMR is 3%, 10% or 20%), on a grid of cosines
(:data:`GRID`, :data:`GRID_DRAWS` draws each).

Run: ``SKETCHAUTH_EMBEDDINGS_DIR=... python -m benchmarks.bench_code_signal_sets``
→ ``benchmarks/results/bench_code_signal_sets.json``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import itertools
import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.special import erfcx, gammaln, ive
from scipy.stats import norm

from benchmarks.timing import provenance, write_result
from sketchauth.evaluate.capacity import capacity_cos, log2_cap_fraction
from sketchauth.sketches.polar import PolarCode, decode_batch, signs

SHIPPED = "shipped-polar-list128-crc6"
RESULT = Path(__file__).resolve().parent / "results" / "bench_code_signal_sets.json"
DIMENSION = 128
BITS = (32, 48, 64, 96)
#: Seeded draws of the probe's direction ``z`` per real genuine pair.
DRAWS = 16
#: Synthetic model: cosines on this grid, this many draws each.
GRID = np.round(np.arange(0.20, 0.8501, 0.01), 3)
GRID_DRAWS = 200
SPREAD = 0.10
FLOORS = (0.03, 0.10, 0.20)
#: Bootstrap resamples of the real set's people.
BOOTSTRAP = 1000
#: The goal: a code's FNMR at most this factor of the floor at every size it offers.
GOAL = 1.10
#: Signal-to-noise gains (dB) over its ensemble a code would need, and the sets :func:`gain_needed` prices.
GAINS_DB = (0.1, 0.25, 0.5)
GAIN_SETS = ("bpsk", "8psk", "e8-240")
#: Probes per vectorised saddlepoint solve (memory: probes × blocks × points floats).
CHUNK = 256
#: Importance samples per probe for the sets of unequal energies, and probes per batch.
IS_SAMPLES = 256
IS_CHUNK = 16


@dataclass(frozen=True)
class SignalSet:
    """A per-block constellation: ``points`` (unit vectors in ``R^d``), or ``None`` for the uniform ``S^(d−1)``."""

    name: str
    d: int
    points: np.ndarray | None
    note: str
    #: Symbol probabilities (uniform when ``None``); with points of unequal energy the word is normalised.
    weights: np.ndarray | None = None

    @property
    def normalised(self) -> bool:
        """Points of unequal energy: each word is scaled onto the unit sphere (ML: largest correlation over norm)."""
        return self.points is not None and bool(np.ptp(np.sum(self.points**2, axis=1)) > 1e-12)

    def probabilities(self) -> np.ndarray:
        assert self.points is not None
        m = len(self.points)
        return np.full(m, 1.0 / m) if self.weights is None else self.weights / self.weights.sum()

    def bits_per_dimension(self) -> float:
        """The largest rate a code over the set can have (bits per real coordinate)."""
        return math.inf if self.points is None else math.log2(len(self.points)) / self.d


def _psk(m: int) -> np.ndarray:
    phase = 2.0 * math.pi * np.arange(m) / m
    return np.stack([np.cos(phase), np.sin(phase)], axis=1)


def _d4() -> np.ndarray:
    """The 24 minimal vectors of D4: permutations of ``(±1, ±1, 0, 0)/√2``."""
    out = {
        tuple(v)
        for i, j in itertools.combinations(range(4), 2)
        for a, b in itertools.product((-1.0, 1.0), repeat=2)
        for v in [np.eye(4)[i] * a + np.eye(4)[j] * b]
    }
    return np.array(sorted(out)) / math.sqrt(2.0)


def _e8() -> np.ndarray:
    """The 240 minimal vectors of E8: the 112 of D8 and the 128 ``(±½)^8`` with an even number of minus signs."""
    d8 = {
        tuple(np.eye(8)[i] * a + np.eye(8)[j] * b)
        for i, j in itertools.combinations(range(8), 2)
        for a, b in itertools.product((-1.0, 1.0), repeat=2)
    }
    halves = {s for s in itertools.product((-0.5, 0.5), repeat=8) if sum(x < 0 for x in s) % 2 == 0}
    return np.array(sorted(d8 | halves)) / math.sqrt(2.0)


def _apsk(rings: tuple[tuple[int, float], ...]) -> np.ndarray:
    """Rings of ``(points, radius)``, each ring's phases offset by half a step, scaled to mean energy 1."""
    pts = np.concatenate([r * _psk(m) @ _rotation(math.pi / m) for m, r in rings])
    return pts / math.sqrt(np.mean(np.sum(pts**2, axis=1)))


def _rotation(angle: float) -> np.ndarray:
    return np.array([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]])


#: 8-PAM with Gaussian-like (Maxwell–Boltzmann) probabilities: shaping towards the sphere.
_PAM8 = np.arange(-7.0, 8.0, 2.0)[:, None]
_PAM8_MB = np.exp(-(_PAM8[:, 0] ** 2) / (2.0 * 3.0**2))


SIGNAL_SETS: tuple[SignalSet, ...] = (
    SignalSet("bpsk", 1, np.array([[1.0], [-1.0]]), "every binary code: polar, PAC and other precoded ones"),
    SignalSet("8psk", 2, _psk(8), "8-PSK on 64 complex pairs (multilevel polar, BICM)"),
    SignalSet("16psk", 2, _psk(16), "16-PSK on 64 complex pairs"),
    SignalSet("ring", 2, None, "uniform phase per pair: M-PSK as M grows, every constant-envelope 2-D set"),
    SignalSet("d4-24", 4, _d4(), "the 24 minimal vectors of D4 per 4-block"),
    SignalSet("e8-240", 8, _e8(), "the 240 minimal vectors of E8 per 8-block"),
    SignalSet("16apsk", 2, _apsk(((4, 1.0), (12, 2.85))), "16-APSK 4+12 (ring ratio 2.85) per pair, words normalised"),
    SignalSet(
        "8pam-shaped",
        1,
        _PAM8 / math.sqrt(float(np.sum(_PAM8_MB * _PAM8[:, 0] ** 2) / _PAM8_MB.sum())),
        "8-PAM per coordinate, Maxwell-Boltzmann probabilities (std 3 steps), words normalised",
        _PAM8_MB,
    ),
    SignalSet("sphere-d4", 4, None, "blocks uniform on S^3: every constant-energy 4-D set"),
    SignalSet("sphere-d8", 8, None, "blocks uniform on S^7: every constant-energy 8-D set"),
    SignalSet("sphere-d16", 16, None, "blocks uniform on S^15"),
    SignalSet("sphere-d128", 128, None, "one block: the random spherical code (saddlepoint; exact figure beside)"),
)


def random_words(s: SignalSet, count: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``count`` uniform unit codewords of the product set (blocks of energy ``d/n``)."""
    blocks = n // s.d
    if s.points is None:
        w = rng.standard_normal((count, blocks, s.d))
        w /= np.linalg.norm(w, axis=2, keepdims=True)
    else:
        w = s.points[rng.choice(len(s.points), size=(count, blocks), p=s.probabilities())]
    words = (w * math.sqrt(s.d / n)).reshape(count, n)
    return words / np.linalg.norm(words, axis=1, keepdims=True) if s.normalised else words


def probes(words: np.ndarray, cos: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``cos·w + sin·z``, ``z`` uniform on the unit sphere orthogonal to each unit word ``w`` (one cosine per row)."""
    z = rng.standard_normal(words.shape)  # its own generator: every signal set sees the same draws
    z -= np.sum(z * words, axis=1, keepdims=True) * words
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    c = cos[:, None]
    return c * words + np.sqrt(1.0 - c * c) * z


def _cumulants(s: SignalSet, x: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``K(θ)``, ``K'(θ)``, ``K''(θ)`` of the correlation sum per probe.

    ``x``: per probe and block, the correlations with each constellation point ``(P, B, M)``, or for a
    uniform block the norms ``(P, B)`` of ``√(d/n)·y_j``.
    """
    t = theta[:, None]
    if s.points is not None:
        z = t[:, :, None] * x
        top = z.max(axis=2, keepdims=True)
        e = np.exp(z - top)
        total = e.sum(axis=2)
        k = (np.log(total) + top[:, :, 0] - math.log(x.shape[2])).sum(axis=1)
        p = e / total[:, :, None]
        mean = (p * x).sum(axis=2)
        var = (p * x * x).sum(axis=2) - mean * mean
        return k, mean.sum(axis=1), np.maximum(var, 0.0).sum(axis=1)
    nu = s.d / 2.0 - 1.0
    kappa = np.maximum(t * x, 1e-12)
    i0, i1 = ive(nu, kappa), ive(nu + 1.0, kappa)
    k = (gammaln(nu + 1.0) + nu * np.log(2.0 / kappa) + np.log(i0) + kappa).sum(axis=1)
    a = i1 / i0
    slope = 1.0 - a * a - (2.0 * nu + 1.0) / kappa * a
    return k, (x * a).sum(axis=1), (x * x * slope).sum(axis=1)


def log_tail(s: SignalSet, y: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``ln q``: ``ln P(⟨w', y⟩ ≥ target)`` for ``w'`` uniform on the product set (Lugannani–Rice), per probe row."""
    n = y.shape[1]
    blocks = y.reshape(len(y), n // s.d, s.d) * math.sqrt(s.d / n)
    if s.points is not None:
        x = np.einsum("pbd,md->pbm", blocks, s.points)
        top = x.max(axis=2).sum(axis=1)
    else:
        x = np.linalg.norm(blocks, axis=2)
        top = x.sum(axis=1)
    out = np.full(len(y), math.log(0.5))
    out[target >= top * (1.0 - 1e-12)] = -math.inf
    live = (target > 0) & (target < top * (1.0 - 1e-12))
    if not live.any():
        return out
    xs, ts = x[live], target[live]
    lo, hi = np.zeros(ts.size), np.ones(ts.size)
    for _ in range(200):  # bracket θ: K'(hi) ≥ t
        _, slope, _ = _cumulants(s, xs, hi)
        low = slope < ts
        if not low.any():
            break
        lo = np.where(low, hi, lo)
        hi = np.where(low, hi * 2.0, hi)
    for _ in range(60):  # K' increases: bisection
        mid = 0.5 * (lo + hi)
        _, slope, _ = _cumulants(s, xs, mid)
        lo, hi = np.where(slope < ts, mid, lo), np.where(slope < ts, hi, mid)
    theta = 0.5 * (lo + hi)
    k, _, curvature = _cumulants(s, xs, theta)
    w = np.sqrt(np.maximum(2.0 * (theta * ts - k), 1e-300))
    u = theta * np.sqrt(np.maximum(curvature, 1e-300))
    mills = 0.5 * math.sqrt(2.0 * math.pi) * erfcx(w / math.sqrt(2.0))
    bracket = np.maximum(mills + 1.0 / u - 1.0 / w, 1e-300)
    out[live] = np.minimum(-0.5 * w * w - 0.5 * math.log(2.0 * math.pi) + np.log(bracket), math.log(0.5))
    return out


def _tilted(z: np.ndarray, log_p: np.ndarray, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per probe the cumulant ``K(θ)`` of ``Σ_j Z_j`` and the tilted symbol probabilities ``(P, B, M)``."""
    a = theta[:, None, None] * z + log_p
    top = a.max(axis=2, keepdims=True)
    e = np.exp(a - top)
    total = e.sum(axis=2, keepdims=True)
    return (np.log(total) + top)[:, :, 0].sum(axis=1), e / total


def log_tail_normalised(
    s: SignalSet, y: np.ndarray, target: np.ndarray, rng: np.random.Generator, samples: int
) -> np.ndarray:
    """``ln q`` for a set of unequal energies: ``q = P(X ≥ τ·√E)``, ``X = ⟨w', y⟩`` and ``E = ‖w'‖²`` of an
    i.i.d. word ``w'`` (blocks scaled by ``√(d/n)``), by importance sampling.

    Exponential tilting of each block by ``θ·(x − b·e)``: since ``√E ≤ (E/√E₀ + √E₀)/2``, the event
    lies in ``{X − b·E ≥ c₀}`` (``b = τ/(2√E₀)``, ``c₀ = τ√E₀/2``), whose Chernoff tilt ``θ`` (tilted
    mean ``c₀``) with ``E₀`` iterated to the tilted mean energy puts the sampler on the dominating
    point; the estimator ``mean(1{X ≥ τ√E}·e^(−θZ + K(θ)))`` is unbiased and each weight is at most
    the Chernoff bound.
    """
    n = y.shape[1]
    assert s.points is not None
    scale = math.sqrt(s.d / n)
    x = np.einsum("pbd,md->pbm", y.reshape(len(y), n // s.d, s.d) * scale, s.points)
    energy = np.sum(s.points**2, axis=1) * scale * scale
    log_p = np.log(s.probabilities())
    tau = target
    e0 = np.ones(len(y))
    theta = np.zeros(len(y))
    for _ in range(6):
        b, c0 = tau / (2.0 * np.sqrt(e0)), tau * np.sqrt(e0) / 2.0
        z = x - b[:, None, None] * energy
        top = z.max(axis=2).sum(axis=1)
        goal = np.minimum(c0, top * (1.0 - 1e-9))
        lo, hi = np.zeros(len(y)), np.ones(len(y))
        for _ in range(200):
            _, p = _tilted(z, log_p, hi)
            low = np.einsum("pbm,pbm->p", p, z) < goal
            if not low.any():
                break
            lo, hi = np.where(low, hi, lo), np.where(low, hi * 2.0, hi)
        for _ in range(50):
            mid = 0.5 * (lo + hi)
            _, p = _tilted(z, log_p, mid)
            below = np.einsum("pbm,pbm->p", p, z) < goal
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        theta = 0.5 * (lo + hi)
        _, p = _tilted(z, log_p, theta)
        e0 = np.einsum("pbm,m->p", p, energy)
    k, p = _tilted(z, log_p, theta)
    cum = np.cumsum(p, axis=2)
    cum[:, :, -1] = 1.0
    u = rng.random((len(y), samples, p.shape[1]))
    pick = (u[..., None] > cum[:, None, :, :]).sum(axis=3)  # (P, N, B)
    xs = np.take_along_axis(x[:, None, :, :], pick[..., None], axis=3)[..., 0].sum(axis=2)
    es = energy[pick].sum(axis=2)
    zs = np.take_along_axis(z[:, None, :, :], pick[..., None], axis=3)[..., 0].sum(axis=2)
    log_w = -theta[:, None] * zs + k[:, None]
    hit = xs >= tau[:, None] * np.sqrt(es)
    log_w = np.where(hit, log_w, -np.inf)
    top_w = np.max(log_w, axis=1)
    safe = np.where(np.isfinite(top_w), top_w, 0.0)
    est = safe + np.log(np.sum(np.exp(log_w - safe[:, None]), axis=1) / samples)
    return np.where(np.isfinite(top_w), np.minimum(est, 0.0), -np.inf)


def fail(log_q: np.ndarray, k: int) -> np.ndarray:
    """``1 − (1 − q)^(2^k − 1)`` (``q = e^log_q``)."""
    q = np.exp(np.minimum(log_q, 0.0))
    return -np.expm1((2.0**k - 1.0) * np.log1p(-np.minimum(q, 1.0 - 2.0**-53)))


def spherical_fail(cos: np.ndarray, n: int, k: int) -> np.ndarray:
    """The random spherical code's failure probability at each cosine (exact: the cap area)."""
    log_share = np.array([log2_cap_fraction(n, float(c)) for c in cos]) * math.log(2.0)
    return fail(log_share, k)


def log_q_of(s: SignalSet, cos: np.ndarray, n: int, seed: int) -> np.ndarray:
    """``ln q`` of one seeded probe per cosine (a random enrolled word of the set, a random ``z``)."""
    rng, noise = np.random.default_rng([seed, s.d]), np.random.default_rng(seed)
    out = np.empty(cos.size)
    for start in range(0, cos.size, CHUNK):
        c = cos[start : start + CHUNK]
        y = probes(random_words(s, c.size, n, rng), c, noise)
        if s.normalised:
            for at in range(0, c.size, IS_CHUNK):
                part = slice(at, at + IS_CHUNK)
                out[start + at : start + at + IS_CHUNK] = log_tail_normalised(s, y[part], c[part], rng, IS_SAMPLES)
        else:
            out[start : start + CHUNK] = log_tail(s, y, c)
    return out


def shipped_fail(cos: np.ndarray, n: int, k: int, seed: int) -> np.ndarray:
    """1 where the shipped polar code (list 128, 6-bit CRC) fails to decode a seeded probe at each cosine
    (the probe rounded to integers at ``2^28``, as the sketch quantises), else 0."""
    code = PolarCode(n, k, 6)
    rng, noise = np.random.default_rng([seed, 0]), np.random.default_rng(seed)
    out = np.empty(cos.size)
    for start in range(0, cos.size, 512):
        c = cos[start : start + 512]
        words = signs(code.encode(rng.integers(0, 2, (c.size, k)).astype(np.uint8)))
        y = np.rint(probes(words / math.sqrt(n), c, noise) * 2.0**28)
        out[start : start + 512] = ~np.all(signs(decode_batch(y, code, 128)) == words, axis=1)
    return out


Curves = dict[str, dict[int, np.ndarray]]


def per_cosine_fail(
    cos: np.ndarray, draws: int, n: int, seed: int, sets: tuple[SignalSet, ...]
) -> tuple[Curves, Curves, dict[str, float]]:
    """Per signal set and code size, the random code's failure probability at each cosine (mean over
    ``draws`` probes), the variance of that mean (Monte Carlo), and the CPU seconds each set took."""
    out: Curves = {"sphere-exact": {k: spherical_fail(cos, n, k) for k in BITS}}
    noise: Curves = {"sphere-exact": {k: np.zeros(cos.size) for k in BITS}}
    cpu: dict[str, float] = {}
    repeated = np.repeat(cos, draws)
    start = time.process_time()
    failed = {k: shipped_fail(repeated, n, k, seed).reshape(cos.size, draws) for k in BITS}
    cpu[SHIPPED] = round(time.process_time() - start, 2)
    out[SHIPPED] = {k: f.mean(axis=1) for k, f in failed.items()}
    noise[SHIPPED] = {k: f.var(axis=1, ddof=1) / draws for k, f in failed.items()}
    for s in sets:
        start = time.process_time()
        log_q = log_q_of(s, repeated, n, seed).reshape(cos.size, draws)
        out[s.name] = {k: fail(log_q, k).mean(axis=1) for k in BITS}
        noise[s.name] = {k: fail(log_q, k).var(axis=1, ddof=1) / draws for k in BITS}
        cpu[s.name] = round(time.process_time() - start, 2)
        print(f"  {s.name}: {cpu[s.name]} s", flush=True)
    return out, noise, cpu


def synthetic(n: int, sets: tuple[SignalSet, ...]) -> dict[str, Any]:
    """FNMR over the floor per signal set and size in the normal genuine-cosine model (``bench_code_floor``'s)."""
    curves, _, cpu = per_cosine_fail(GRID, GRID_DRAWS, n, 7, sets)
    fine = np.linspace(GRID[0], GRID[-1], 4001)
    rows = []
    for k in BITS:
        cap = capacity_cos(n, k)
        row: dict[str, Any] = {"bits": k, "capacity_cos": cap}
        for f in FLOORS:
            mu = cap + SPREAD * norm.ppf(1.0 - f)
            weight = norm.pdf(fine, mu, SPREAD) * (fine[1] - fine[0])
            below = norm.cdf(GRID[0], mu, SPREAD)
            row[f"floor{round(f * 100)}"] = {
                name: round(float((np.sum(weight * np.interp(fine, GRID, c[k])) + below) / f), 4)
                for name, c in curves.items()
            }
        rows.append(row)
        print(k, row["floor10"], flush=True)
    return {"spread": SPREAD, "grid": GRID.tolist(), "draws": GRID_DRAWS, "cpu_seconds": cpu, "sizes": rows}


def real_pairs(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Genuine cosines and owners of the code-alone attempts ``bench_code_sizes`` decodes on ``name``."""
    from benchmarks.bench_code_sizes import _background
    from benchmarks.deep_embeddings import identity_split, load, rows_of
    from sketchauth.evaluate.capacity import _code_attempts
    from sketchauth.evaluate.data import LabelledVectors
    from sketchauth.evaluate.fitting.transform import fit_transform
    from sketchauth.features.angular import AngularPipeline

    x, labels = load(name)
    split = identity_split(labels)
    rows = rows_of(labels, split["evaluation"])
    people = LabelledVectors(labels[rows], x[rows])
    transform = fit_transform(_background(labels, x, split), projection="centre", normalise=True)
    dims = np.arange(transform.dimensions)
    pipeline = AngularPipeline(transform, dims, min_cos=0.0, bits=32, list_size=128, crc=6)
    templates, attempts, owner = _code_attempts(pipeline, people, 3, 1)
    return np.einsum("ij,ij->i", templates[owner], attempts), owner


def real(name: str, sets: tuple[SignalSet, ...]) -> dict[str, Any]:
    """Floor and random-code FNMR per signal set and size on a real set's genuine pairs, with a people bootstrap."""
    cos, owner = real_pairs(name)
    n = DIMENSION
    curves, noise, cpu = per_cosine_fail(np.clip(cos, -1.0, 1.0), DRAWS, n, 11, sets)
    people = np.unique(owner)
    members = [np.flatnonzero(owner == p) for p in people]
    rng = np.random.default_rng(5)
    picks = [np.concatenate([members[i] for i in rng.integers(0, people.size, people.size)]) for _ in range(BOOTSTRAP)]
    rows = []
    for k in BITS:
        missed = (cos < capacity_cos(n, k)).astype(np.float64)
        floor = float(missed.mean())
        row: dict[str, Any] = {"bits": k, "capacity_cos": capacity_cos(n, k), "floor_fnmr": floor, "sets": {}}
        sphere = curves["sphere-exact"][k]
        for label, c in curves.items():
            p = c[k]
            ratios = np.array([p[i].mean() / missed[i].mean() for i in picks if missed[i].any()])
            paired = np.array([p[i].mean() / sphere[i].mean() for i in picks])
            row["sets"][label] = {
                "fnmr": round(float(p.mean()), 5),
                "over_floor": round(float(p.mean()) / floor, 4),
                "over_floor_90pct": [round(float(v), 4) for v in np.quantile(ratios, [0.05, 0.95])],
                "monte_carlo_se_over_floor": round(math.sqrt(float(noise[label][k].sum())) / p.size / floor, 4),
                "over_random_spherical": round(float(p.mean() / sphere.mean()), 4),
                "over_random_spherical_90pct": [round(float(v), 4) for v in np.quantile(paired, [0.05, 0.95])],
            }
        rows.append(row)
        print(k, floor, {label: v["over_floor"] for label, v in row["sets"].items()}, flush=True)
    return {
        "set": name,
        "genuine_pairs": int(cos.size),
        "people": int(people.size),
        "draws": DRAWS,
        "cpu_seconds": cpu,
        "sizes": rows,
    }


def gain_needed(name: str, sets: tuple[SignalSet, ...]) -> dict[str, Any]:
    """How much better than its random ensemble a code over each set would have to be: the ratio to the
    floor if every genuine probe's signal-to-noise ratio ``c²/(1 − c²)`` were raised by each of
    :data:`GAINS_DB` (a code that far ahead of the ensemble average), on the real set's pairs."""
    cos, _ = real_pairs(name)
    cos = np.clip(cos, -1.0, 1.0)
    out: dict[str, Any] = {"gains_db": list(GAINS_DB), "sets": {}}
    for s in sets:
        rows: dict[str, list[float]] = {str(k): [] for k in BITS}
        for g in GAINS_DB:
            r = np.maximum(cos, 0.0) ** 2 / np.maximum(1.0 - cos * cos, 1e-300) * 10.0 ** (g / 10.0)
            shifted = np.where(cos > 0, np.sqrt(r / (1.0 + r)), cos)
            repeated = np.repeat(shifted, DRAWS)
            log_q = log_q_of(s, repeated, DIMENSION, 11).reshape(cos.size, DRAWS)
            for k in BITS:
                floor = float(np.mean(cos < capacity_cos(DIMENSION, k)))
                rows[str(k)].append(round(float(fail(log_q, k).mean()) / floor, 4))
        out["sets"][s.name] = rows
        print(name, s.name, rows, flush=True)
    return out


def summarise(result: dict[str, Any]) -> dict[str, Any]:
    """Per real set and size: the floor, the random spherical code, each set's random code and the shipped
    code over the floor, each over the random spherical code (paired bootstrap interval beside), and which
    sets keep their random code within :data:`GOAL` of the floor at every size."""
    out = []
    for entry in result["real"]:
        verdict = {}
        names = [label for label in entry["sizes"][0]["sets"] if label != "sphere-exact"]
        for label in names:
            worst = max(row["sets"][label]["over_floor"] for row in entry["sizes"])
            verdict[label] = {"worst_over_floor": worst, "within_goal_at_every_size": worst <= GOAL}
        out.append(
            {
                "set": entry["set"],
                "goal": GOAL,
                "sizes": [
                    {
                        "bits": row["bits"],
                        "floor_fnmr": row["floor_fnmr"],
                        "random_spherical": row["sets"]["sphere-exact"]["over_floor"],
                        "headroom_over_random_spherical": round(GOAL / row["sets"]["sphere-exact"]["over_floor"], 4),
                        **{label: row["sets"][label]["over_floor"] for label in names},
                    }
                    for row in entry["sizes"]
                ],
                "verdict": verdict,
            }
        )
    result["summary"] = out
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="*", default=["lfw-dlib"])
    parser.add_argument("--signal-sets", nargs="*", default=None)
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULT)
    parser.add_argument("--gains-only", action="store_true", help="add only the gain rows (and summary) to --out")
    args = parser.parse_args(argv)
    sets = tuple(s for s in SIGNAL_SETS if args.signal_sets is None or s.name in args.signal_sets)
    gain_sets = tuple(s for s in sets if s.name in GAIN_SETS)
    if args.gains_only:
        result = json.loads(args.out.read_text())
        for entry in result["real"]:
            entry["gain_needed"] = gain_needed(entry["set"], gain_sets)
            entry["gain_provenance"] = {**provenance("bench_code_signal_sets"), "load": os.getloadavg()}
        write_result(args.out, summarise(result), echo=False)
        return
    result: dict[str, Any] = {
        **provenance("bench_code_signal_sets"),
        "load": os.getloadavg(),
        "dimension": DIMENSION,
        "signal_sets": [
            {"name": s.name, "block": s.d, "points": None if s.points is None else len(s.points), "note": s.note}
            for s in sets
        ],
    }
    result["real"] = []
    for name in args.sets:
        result["real"].append({**real(name, sets), "gain_needed": gain_needed(name, gain_sets)})
        write_result(args.out, summarise(result), echo=False)
    if not args.skip_synthetic:
        result["synthetic"] = synthetic(DIMENSION, sets)
        write_result(args.out, summarise(result), echo=False)


if __name__ == "__main__":
    main()
