"""Streaming evaluation (sketchauth.evaluate.blocks / tally): the tiles' integer counts equal the
materialised pair path's and real decodes, whatever the split of the work; the merge is exact."""

from __future__ import annotations

from functools import reduce

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.evaluate import blocks, tally
from sketchauth.evaluate.adapters import adapter
from sketchauth.evaluate.data import VectorModel, synthetic_sets, synthetic_strings, synthetic_vectors
from sketchauth.evaluate.deciders import (
    _window_bits,
    decide_by_decoding,
    decide_exact,
    decide_interval,
    prepare_decider,
)
from sketchauth.evaluate.error_rates import evaluate_adapter
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.rates import det_from_counts, det_from_scores
from sketchauth.evaluate.tally import ScoreHistogram
from sketchauth.evaluate.trials import enrol_population, plan_trials, samples_of
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.templates import enrol_rounded_mean

CASES = {
    "interval": (
        lambda: synthetic_vectors(15, 4, 6, n=64, seed=3, model=VectorModel(spread=3, noise=1.5)),
        {"n": 64, "features": 6},
    ),
    "code-offset": (lambda: synthetic_strings(14, 3, 8, error_rate=0.15, seed=2), {"n": 8}),
    "pinsketch": (lambda: synthetic_sets(12, 3, low=1, high=256, set_size=12, seed=5), {"m": 8}),
    "asymmetric-interval": (
        lambda: synthetic_vectors(12, 4, 5, n=200, seed=4, model=VectorModel(spread=4, noise=2.0)),
        {"n": 200, "features": 5, "q": 8, "scheme": "s2"},
    ),
}
SWEEPS = {"interval": [2, 3, 5], "code-offset": [1, 2, 3], "pinsketch": [2, 4, 8], "asymmetric-interval": [0, 1, 3]}


def _materialised_counts(scheme: str, data, params, sweep, *, max_impostors=None):
    """Today's path: every pair materialised, decided as one list, counted with bincount."""
    ad = adapter(scheme)
    plan = plan_trials(data, enrol_samples=ad.min_enrol_samples, max_impostors_per_identity=max_impostors, seed=0)
    pairs = np.hstack([plan.genuine, plan.impostor])
    n_gen = plan.genuine.shape[1]
    raw = samples_of(data)
    probe_fn = ad.probe_for(params)
    probes = raw if probe_fn is None else [probe_fn(x) for x in raw]
    out = []
    for setting in sweep:
        sketch = ad.make_sketch(params, setting)
        enrolled = enrol_population(sketch, ad.enrol, data, plan, setting)
        accepted, malformed = decide_by_decoding(sketch, enrolled, probes, pairs[0], pairs[1])
        fast = ad.decide(sketch, enrolled, probes, pairs[0], pairs[1])
        assert np.array_equal(fast[0], accepted) and np.array_equal(fast[1], malformed), "array rule ≠ decode"
        J = len(plan.labels)
        out.append(
            (
                int(n_gen - accepted[:n_gen].sum()),
                int(accepted[n_gen:].sum()),
                int(malformed.sum()),
                np.bincount(pairs[0, :n_gen][~accepted[:n_gen]], minlength=J).tolist(),
                np.bincount(pairs[0, n_gen:][accepted[n_gen:]], minlength=J).tolist(),
            )
        )
    return out, n_gen, pairs.shape[1] - n_gen


def _streamed(scheme, data, params, sweep, **options):
    ad = adapter(scheme)
    result = evaluate_adapter(
        scheme, params, data, sweep, seed=0, baseline_metrics=(), enrol_samples=ad.min_enrol_samples, **options
    )
    return result


@pytest.mark.parametrize("scheme", sorted(CASES))
@pytest.mark.parametrize("jobs", [1, 2])
def test_streamed_counts_equal_the_materialised_path_and_real_decodes(scheme: str, jobs: int) -> None:
    make, params = CASES[scheme]
    data = make()
    expected, n_gen, n_imp = _materialised_counts(scheme, data, params, SWEEPS[scheme])
    result = _streamed(scheme, data, params, SWEEPS[scheme], jobs=jobs)
    got = [
        (p.false_non_matches, p.false_matches, m) for p, m in zip(result.points, result.malformed_probes, strict=False)
    ]
    assert got == [e[:3] for e in expected]
    assert all(p.genuine_trials == n_gen and p.impostor_trials == n_imp for p in result.points)
    assert result.decode_check["disagreements"] == 0 and result.decode_check["all_trials"]


def test_subsampled_impostors_stream_through_pair_lists() -> None:
    make, params = CASES["interval"]
    data = make()
    expected, _n_gen, n_imp = _materialised_counts("interval", data, params, [3, 5], max_impostors=7)
    for jobs in (1, 2):
        result = _streamed("interval", data, params, [3, 5], max_impostors_per_identity=7, jobs=jobs)
        assert [(p.false_non_matches, p.false_matches) for p in result.points] == [e[:2] for e in expected]
        assert result.points[0].impostor_trials == n_imp == 15 * 7


def _job(data, sweep, *, check=50):
    plan = plan_trials(data)
    probes = data.samples[plan.probe_index]
    deciders = []
    for v in sweep:
        sketch = IntervalSketch(n=64, v=v, features=data.features)
        enrolled = enrol_population(sketch, enrol_rounded_mean, data, plan)
        deciders.append(prepare_decider(decide_interval, sketch, enrolled, probes))
    return plan, blocks.Job.create(plan, deciders, seed=7, check=check, features=data.features)


def _same(a: tally.Tally, b: tally.Tally) -> None:
    a, b = a.pruned(), b.pruned()  # the canonical form of the kept check pairs
    for name in ("false_non_matches", "false_matches", "malformed", "genuine_malformed"):
        assert np.array_equal(getattr(a, name), getattr(b, name))
    assert (a.genuine_trials, a.impostor_trials) == (b.genuine_trials, b.impostor_trials)
    J = max(a.first + a.trials.shape[1], b.first + b.trials.shape[1])
    for x, y in zip(a.per_identity(J), b.per_identity(J), strict=True):
        assert np.array_equal(x, y)
    assert a.candidates is not None and b.candidates is not None
    assert np.array_equal(a.candidates.ids, b.candidates.ids)
    assert np.array_equal(a.candidates.accepted, b.candidates.accepted)


def test_merge_is_associative_and_independent_of_the_split() -> None:
    data = synthetic_vectors(20, 4, 6, n=64, seed=8, model=VectorModel(spread=3, noise=1.5))
    _, job = _job(data, [2, 4, 6], check=5)
    bands = [(a, min(a + 3, 20)) for a in range(0, 20, 3)]
    parts = [blocks.run_band(job, a, b) for a, b in bands]
    left = reduce(lambda x, y: x.merge(y), parts)
    right = reduce(lambda x, y: y.merge(x), reversed(parts))
    shuffled = [parts[i] for i in np.random.default_rng(1).permutation(len(parts))]
    pairwise = reduce(
        lambda x, y: x.merge(y), [a.merge(b) for a, b in zip(shuffled[::2], shuffled[1::2], strict=False)]
    )
    pairwise = pairwise.merge(shuffled[-1]) if len(shuffled) % 2 else pairwise
    whole = blocks.run_band(job, 0, 20)
    for other in (right, pairwise, whole, blocks.run(job, jobs=2)):
        _same(left, other)
    # The kept check sample is bounded: k per setting and pool, plus the fixed random pairs.
    kept = left.pruned().candidates
    assert kept is not None and kept.ids.size <= 2 * 3 * 5 + job.picked.size


def test_tiles_smaller_than_a_band_give_the_same_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    data = synthetic_vectors(16, 4, 6, n=64, seed=9, model=VectorModel(spread=3, noise=1.5))
    _, job = _job(data, [3, 5])
    big = blocks.run(job)
    monkeypatch.setattr(blocks, "TILE_CELLS", 6 * 5)  # 5 identities × 1 probe... tiles of every shape
    monkeypatch.setattr(blocks, "_tile_sizes", lambda job: (3, 7))
    _same(big, blocks.run(job))


@given(
    n=st.integers(2, 300),
    v=st.integers(1, 160),
    b=st.integers(0, 299),
    d=st.integers(0, 299),
)
@settings(max_examples=300, deadline=None)
def test_window_comparison_is_the_box_rule(n: int, v: int, b: int, d: int) -> None:
    b, d = b % n, d % n
    lo, width = b - v + 1, 2 * v - 1
    bits = _window_bits(min(0, d) - lo, max(0, d) - lo, width)
    assert bits is not None
    x = (d - lo) % (1 << bits)
    assert (x < width) == (abs(d - b) < v)


def test_interval_tiles_at_the_boundary_equal_real_decodes() -> None:
    # Probes at |d − b| = v − 1 and v exactly, per feature, at both ends of [0, n).
    n, v, k = 40, np.array([1, 3, 7, 19]), 4
    sketch = IntervalSketch(n=n, v=v, features=k)
    rng = np.random.default_rng(2)
    templates = rng.integers(0, n, size=(6, k))
    templates[0], templates[1] = 0, n - 1
    secrets = [sketch.check_secret(t) for t in templates]
    from sketchauth.evaluate.trials import Enrolled

    enrolled = Enrolled(
        tuple(sketch.encode(s) for s in secrets), tuple(sketch.secret_bytes(s) for s in secrets), tuple(secrets)
    )
    probes = []
    for t in templates:
        for step in (v - 1, v, -(v - 1), -v):
            probes.append(np.clip(t + step, 0, n - 1))
    probes = np.array(probes, dtype=float)
    probes = np.vstack([probes, np.full(k, np.nan)])  # not a number: malformed
    prepared = prepare_decider(decide_exact, sketch, enrolled, probes)
    got = prepared.tile(0, 6, 0, len(probes))
    e, p = np.meshgrid(np.arange(6), np.arange(len(probes)), indexing="ij")
    real = decide_by_decoding(sketch, enrolled, probes, e.ravel(), p.ravel())
    assert np.array_equal(got[0].ravel(), real[0]) and np.array_equal(got[1].ravel(), real[1])
    assert got[0].any() and not got[0].all() and got[1][:, -1].all()


def test_score_histograms_merge_exactly_and_give_the_det_of_the_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    gen, imp = rng.integers(0, 30, 200).astype(float), rng.integers(10, 60, 900).astype(float)
    parts = np.array_split(gen, 7)
    merged = reduce(lambda a, b: a.merge(b), [ScoreHistogram.of(p, upper=60) for p in parts])
    values, counts = np.unique(gen, return_counts=True)
    assert merged.values.tolist() == values.tolist() and merged.counts.tolist() == counts.tolist()
    assert merged.mean == pytest.approx(gen.mean(), rel=1e-12)
    ih = ScoreHistogram.of(imp, upper=60)
    thr, rej, acc, g, i = det_from_counts(merged.values, merged.counts, ih.values, ih.counts)
    fmr, fnmr, thresholds = det_from_scores(gen, imp)
    assert np.array_equal(thr, thresholds) and np.array_equal(acc / i, fmr) and np.array_equal(rej / g, fnmr)
    # Beyond MAX_DISTINCT values: the grid, the same whichever way the parts are merged.
    monkeypatch.setattr(tally, "MAX_DISTINCT", 10)
    real = rng.random(500) * 60
    chunks = [ScoreHistogram.of(p, upper=60) for p in np.array_split(real, 9)]
    a = reduce(lambda x, y: x.merge(y), chunks)
    b = reduce(lambda x, y: y.merge(x), reversed(chunks))
    assert a.grid and np.array_equal(a.counts, b.counts) and a.total == 500
    edges = a.values
    for edge in edges[:: len(edges) // 50]:
        assert a.counts[edges <= edge].sum() == np.count_nonzero(real <= edge)


def test_baselines_from_histograms_equal_the_per_trial_scores(monkeypatch: pytest.MonkeyPatch) -> None:
    data = synthetic_vectors(14, 4, 6, n=64, seed=6, model=VectorModel(spread=3, noise=1.5))
    small = evaluate_adapter("interval", {"n": 64, "features": 6}, data, [3], seed=0)
    from sketchauth.evaluate import error_rates

    monkeypatch.setattr(error_rates, "SCORE_FILE_LIMIT", 0)
    large = evaluate_adapter("interval", {"n": 64, "features": 6}, data, [3], seed=0)
    assert large.trial_labels is None
    for a, b in zip(small.baselines, large.baselines, strict=True):
        assert a.scores is not None and b.scores is None
        assert (a.eer, a.fnmr_at_target, a.fmr_at_target_fnmr) == pytest.approx(
            (b.eer, b.fnmr_at_target, b.fmr_at_target_fnmr)
        )
        assert np.array_equal(a.thresholds, b.thresholds)


@pytest.mark.parametrize("kind", ["interval", "thermometer"])
def test_pipeline_reports_stream_the_counts_of_real_decodes(kind: str) -> None:
    """The feature pipelines (``evaluate report --pipeline``): the streamed counts of every setting
    equal real encode → decode on every materialised pair of the plan."""
    from sketchauth.evaluate import fitting
    from sketchauth.evaluate.embeddings import EmbeddingPopulation
    from sketchauth.evaluate.error_rates import RunOptions, SweepSpec, evaluate_scheme
    from sketchauth.evaluate.pipelines.report_target import default_pipeline_sweep, pipeline_target

    population = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.4, seed=7)
    transform = fit_transform(population.draw(60, 4, seed=1), levels=16)
    heldout, data = population.draw(20, 4, seed=2), population.draw(14, 4, seed=3)
    kind_fitting = fitting.interval if kind == "interval" else fitting.thermometer
    pipeline = kind_fitting.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=0.05))
    target = pipeline_target(pipeline)
    sweep = default_pipeline_sweep(pipeline)
    result = evaluate_scheme(
        target.factory,
        target.enrol,
        data,
        sweep,
        run=RunOptions(jobs=2),
        sweep=SweepSpec(probe_fn=target.probe, decide=target.decide),
    )
    plan = plan_trials(data)
    pairs = np.hstack([plan.genuine, plan.impostor])
    probes = [target.probe(x) for x in data.samples]
    n_gen = plan.genuine_count
    for point, setting in zip(result.points, sweep, strict=True):
        sketch = target.factory(setting)
        enrolled = enrol_population(sketch, target.enrol, data, plan, setting)
        accepted, _ = decide_by_decoding(sketch, enrolled, probes, pairs[0], pairs[1])
        assert point.false_non_matches == n_gen - int(accepted[:n_gen].sum())
        assert point.false_matches == int(accepted[n_gen:].sum())
    assert result.decode_check["disagreements"] == 0


def test_report_says_when_the_score_files_are_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    from sketchauth.evaluate import error_rates
    from sketchauth.evaluate.report import EvaluationTarget, run_report

    monkeypatch.setattr(error_rates, "SCORE_FILE_LIMIT", 10)
    data = synthetic_vectors(12, 3, 4, n=64, seed=3, model=VectorModel(spread=3, noise=1.5))
    target = EvaluationTarget.from_scheme("interval", {"n": 64, "features": 4})
    report = run_report(target, data, [3], profile=None, crosscheck_trials=0, attack_tries=0)
    assert report.error_rates.trial_labels is None
    assert any("no per-trial score files" in n for n in report.notes)
