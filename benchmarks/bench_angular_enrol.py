"""512-D enrolment of the angular sketches, decoding through the reflections, and the helper's size.

1. **Enrolment time** (``check_secret`` + ``encode`` of ``AngularSketch(512, 8)``) and decoding
   time, in three child processes: BLAS threads ``OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=1``, ``2``
   and the library default (variables unset). In each, the previous encoder (a Haar
   ``U ∈ O(511)`` from the QR of a Gaussian matrix, ``R = Q_c·diag(1, U)·Q_t`` written as ``n²``
   ``int16``; :data:`LEGACY_REPEATS` times: it takes seconds under default threads) and the
   conditioned Householder draw are timed interleaved (A, B, A, B, …), wall and process CPU.
2. **Decoding per dimension** (128, 192, 256, 512; ``α = 8``), in the same children, interleaved:
   the real decoder on a compact helper (the reflections applied to the probe, exact rows where
   the decision needs them), the previous compact decoder (``R̂`` expanded, then ``R̂p̂``: the very
   same decision code on the full ``R̂p̂``) and the real decoder on the dense helper of the same
   ``R̂`` (the format before the compact one).
3. **Same decisions, seeded sweep** (in the parent process): per dimension, helpers of seeded templates
   and genuine probes at four noise levels and impostors; the real decoder on the compact helper
   against the dense helper of its ``R̂`` (the expansion): disagreements (must be 0), the share of
   probes the fast path had to expand for, the exact rows it computed, and the largest distance
   between its rows of ``2^14·R'`` and the expansion's (its rounding guard is ``2^−20``).
4. **Helper bytes** per person: compact payload against ``2n²``.
5. **Decoding unchanged** on real embeddings (``<name>.npz`` in ``--data``, with ``X`` and
   ``labels``; identities with at least two captures; each person enrolled from the first
   capture; every other capture of theirs is a genuine probe, one capture of each of 40 other
   people an impostor probe): (a) the real decoder on the dense ``int16`` helper of the compact
   helper's ``R̂`` on every pair, against the exact decider on the compact form's ``R̂`` (every
   pair) and the real decoder on the compact helper (the first 4 probes of each person) — must
   agree everywhere; (b) what rounding the Householder vectors changes: the same unrounded draw
   written as the dense ``round(2^14·R)`` vs stored compact, decided on every pair, and
   ``‖R̂t/2^14 − c‖``.

6. **Polar decoding per dimension** (``PolarAngularSketch(n, 64, list 8)``, the shipped family), in the
   same children, interleaved: the real decoder (``R̂`` expanded, ``y = R̂p̂``, the list decoder) against
   the candidate that would skip the expansion — the reflections on the probe, ``rint(2^14·R'p̂)``,
   the same list decoder: CPU per decode and the same-run ratio.
7. **Is the candidate the same decoder? Seeded sweep** (parent process): per dimension, seeded helpers,
   genuine probes at cosines straddling the one where half decode (``POLAR_HALF_COS ± 0.05``) and
   impostors; both inputs through the same list decoder: decoded codewords that differ, accept/reject
   outcomes that differ (the verification's: the decoded codeword is the enrolled one or not), how
   far the candidate's rotated probe is from ``R̂p̂`` (relative to ``max|y|``) and in the decoder's
   integer units, and how often the decoder's power-of-two scale differs.
8. **The same on real embeddings** (every ``<name>.npz`` of ``--data``, pairs as in item 5, every pair).

With ``--before TREE`` (a checkout of the previous code) items 1 and 2 are also run on that tree's
library, child after child (its decoder on a compact helper is the expansion).

Run: ``python benchmarks/bench_angular_enrol.py --data DIR [--before TREE]`` →
``benchmarks/results/bench_angular_enrol.json`` (``--data`` optional: without it item 5 is skipped).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, cast

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from timing import ROOT, provenance, write_result

N, ALPHA, REPEATS = 512, 8, 9
#: Repeats of the previous (QR) encoder: seconds each under OpenBLAS's default threads on a loaded machine.
LEGACY_REPEATS = 3
#: Dimensions of item 2 and 3.
DIMENSIONS = (128, 192, 256, 512)
#: Item 3: seeded templates per dimension, and probes per template (4 noise levels × 3, 3 impostors).
SWEEP_TEMPLATES = 40
SWEEP_SPREADS = (0.3, 0.8, 1.2, 2.0)
#: Probes per person decoded by the real decoder on the compact helper too (each decode expands it).
REAL_COMPACT_PROBES = 4
#: Items 6–8, the polar family (``PolarAngularSketch(n, 64, list 8)``, what the pipelines ship).
POLAR_BITS, POLAR_LIST = 64, 8
#: Per dimension, about the cosine to the template at which half the probes decode (64 bits, list 8):
#: the sweep's genuine probes straddle it (``± POLAR_COS_SPREAD``), where any change of the decoder's
#: inputs moves decisions first.
POLAR_HALF_COS = {128: 0.725, 192: 0.64, 256: 0.575, 512: 0.425}
POLAR_COS_SPREAD = 0.05
#: Item 7: seeded templates per dimension, genuine probes and impostors per template.
POLAR_TEMPLATES, POLAR_GENUINE, POLAR_IMPOSTORS = 50, 100, 10


def _legacy_dense(sketch: Any, secret: Any) -> bytes:
    """The previous encoder: ``R = Q_c·diag(1, U)·Q_t`` with ``U`` from a QR (``haar_orthogonal``)."""
    from sketchauth.sketches.angular import haar_orthogonal

    n = sketch.dimension
    m = np.zeros((n, n))
    m[0, 0] = 1.0
    m[1:, 1:] = haar_orthogonal(n - 1)
    c = np.asarray(secret, dtype=np.float64) / math.sqrt(sketch.alpha)
    for x, side in ((c, "rows"), (secret.template, "columns")):
        v = -x.copy()
        v[0] += 1.0
        beta = 2.0 / float(v @ v)
        m = m - beta * (np.outer(v, v @ m) if side == "rows" else np.outer(m @ v, v))
    return bytes(np.clip(np.rint(m * 2**14), -(2**14), 2**14).astype(">i2").tobytes())


def _timed(fn: Any) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return 1e3 * (time.perf_counter() - wall), 1e3 * (time.process_time() - cpu)


def _summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    walls, cpus = [s[0] for s in samples], [s[1] for s in samples]
    return {
        "wall_ms_median": float(np.median(walls)),
        "wall_ms_min": min(walls),
        "wall_ms_max": max(walls),
        "cpu_ms_median": float(np.median(cpus)),
    }


def _decode_timings(dimension: int) -> dict[str, Any]:
    """Item 2 at one dimension: real decode (compact, dense) and the previous compact decoder, interleaved."""
    from sketchauth.errors import DecodeError
    from sketchauth.sketches.angular import AngularSketch, quantise_probe
    from sketchauth.sketches.format import pack_helper

    sketch = AngularSketch(dimension, ALPHA)
    rng = np.random.default_rng(dimension)
    template = rng.normal(size=dimension)
    probe = template + 0.5 * np.linalg.norm(template) * rng.normal(size=dimension) / dimension
    compact = sketch.encode(sketch.check_secret(template))
    payload = sketch.payload(compact)
    dense = pack_helper(sketch.scheme_id, sketch.params(), sketch.matrix(compact).astype(">i2").tobytes())

    def expanded() -> None:  # the decoder before the reflections: R̂ expanded, then the same decision code
        p = quantise_probe(np.asarray(probe, dtype=np.float64))
        with contextlib.suppress(DecodeError):
            sketch._decided(sketch._matrix(sketch.payload(compact)) @ p, p)

    if not hasattr(sketch, "_decided"):  # a tree from before the reflections (--before): its decode expands
        return {"compact_helper": _summary([_timed(lambda: sketch.decode(compact, probe)) for _ in range(REPEATS)])}

    assert len(payload) == sketch._compact_bytes
    new, old, dense_times = [], [], []
    for _ in range(REPEATS):
        new.append(_timed(lambda: sketch.decode(compact, probe)))
        old.append(_timed(expanded))
        dense_times.append(_timed(lambda: sketch.decode(dense, probe)))
    out: dict[str, Any] = {
        "reflections": _summary(new),
        "expanded": _summary(old),
        "dense_helper": _summary(dense_times),
    }
    out["cpu_ratio_expanded_over_reflections"] = out["expanded"]["cpu_ms_median"] / out["reflections"]["cpu_ms_median"]
    return out


def _through_reflections(sketch: Any, payload: bytes, p: np.ndarray) -> np.ndarray:
    """The candidate polar input ``rint(2^14·R'p̂)``: the reflections applied to the quantised probe
    (``O(n²)``, ``R̂`` never formed) — *not* ``R̂p̂``: every entry of ``R̂`` is rounded on its own, so
    ``R̂p̂ − 2^14·R'p̂ = −Ep̂`` with ``|E_ij| ≤ ½``, about ``‖p̂‖/√12`` per coordinate."""
    from sketchauth.sketches import _rotation

    flat, s, r = _rotation.unpack(payload, sketch.dimension)
    return cast("np.ndarray", np.rint(_rotation.Reflections(flat, s, r).apply(p) * 2**14))


def _on_sphere(template: np.ndarray, cos: float, rng: np.random.Generator) -> np.ndarray:
    """A probe at exactly ``cos`` to the unit ``template``, in a uniform direction otherwise."""
    u = rng.normal(size=template.shape[0])
    u -= (u @ template) * template
    return cast("np.ndarray", cos * template + math.sqrt(1.0 - cos * cos) * u / np.linalg.norm(u))


def _polar_timings(dimension: int) -> dict[str, Any]:
    """Item 6 at one dimension: the real polar decoder (``R̂`` expanded) against the candidate (the
    reflections on the probe, then the same list decoder), interleaved in one process."""
    from sketchauth.errors import DecodeError
    from sketchauth.sketches.angular import quantise_probe
    from sketchauth.sketches.angular_polar import PolarAngularSketch
    from sketchauth.sketches.polar import decode_batch, signs

    sketch = PolarAngularSketch(dimension, POLAR_BITS, POLAR_LIST)
    rng = np.random.default_rng(dimension)
    template = rng.normal(size=dimension)
    template /= np.linalg.norm(template)
    probe = _on_sphere(template, POLAR_HALF_COS[dimension], rng)
    compact = sketch.encode(sketch.check_secret(template))

    def real() -> None:
        with contextlib.suppress(DecodeError):
            sketch.decode(compact, probe)

    def candidate() -> None:
        payload = sketch.payload(compact)
        y = _through_reflections(sketch, payload, quantise_probe(probe))
        signs(decode_batch(y[None, :], sketch.code, sketch.list_size)[0])

    expanded, reflections = [], []
    for _ in range(REPEATS):
        expanded.append(_timed(real))
        reflections.append(_timed(candidate))
    out: dict[str, Any] = {"expanded_real_decoder": _summary(expanded), "reflections_candidate": _summary(reflections)}
    out["cpu_ratio_expanded_over_reflections"] = (
        out["expanded_real_decoder"]["cpu_ms_median"] / out["reflections_candidate"]["cpu_ms_median"]
    )
    return out


def _polar_compare(sketch: Any, compact: bytes, secret: Any, probes: np.ndarray) -> dict[str, Any]:
    """Both inputs on one helper's probes: ``R̂p̂`` (the real decoder's) and the candidate's, decoded by
    the same list decoder; the codewords, the accept/reject outcomes and the inputs compared."""
    from sketchauth.sketches.angular import quantise_probe
    from sketchauth.sketches.polar import decode_batch, decoder_inputs

    quantised = quantise_probe(probes)
    exact = quantised @ sketch.matrix(compact).T  # integers below 2^53: the real decoder's y, exactly
    payload = sketch.payload(compact)
    candidate = np.array([_through_reflections(sketch, payload, p) for p in quantised])
    a = decode_batch(exact, sketch.code, sketch.list_size)
    b = decode_batch(candidate, sketch.code, sketch.list_size)
    enrolled = ((1 - np.asarray(secret, dtype=np.int64)) // 2).astype(np.uint8)
    accept_a, accept_b = np.all(a == enrolled, axis=1), np.all(b == enrolled, axis=1)
    # The decoder's integer inputs: the same power-of-two scale unless max|y| straddles a power of two.
    llr_a, llr_b = decoder_inputs(exact, sketch.code), decoder_inputs(candidate, sketch.code)
    return {
        "codeword_differs": ~np.all(a == b, axis=1),
        "accept_differs": accept_a != accept_b,
        "accepted": accept_a,
        "input_change": np.abs(exact - candidate).max(axis=1) / np.abs(exact).max(axis=1),
        "input_units_changed": np.abs(llr_a - llr_b).max(axis=1),
        "scale_differs": np.frexp(np.abs(exact).max(axis=1))[1] != np.frexp(np.abs(candidate).max(axis=1))[1],
    }


def _polar_counts(parts: list[dict[str, Any]], genuine: int) -> dict[str, Any]:
    """Totals of :func:`_polar_compare` over helpers (``genuine``: leading genuine probes per helper)."""
    changes = np.concatenate([p["input_change"] for p in parts])
    return {
        "pairs": int(changes.size),
        "genuine_accepted_by_real_decoder": int(sum(int(p["accepted"][:genuine].sum()) for p in parts)),
        "codeword_disagreements": int(sum(int(p["codeword_differs"].sum()) for p in parts)),
        "accept_reject_disagreements": int(sum(int(p["accept_differs"].sum()) for p in parts)),
        "rotated_probe_change_relative_median": float(np.median(changes)),
        "rotated_probe_change_relative_max": float(changes.max()),
        "decoder_input_change_units_median": float(
            np.median(np.concatenate([p["input_units_changed"] for p in parts]))
        ),
        "decoder_input_scale_differs": int(sum(int(p["scale_differs"].sum()) for p in parts)),
    }


def polar_sweep(dimension: int) -> dict[str, Any]:
    """Item 7 at one dimension: seeded helpers, genuine probes straddling the half-decoding cosine, impostors."""
    from sketchauth.errors import DecodeError
    from sketchauth.sketches.angular import Codeword
    from sketchauth.sketches.angular_polar import PolarAngularSketch

    sketch = PolarAngularSketch(dimension, POLAR_BITS, POLAR_LIST)
    rng = np.random.default_rng(2000 + dimension)
    parts, real_checked = [], 0
    for _ in range(POLAR_TEMPLATES):
        template = rng.normal(size=dimension)
        template /= np.linalg.norm(template)
        secret = sketch.random_codeword(rng).view(Codeword)  # seeded too: the sweep is reproducible
        secret.template = template
        compact = sketch.encode_with(secret, sketch.simulated_randomness(secret, rng))
        cos = POLAR_HALF_COS[dimension] + rng.uniform(-POLAR_COS_SPREAD, POLAR_COS_SPREAD, POLAR_GENUINE)
        probes = np.array(
            [_on_sphere(template, c, rng) for c in cos] + list(rng.normal(size=(POLAR_IMPOSTORS, dimension)))
        )
        part = _polar_compare(sketch, compact, secret, probes)
        try:  # the batch's R̂p̂ is the real decoder's input: its outcome on the first probe, checked
            real = sketch.secret_bytes(sketch.decode(compact, probes[0])) == sketch.secret_bytes(secret)
        except DecodeError:
            real = False
        assert real == bool(part["accepted"][0])
        real_checked += 1
        parts.append(part)
    out: dict[str, Any] = {"dimension": dimension, "templates": POLAR_TEMPLATES}
    out["impostors_per_template"] = POLAR_IMPOSTORS
    out["genuine_cos"] = [POLAR_HALF_COS[dimension] - POLAR_COS_SPREAD, POLAR_HALF_COS[dimension] + POLAR_COS_SPREAD]
    return {**out, **_polar_counts(parts, POLAR_GENUINE), "real_decoder_spot_checks": real_checked}


def polar_real(path: Path) -> dict[str, Any]:
    """Item 8 on one set of real embeddings: each person enrolled from the first capture, every other
    capture a genuine probe, the first capture of 40 other people impostors."""
    from sketchauth.sketches.angular_polar import PolarAngularSketch

    people = _people(path)
    sketch = PolarAngularSketch(people[0].shape[1], POLAR_BITS, POLAR_LIST)
    rng = np.random.default_rng(3)
    parts, genuine = [], 0
    for k, captures in enumerate(people):
        others = [people[j][0] for j in rng.choice(len(people), 41, replace=False) if j != k][:40]
        secret = sketch.check_secret(captures[0])
        compact = sketch.encode(secret)
        part = _polar_compare(sketch, compact, secret, np.vstack([captures[1:], np.array(others)]))
        genuine += int(part["accepted"][: captures.shape[0] - 1].sum())
        parts.append(part)
    counts = {**_polar_counts(parts, 0), "genuine_accepted_by_real_decoder": genuine}  # genuine counted above
    return {"set": path.stem, "dimension": sketch.dimension, "people": len(people), **counts}


def child() -> dict[str, Any]:
    """Items 1 and 2 in this process's BLAS setting (printed as JSON)."""
    from sketchauth.sketches.angular import AngularSketch
    from sketchauth.sketches.format import pack_helper

    sketch = AngularSketch(N, ALPHA)
    rng = np.random.default_rng(0)
    template = rng.normal(size=N)
    probe = template + 0.5 * rng.normal(size=N) / math.sqrt(N)
    secret = sketch.check_secret(template)
    dense = pack_helper(sketch.scheme_id, sketch.params(), _legacy_dense(sketch, secret))
    compact = sketch.encode(secret)
    old_enc, new_enc, old_dec, new_dec = [], [], [], []
    for k in range(REPEATS):
        if k < LEGACY_REPEATS:
            old_enc.append(_timed(lambda: _legacy_dense(sketch, sketch.check_secret(template))))
        new_enc.append(_timed(lambda: sketch.encode(sketch.check_secret(template))))
        old_dec.append(_timed(lambda: sketch.decode(dense, probe)))
        new_dec.append(_timed(lambda: sketch.decode(compact, probe)))
    return {
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS", "default"),
        "load_average_1min": os.getloadavg()[0],
        "encode_qr_dense": _summary(old_enc),
        "encode_householder_compact": _summary(new_enc),
        "decode_dense": _summary(old_dec),
        "decode_compact": _summary(new_dec),
        "decode_by_dimension": {str(d): _decode_timings(d) for d in DIMENSIONS},
        "polar_decode_by_dimension": {str(d): _polar_timings(d) for d in DIMENSIONS},
        "load_average_1min_after": os.getloadavg()[0],
    }


def sweep(dimension: int) -> dict[str, Any]:
    """Item 3 at one dimension (seeded templates, codewords and rotations)."""
    from sketchauth.errors import DecodeError
    from sketchauth.sketches import _rotation
    from sketchauth.sketches.angular import AngularSketch, quantise_probe
    from sketchauth.sketches.format import pack_helper

    sketch = AngularSketch(dimension, ALPHA)
    rng = np.random.default_rng(1000 + dimension)

    def outcome(helper: bytes, probe: np.ndarray) -> bytes:
        try:
            return bytes(sketch.secret_bytes(sketch.decode(helper, probe)))
        except DecodeError:
            return b""

    pairs = disagreements = expanded = accepted = 0
    rows: list[int] = []
    drift = 0.0
    for _ in range(SWEEP_TEMPLATES):
        template = rng.normal(size=dimension)
        template /= np.linalg.norm(template)
        secret = sketch.check_secret(template)
        compact = sketch.encode_with(secret, sketch.simulated_randomness(secret, rng))
        payload = sketch.payload(compact)
        matrix = sketch.matrix(compact)
        dense = pack_helper(sketch.scheme_id, sketch.params(), matrix.astype(">i2").tobytes())
        probes = [
            template + a * rng.normal(size=dimension) / math.sqrt(dimension) for a in SWEEP_SPREADS for _ in range(3)
        ]
        probes += [rng.normal(size=dimension) for _ in range(3)]
        flat, s, r = _rotation.unpack(payload, dimension)
        reflections, exact = _rotation.Reflections(flat, s, r), _rotation.expand(flat, s, r) * 2**14
        for probe in probes:
            fast = outcome(compact, probe)
            disagreements += int(fast != outcome(dense, probe))
            accepted += int(fast == sketch.secret_bytes(secret))
            y = sketch._rotated_where_it_matters(payload, quantise_probe(probe))
            if y is None:
                expanded += 1
            else:
                computed = np.flatnonzero(y)
                rows.append(int(computed.size))
                drift = max(drift, float(np.abs(reflections.rows(computed) * 2**14 - exact[computed]).max()))
            pairs += 1
    return {
        "dimension": dimension,
        "alpha": ALPHA,
        "templates": SWEEP_TEMPLATES,
        "pairs": pairs,
        "accepted_genuine": accepted,
        "disagreements_reflections_vs_expanded": disagreements,
        "share_expanded": expanded / pairs,
        "exact_rows_median": float(np.median(rows)),
        "exact_rows_max": max(rows),
        "max_row_distance_to_expansion_fixed_point_units": drift,
    }


def _run_child(threads: str | None, tree: str | None = None) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if threads is not None:
        env["OPENBLAS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = threads
    if tree is not None:  # the library of another checkout (the code before a change)
        env["PYTHONPATH"] = os.pathsep.join([tree, env.get("PYTHONPATH", "")])
    out = subprocess.run([sys.executable, __file__, "--child"], env=env, capture_output=True, text=True, check=True)
    return dict(json.loads(out.stdout))


def _people(path: Path) -> list[np.ndarray]:
    data = np.load(path, allow_pickle=False)
    x, labels = np.asarray(data["X"], dtype=np.float64), np.asarray(data["labels"])
    groups = [x[labels == label] for label in sorted(set(labels.tolist()))]
    return [g for g in groups if g.shape[0] >= 2]


def _decisions(sketch: Any, matrix: np.ndarray, secret: Any, probes: np.ndarray) -> np.ndarray:
    from sketchauth.sketches.angular import decoding_margin, quantise_probe

    return np.asarray(decoding_margin(quantise_probe(probes) @ matrix.T, secret) > 0)


def unchanged(path: Path) -> dict[str, Any]:
    """Item 3 on one set of real embeddings."""
    from sketchauth.errors import DecodeError
    from sketchauth.sketches import _rotation
    from sketchauth.sketches.angular import AngularSketch
    from sketchauth.sketches.format import pack_helper

    people = _people(path)
    dim = people[0].shape[1]
    sketch = AngularSketch(dim, ALPHA)
    rng = np.random.default_rng(1)
    real_pairs = real_disagree = genuine = impostor = moved = vector_disagree = 0
    drift_old, drift_new = [], []
    for k, captures in enumerate(people):
        others = [people[j][0] for j in rng.choice(len(people), 41, replace=False) if j != k][:40]
        probes = np.vstack([captures[1:], np.array(others)])
        secret = sketch.check_secret(captures[0])
        randomness = sketch.draw_randomness(secret)
        compact = sketch.encode_with(secret, randomness)
        matrix = sketch.matrix(compact)
        dense = pack_helper(sketch.scheme_id, sketch.params(), matrix.astype(">i2").tobytes())
        dense_accepts = []
        for j, probe in enumerate(probes):  # (a) the real decoder: dense on every pair, compact on some
            outcome = []
            for helper in (dense, compact) if j < REAL_COMPACT_PROBES else (dense,):
                try:
                    outcome.append(sketch.secret_bytes(sketch.decode(helper, probe)))
                except DecodeError:
                    outcome.append(b"")
            dense_accepts.append(outcome[0] == sketch.secret_bytes(secret))
            if len(outcome) == 2:
                real_pairs += 1
                real_disagree += int(outcome[0] != outcome[1])
        decided = _decisions(sketch, matrix, secret, probes)  # the exact decider on the compact form's R̂
        vector_disagree += int(np.count_nonzero(decided != np.array(dense_accepts)))
        # (b) the same unrounded draw, dense (today) vs compact (rounded Householder vectors)
        r = randomness.row_signs.astype(np.float64)
        c = np.asarray(secret, dtype=np.float64) / math.sqrt(ALPHA)
        assert secret.template is not None  # check_secret bound it
        ws, s = _rotation.conditioned_householder(secret.template, r * c, randomness.gaussians)
        exact = _rotation.expand(np.concatenate(ws), s, r)
        today = np.clip(np.rint(exact * 2**14), -(2**14), 2**14)
        a, b = _decisions(sketch, today, secret, probes), _decisions(sketch, matrix, secret, probes)
        moved += int(np.count_nonzero(a != b))
        genuine += captures.shape[0] - 1
        impostor += len(others)
        drift_old.append(float(np.linalg.norm(today @ secret.template / 2**14 - c)))
        drift_new.append(float(np.linalg.norm(matrix @ secret.template / 2**14 - c)))
    return {
        "set": path.stem,
        "dimension": dim,
        "people": len(people),
        "genuine_pairs": genuine,
        "impostor_pairs": impostor,
        "real_decoder_dense_vs_exact_decider_on_compact_disagreements_every_pair": vector_disagree,
        "real_decoder_both_forms_pairs": real_pairs,
        "real_decoder_disagreements_compact_vs_dense_same_rotation": real_disagree,
        "decisions_changed_by_rounding_householder_vectors": moved,
        "template_to_codeword_error_dense_rounding_median": float(np.median(drift_old)),
        "template_to_codeword_error_compact_median": float(np.median(drift_new)),
        "template_to_codeword_error_compact_max": max(drift_new),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--data", default=os.environ.get("SKETCHAUTH_EMBEDDINGS_DIR", ""))
    parser.add_argument("--before", help="a checkout of the code before the change: its children are timed too")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "bench_angular_enrol.json"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child()))
        return
    from sketchauth.sketches import _rotation

    result: dict[str, Any] = provenance("bench_angular_enrol")
    result["parameters"] = {
        "dimension": N,
        "alpha": ALPHA,
        "repeats_interleaved": REPEATS,
        "legacy_encoder_repeats": LEGACY_REPEATS,
        "decode_dimensions": list(DIMENSIONS),
    }
    if args.before:
        commit = subprocess.run(
            ["git", "-C", args.before, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
        )
        result["timing_before"] = {"tree_commit": commit.stdout.strip(), "runs": []}
    result["timing"] = []
    for threads in ("1", "2", None):  # this tree's child, then the tree before it, one BLAS setting at a time
        result["timing"].append(_run_child(threads))
        if args.before:
            result["timing_before"]["runs"].append(_run_child(threads, args.before))
    result["same_decisions_sweep"] = [sweep(d) for d in DIMENSIONS]
    result["polar_parameters"] = {"bits": POLAR_BITS, "list_size": POLAR_LIST, "genuine_per_template": POLAR_GENUINE}
    result["polar_candidate_sweep"] = [polar_sweep(d) for d in DIMENSIONS]
    result["helper_payload_bytes"] = {"dense_int16": 2 * N * N, "compact": _rotation.compact_bytes(N)}
    result["helper_payload_bytes"]["ratio"] = _rotation.compact_bytes(N) / (2 * N * N)
    if args.data:
        result["decoding_unchanged"] = [unchanged(p) for p in sorted(Path(args.data).glob("*.npz"))]
        result["polar_candidate_real"] = [polar_real(p) for p in sorted(Path(args.data).glob("*.npz"))]
    write_result(args.out, result)


if __name__ == "__main__":
    main()
