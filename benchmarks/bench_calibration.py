"""Calibration on new people: realised FMR against the target and the predicted interval, before → after.

For each data set the people (identities with at least two captures) are split once, by a seeded
permutation of the labels, into a **background** (two thirds) and **held-out people** (one third,
identity-disjoint). Every pipeline is calibrated on the background only, for FMR ``1e-2`` and
``1e-3``, then enrolled (first capture) and probed (the others) on the held-out people, all
impostor pairs counted with the pipeline's exact decision rule (the deciders of
:mod:`sketchauth.evaluate.fitting.calibration`, cross-checked against real encode → decode in the tests):

* **before** — the former protocol (``sketchauth features fit`` until this change): the transform
  fitted on 70% of the background identities, the setting chosen on the next 15% as the most
  permissive one with at most ``⌊target · I⌋`` of their ``I`` impostor trials accepted (the
  interval pipeline's tolerance path built and stopped on those same people);
* **after** — :mod:`sketchauth.evaluate.fitting.calibration`: the transform fitted on every background
  person, the setting chosen by identity-disjoint 5-fold cross-validation with the 95%
  Clopper–Pearson bound on design-effect counts ``≤ target`` (``for_target_fmr(..., refit=True)``).

On the real set the "after" protocol also runs on the raw embedding normalised and whitened
without an LDA (``projection="whiten", normalise=True``: the integrator's path).

Reported per data set, pipeline and target: realised FMR, realised / target, the predicted FMR and
its interval (after), whether the realised FMR lies in it, and the realised FNMR. The defaults
candidates (thermometer resolution, code-offset bits, asymmetric margin) are compared the same way.

Data: ``lfw-dlib`` (128-D dlib ResNet face descriptors of LFW, 610 people) and
``lfw-facenet-keras`` (512-D FaceNet embeddings of LFW faces, 213 people with two or more images):
real people, read from the local cache ``$SKETCHAUTH_EMBEDDINGS_DIR`` or
``~/.cache/sketchauth/embeddings`` as ``<name>.npz`` with arrays ``X`` and ``labels``; never
committed (``benchmarks/deep_embeddings.py`` holds the rebuild recipes); each skipped when absent
— and a synthetic population
(:class:`~sketchauth.evaluate.embeddings.EmbeddingPopulation`, 600 people × 4 captures).

Run: ``python benchmarks/bench_calibration.py`` → ``benchmarks/results/bench_calibration.json``.
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.timing import provenance, write_result
from sketchauth.errors import SketchAuthError
from sketchauth.evaluate.data import LabelledVectors
from sketchauth.evaluate.embeddings import EmbeddingPopulation
from sketchauth.evaluate.fitting import fit_pipeline
from sketchauth.evaluate.fitting.calibration import Calibration, Decider, _measure
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.evaluate.trials import projected_trials
from sketchauth.features.asymmetric import asymmetric_decider
from sketchauth.features.code_offset import _code_dims, code_offset_decider
from sketchauth.features.defaults import DEFAULTS
from sketchauth.features.interval import _abs_delta, interval_decider, tolerance_path
from sketchauth.features.thermometer import ThermometerPipeline, thermometer_decider
from sketchauth.features.transform import FeatureTransform, SmallPopulationWarning

TARGETS = (1e-2, 1e-3)
KINDS = ("interval", "thermometer", "code-offset")
OUT = Path(__file__).resolve().parent / "results" / "bench_calibration.json"
#: Real embedding sets measured when cached (the first one also compares the defaults' candidates).
DEEP_SETS = ("lfw-dlib", "lfw-facenet-keras")


def _subset(data: LabelledVectors, labels: np.ndarray) -> LabelledVectors:
    mask = np.isin(data.identities, labels)
    return LabelledVectors(data.identities[mask], data.samples[mask])


def _split(data: LabelledVectors, share: float, seed: int) -> tuple[LabelledVectors, LabelledVectors]:
    labels = np.unique(data.identities)
    order = np.random.default_rng(seed).permutation(labels.size)
    cut = round(labels.size * share)
    return _subset(data, labels[order[:cut]]), _subset(data, labels[order[cut:]])


def _at_least(data: LabelledVectors, captures: int) -> LabelledVectors:
    labels, counts = np.unique(data.identities, return_counts=True)
    return _subset(data, labels[counts >= captures])


def _deep(name: str) -> LabelledVectors | None:
    root = Path(os.environ.get("SKETCHAUTH_EMBEDDINGS_DIR", Path.home() / ".cache" / "sketchauth" / "embeddings"))
    path = root / f"{name}.npz"
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as archive:
        x, labels = np.asarray(archive["X"], dtype=np.float64), np.asarray(archive["labels"]).astype(str)
    keep_labels, counts = np.unique(labels, return_counts=True)
    mask = np.isin(labels, keep_labels[counts >= 2])  # an identity needs an enrolment and a probe
    return LabelledVectors(labels[mask], x[mask])


def _decider(
    kind: str, transform: FeatureTransform, options: dict[str, Any], data: LabelledVectors
) -> tuple[Decider, Any]:
    """The kind's decider with a fixed model on ``transform`` (and the model for the interval path)."""
    m = options.get("enrol_samples", 1)
    if kind == "thermometer":
        draft = ThermometerPipeline.with_resolution(transform, enrol_samples=m, resolution=options["resolution"], t=1)
        return thermometer_decider(draft, enrol_samples=m, resolution=options["resolution"], refit=False), None
    if kind == "code-offset":
        dims = _code_dims(transform, options["code_bits"], None)
        t_max = max(1, (dims.size * options["code_bits"] // 8 - 1) // 2)
        return code_offset_decider(transform, dims, bits=options["code_bits"], t_max=t_max, refit=False), None
    if kind == "asymmetric-interval":
        return asymmetric_decider(transform, q=transform.levels, margin=options["margin"], refit=False), None
    decider = interval_decider(transform, enrol_samples=m, refit=False)
    return decider, (transform, tolerance_path(transform, data, enrol_samples=m))


def _rates(decider: Decider, model: Any, people: LabelledVectors, index: int, m: int) -> dict[str, float]:
    counts = _measure(decider, [(model, projected_trials(lambda x: x, people, m))], None)
    return {
        "fmr": int(counts.false_matches[index]) / counts.impostor_trials,
        "fnmr": int(counts.false_non_matches[index]) / counts.genuine_trials,
        "impostor_trials": counts.impostor_trials,
    }


def before(
    kind: str, background: LabelledVectors, people: LabelledVectors, target: float, options: dict[str, Any]
) -> dict[str, Any]:
    """The former protocol: 70% fit, 15% calibrate by the plain count ⌊target·I⌋, measured on ``people``."""
    fit, rest = _split(background, 0.7, 1)
    calibration, _check = _split(rest, 0.5, 2)
    transform = fit_transform(fit, levels=options["levels"], projection=options["projection"])
    if kind == "interval":
        # The former rule exactly: the path built on the calibration part, stopped at its own FMR.
        path = tolerance_path(transform, calibration, enrol_samples=1)
        step = path.step_for_fmr(target)
        box = Decider(
            grid=[step],
            score=lambda model, t, p: path.steps_needed(_abs_delta(t, p)),
            features=lambda model, trials: (
                transform.quantise(transform.project(trials.templates)),
                transform.quantise(transform.project(trials.probes)),
            ),
        )
        return {"setting": float(step), **_rates(box, None, people, 0, 1)}
    decider, model = _decider(kind, transform, options, calibration)
    counts = _measure(decider, [(model, projected_trials(lambda x: x, calibration, 1))], None)
    allowed = int(target * counts.impostor_trials)
    ok = np.flatnonzero(counts.false_matches <= allowed)
    if ok.size == 0:
        return {"unavailable": f"no setting with at most {allowed} false matches"}
    index = int(ok[np.argmin(counts.false_non_matches[ok])])
    return {"setting": float(np.asarray(decider.grid)[index]), **_rates(decider, model, people, index, 1)}


def after(
    kind: str, background: LabelledVectors, people: LabelledVectors, target: float, options: dict[str, Any]
) -> dict[str, Any]:
    """Calibrated by cross-validation on every background person; measured on ``people``."""
    transform = fit_transform(
        background,
        levels=options["levels"],
        projection=options["projection"],
        normalise=options.get("normalise", False),
    )
    pipeline = fit_pipeline(
        kind,
        transform,
        background,
        CalibrationOptions(
            target_fmr=target,
            refit=True,
            resolution=options["resolution"],
            code_bits=options["code_bits"],
            margin=options["margin"],
            enrol_samples=options.get("enrol_samples", 1),
        ),
    )
    calibration: Calibration | None = pipeline.calibration
    assert calibration is not None
    realised = calibration.realised(people, enrol_samples=options.get("enrol_samples", 1))
    return {
        "setting": float(calibration.point),
        "predicted_fmr": calibration.fmr,
        "predicted_fmr_interval": list(calibration.fmr_interval),
        "predicted_fmr_upper": calibration.fmr_upper,
        "predicted_fnmr": calibration.fnmr,
        "fmr": realised["fmr"],
        "fnmr": realised["fnmr"],
        "impostor_trials": realised["impostor_trials"],
        "fmr_within_predicted_interval": realised["fmr_within_predicted_interval"],
        "fmr_prediction_interval": realised["fmr_prediction_interval"],
        "fmr_within_prediction_interval": realised["fmr_within_prediction_interval"],
    }


def measure(name: str, data: LabelledVectors, options: dict[str, Any], kinds: tuple[str, ...]) -> dict[str, Any]:
    background, people = _split(data, 2 / 3, 0)
    rows = []
    for kind in kinds:
        for target in TARGETS:
            row: dict[str, Any] = {"data": name, "pipeline": kind, "target_fmr": target}
            runs = [("before", before, options), ("after", after, options)]
            if name != "synthetic":
                # Item of the integrator's path: the raw deep embedding, normalised and whitened without LDA.
                runs.append(("after_whiten_normalise", after, {**options, "projection": "whiten", "normalise": True}))
            for label, run, chosen in runs:
                start = time.perf_counter()
                try:
                    result = run(kind, background, people, target, chosen)
                except SketchAuthError as exc:
                    result = {"unavailable": str(exc)}
                if "fmr" in result:
                    result["fmr_over_target"] = result["fmr"] / target
                result["seconds"] = round(time.perf_counter() - start, 2)
                row[label] = result
            rows.append(row)
            print(_line(row), flush=True)
    return {
        "background_identities": int(np.unique(background.identities).size),
        "heldout_identities": int(np.unique(people.identities).size),
        "options": options,
        "rows": rows,
    }


def _line(row: dict[str, Any]) -> str:
    def cell(r: dict[str, Any]) -> str:
        if "fmr" not in r:
            return "unavailable"
        return f"FMR {r['fmr']:.2e} ({r['fmr_over_target']:.2f}x) FNMR {r['fnmr']:.3f}"

    head = f"{row['data']:>10} {row['pipeline']:>12} {row['target_fmr']:g}"
    tail = f" | whiten {cell(row['after_whiten_normalise'])}" if "after_whiten_normalise" in row else ""
    return f"{head}: before {cell(row['before'])} | after {cell(row['after'])}{tail}"


def main() -> None:
    warnings.simplefilter("ignore", SmallPopulationWarning)
    defaults = {
        "levels": 16,
        "projection": DEFAULTS.projection,
        "resolution": DEFAULTS.thermometer_resolution,
        "code_bits": DEFAULTS.code_bits,
        "margin": DEFAULTS.asymmetric_margin,
    }
    result: dict[str, Any] = {**provenance("bench_calibration"), "targets": list(TARGETS), "sets": {}}
    sets = {name: data for name in DEEP_SETS if (data := _deep(name)) is not None}
    sets["synthetic"] = EmbeddingPopulation(seed=0).draw(600, 4, seed=1)
    for name, data in sets.items():
        result["sets"][name] = measure(name, data, defaults, KINDS)
    # The defaults' candidates, measured the same way (after only): on the real set when present.
    name, data = next(iter(sets.items()))
    candidates = []
    for resolution in (0.15, 0.2, 0.3):
        candidates.append(("thermometer", {**defaults, "resolution": resolution}))
    for bits in (1, 2):
        candidates.append(("code-offset", {**defaults, "code_bits": bits}))
    for margin in (1, 3):
        candidates.append(("asymmetric-interval", {**defaults, "margin": margin, "enrol_samples": 2}))
    result["defaults_candidates"] = []
    for kind, options in candidates:
        m = options.get("enrol_samples", 1)
        background, people = _split(_at_least(data, m + 1), 2 / 3, 0)
        try:
            row = after(kind, background, people, 1e-2, options)
        except SketchAuthError as exc:
            row = {"unavailable": str(exc)}
        entry = {"data": name, "pipeline": kind, "options": options, "target_fmr": 1e-2, **row}
        result["defaults_candidates"].append(entry)
        print(kind, options, {k: row.get(k) for k in ("fmr", "fnmr", "unavailable")}, flush=True)
    write_result(OUT, result, echo=False)


if __name__ == "__main__":
    main()
