"""The ``sketchauth features`` command group (argparse only at import: heavy imports in handlers).

Every function-level import below is there for command-line start-up cost (each says
``start-up``): building the parser must not load numpy or the feature modules.

* ``features synth`` — write a synthetic labelled population (:mod:`sketchauth.evaluate.embeddings`)
  as CSV, for trying the walk-through without real data;
* ``features fit`` — fit a :class:`~sketchauth.features.transform.FeatureTransform` on a background
  CSV/NPZ, calibrate pipelines on held-out background identities, print a summary (dimensions,
  bits, expected FNMR/FMR on background identities used neither for fitting nor calibration) and
  optionally write pipeline configurations for the service (``--pipelines DIR``);
* ``features evaluate`` — the table and DET plot of :mod:`sketchauth.evaluate.pipelines.evaluation` for a
  fitted transform on an evaluation set of people outside the background.

Background identities are split by a seeded permutation of their labels into *fit* (``1 −
holdout``), *calibration* and *check* (half of ``holdout`` each); the split parameters are
recorded in the transform's ``training`` block so ``features evaluate`` can rebuild it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sketchauth.cli._codesize import GivenAction, code_size_type
from sketchauth.cli._common import SubParsers, add_quiet, show_progress
from sketchauth.errors import ParameterError, SketchAuthError

if TYPE_CHECKING:
    from sketchauth.evaluate.fitting.options import CalibrationOptions
    from sketchauth.evaluate.trials import ProjectedTrials
    from sketchauth.features.pipeline import (
        AngularPipeline,
        AsymmetricIntervalPipeline,
        CodeOffsetPipeline,
        IntervalPipeline,
        ThermometerPipeline,
    )

    #: The pipelines ``features fit`` calibrates.
    CalibratedPipeline = (
        IntervalPipeline | ThermometerPipeline | CodeOffsetPipeline | AsymmetricIntervalPipeline | AngularPipeline
    )

__all__ = ["add", "split_background"]


SPLITS = ("identities", "samples")


def _min_identities(holdout: float) -> int:
    """Smallest population whose identity split leaves 2 identities to fit, calibrate and check."""
    j = 6
    while True:
        cut = round(j * (1.0 - holdout))
        middle = cut + (j - cut) // 2
        if cut >= 2 and middle - cut >= 2 and j - middle >= 2:
            return j
        j += 1


def split_background(
    data: Any,
    holdout: float,
    seed: int,
    *,
    by: str = "identities",
    source: str = "the background data",
    enrol_samples: int = 1,
) -> tuple[Any, Any, Any]:
    """(fit, calibration, check) subsets of a background population.

    ``by="identities"`` (open set): a seeded permutation of the labels; ``1 − holdout`` of the
    identities fit the transform, the rest are halved into calibration and check, so calibration
    and check measure people the transform never saw. ``by="samples"`` (closed set, for small
    populations): every identity's samples, in file order, are split ``1 − holdout`` / half / half,
    so all three parts hold the same people — the expected rates are then optimistic.
    Errors name ``source``, the part that is too small and what would be enough.
    """
    # start-up: numpy and the feature modules load only when this command runs.
    import numpy as np

    from sketchauth.evaluate.data import LabelledVectors, rows_by_identity

    if not 0.0 < holdout < 1.0:
        raise ParameterError(f"holdout must be in (0, 1), got {holdout!r}")
    if by not in SPLITS:
        raise ParameterError(f"the calibration split must be one of {', '.join(SPLITS)}, got {by!r}")
    names = ("fit", "calibration", "check")
    if by == "identities":
        labels = np.unique(data.identities)
        order = np.random.default_rng(seed).permutation(labels.size)
        cut = round(labels.size * (1.0 - holdout))
        middle = cut + (labels.size - cut) // 2
        parts = (labels[order[:cut]], labels[order[cut:middle]], labels[order[middle:]])
        sizes = [p.size for p in parts]
        if min(sizes) < 2:
            raise ParameterError(
                f"{source}: {labels.size} identities split by identity (holdout {holdout:g}) leave "
                + ", ".join(f"{n} for {name}" for n, name in zip(sizes, names, strict=False))
                + f"; each part needs at least 2 identities. Use at least {_min_identities(holdout)} identities, "
                "or --calibration-split samples (closed set: the parts share people; the summary says so)"
            )
        masks = [np.isin(data.identities, part) for part in parts]
    else:
        masks = [np.zeros(len(data.identities), dtype=bool) for _ in names]
        need = max(2, enrol_samples + 1)
        for label, rows in rows_by_identity(data.identities):
            cut = round(rows.size * (1.0 - holdout))
            middle = cut + (rows.size - cut) // 2
            pieces = (rows[:cut], rows[cut:middle], rows[middle:])
            short = [name for name, piece in zip(names, pieces, strict=False) if piece.size < need]
            if short:
                raise ParameterError(
                    f"{source}: identity {label} has {rows.size} samples; split by samples (holdout {holdout:g}) its "
                    f"{short[0]} part gets {pieces[names.index(short[0])].size}, and every part needs at least {need} "
                    f"({enrol_samples} to enrol + 1 probe). Give each identity at least "
                    f"{_min_samples(holdout, need)} samples, lower --enrol-samples, or drop that identity"
                )
            for mask, piece in zip(masks, pieces, strict=False):
                mask[piece] = True
    return tuple(LabelledVectors(data.identities[m], data.samples[m]) for m in masks)  # type: ignore[return-value]


def _min_samples(holdout: float, need: int) -> int:
    n = need
    while True:
        cut = round(n * (1.0 - holdout))
        middle = cut + (n - cut) // 2
        if min(cut, middle - cut, n - middle) >= need:
            return n
        n += 1


def _synth(args: argparse.Namespace) -> int:
    # start-up: numpy and the feature modules load only when this command runs.
    import numpy as np

    from sketchauth.evaluate.embeddings import EmbeddingPopulation

    population = EmbeddingPopulation(seed=args.population_seed)
    data = population.draw(args.identities, args.samples, seed=args.seed)
    labels = np.char.add(f"{args.prefix}", data.identities.astype(str))
    with open(args.out, "w", encoding="utf-8") as out:
        out.write("identity," + ",".join(f"f{j}" for j in range(data.features)) + "\n")
        for label, row in zip(labels.tolist(), data.samples, strict=False):
            out.write(label + "," + ",".join(f"{v:.6g}" for v in row) + "\n")
    print(f"{args.identities} identities x {args.samples} samples x {data.features} features -> {args.out}")
    return 0


def _rates(genuine: Any, impostor: Any, t: float) -> dict[str, Any]:
    # start-up: numpy and the feature modules load only when this command runs.
    import numpy as np

    from sketchauth.evaluate.rates import RatePoint

    point = RatePoint.from_counts(
        t, int(np.count_nonzero(genuine > t)), genuine.size, int(np.count_nonzero(impostor <= t)), impostor.size
    )
    return {k: point.to_dict()[k] for k in ("fnmr", "fnmr_ci", "fmr", "fmr_ci", "genuine_trials", "impostor_trials")}


class _Stages:
    """Progress of a long command, on stderr: a tqdm bar on a terminal, otherwise one line as each
    stage starts (so a run under a job scheduler or a pipe shows where it is); nothing with ``--quiet``."""

    def __init__(self, desc: str, names: list[str], args: argparse.Namespace) -> None:
        # start-up: tqdm loads only when a long command runs.
        from tqdm import tqdm

        self.desc, self.names, self.index = desc, names, 0
        self.lines = not args.quiet and not sys.stderr.isatty()
        self.bar = tqdm(total=len(names), desc=desc, unit="stage", file=sys.stderr, disable=not show_progress(args))

    def next(self) -> None:
        """Close the current stage (if any) and start the next one."""
        if self.index:
            self.bar.update()
        if self.index < len(self.names):
            name = self.names[self.index]
            self.bar.set_postfix_str(name)
            if self.lines:
                print(f"{self.desc} [{self.index + 1}/{len(self.names)}]: {name}", file=sys.stderr, flush=True)
        self.index += 1

    def close(self) -> None:
        self.bar.close()


def _kinds(args: argparse.Namespace) -> list[str]:
    """The kinds ``features fit`` calibrates: ``--kinds`` (a comma list), else every kind the protocol allows."""
    # start-up: the fitting registry loads only when this command runs.
    from sketchauth.evaluate.fitting import CALIBRATED_KINDS, parse_kinds

    if args.kinds is not None:
        kinds = list(parse_kinds(args.kinds))
        if "asymmetric-interval" in kinds and args.enrol_samples < 2:
            raise ParameterError("the asymmetric-interval pipeline enrols from at least 2 samples: --enrol-samples 2")
        return kinds
    return [kind for kind in CALIBRATED_KINDS if kind != "asymmetric-interval" or args.enrol_samples > 1]


def _one_blas_thread() -> None:
    """One BLAS thread for this process unless the environment says otherwise (before numpy loads).

    The calibration simulates an enrolment per background person (the angular pipeline draws a Haar
    rotation: a QR of a ``d × d`` matrix); OpenBLAS's default threads make each take seconds instead
    of milliseconds on a shared machine. ``OPENBLAS_NUM_THREADS`` / ``OMP_NUM_THREADS`` set by the
    caller win; with numpy already loaded (an in-process caller) this changes nothing.
    """
    if "numpy" not in sys.modules:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(name, "1")


def _fit(args: argparse.Namespace) -> int:
    _one_blas_thread()
    kinds = _kinds(args)
    stages = _Stages("features fit", ["load data", "fit the transform", *[f"calibrate {k}" for k in kinds]], args)
    try:
        stages.next()
        parts = _fit_parts(args)
        stages.next()
        summary: dict[str, Any] = {}
        transform = _fit_recorded_transform(args, parts[0], summary)
        pipelines = _calibrate_kinds(args, kinds, transform, parts[1], summary, stages)
        stages.next()
    finally:
        stages.close()
    Path(args.out).write_text(transform.to_json() + "\n", encoding="utf-8")
    _write_pipelines(args, pipelines, summary)
    summary.update(_fit_summary(args, transform, pipelines, parts))
    print(json.dumps(summary, indent=2))
    return 0


def _fit_parts(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(fit, calibration, check) people of ``--data`` by ``--calibration-split``."""
    # start-up: numpy and the feature modules load only when this command runs.
    from sketchauth.evaluate.data import load_vectors

    data = load_vectors(args.data)
    if args.calibration_split == "identities":
        # Open set by cross-validation: the transform is fitted on every background person and each
        # fold of the calibration refits it without the fold's people (evaluate.fitting.calibration).
        return data, data, None
    return split_background(
        data,
        args.holdout,
        args.seed,
        by=args.calibration_split,
        source=str(args.data),
        enrol_samples=args.enrol_samples,
    )


def _fit_recorded_transform(args: argparse.Namespace, fit: Any, summary: dict[str, Any]) -> Any:
    """The transform fitted on ``fit``, its warnings said (stderr and summary), the split recorded in ``training``."""
    # start-up: numpy and the feature modules load only when this command runs.
    from sketchauth.evaluate.fitting.transform import SmallPopulationWarning, fit_transform
    from sketchauth.features.transform import FeatureTransform

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", SmallPopulationWarning)
        transform = fit_transform(
            fit,
            levels=args.levels,
            dimensions=args.dimensions,
            min_fisher_ratio=args.min_fisher_ratio,
            projection=args.projection,
            normalise=args.normalise,
        )
    cross_validated = args.calibration_split == "identities"
    part = "all identities" if cross_validated else "fit part"
    for warning in caught:
        _warn(summary, f"{args.data}, {part}: {warning.message}")
    training = dict(transform.training)
    training.update({"split_seed": args.seed, "calibration_split": args.calibration_split})
    training.update({"folds": args.folds} if cross_validated else {"holdout": args.holdout})
    return FeatureTransform(
        transform.mean, transform.scale, transform.projection, transform.fisher_ratios, transform.edges, training
    )


def _warn(summary: dict[str, Any], text: str) -> None:
    """A warning on stderr and in the summary's ``warnings``."""
    summary.setdefault("warnings", []).append(text)
    print(f"warning: {text}", file=sys.stderr)


def _calibrate_kinds(
    args: argparse.Namespace,
    kinds: list[str],
    transform: Any,
    calibration: Any,
    summary: dict[str, Any],
    stages: _Stages,
) -> dict[str, CalibratedPipeline]:
    """Each kind calibrated; one the data cannot support is reported unavailable with its reason, one
    predicted to reject most genuine users is marked unusable (and said so)."""
    # start-up: numpy and the feature modules load only when this command runs.
    from sketchauth.cli._codesize import CodeSizeRefusedError, fit_angular
    from sketchauth.evaluate.fitting import fit_pipeline, unusable_reason

    options = _options(
        args, enrol_samples=args.enrol_samples, refit=args.calibration_split == "identities", folds=args.folds
    )
    pipelines: dict[str, CalibratedPipeline] = {}
    for kind in kinds:
        stages.next()
        try:
            if kind == "angular":
                pipeline = fit_angular(args, transform, calibration, options, summary)
            else:
                pipeline = fit_pipeline(kind, transform, calibration, options)
        except CodeSizeRefusedError:
            raise
        except SketchAuthError as exc:
            summary[kind] = {"unavailable": str(exc)}
            continue
        pipeline.unusable = unusable_reason(pipeline)
        if pipeline.unusable is not None:
            keep = "written marked unusable (--keep-unusable)" if args.keep_unusable else "not written"
            _warn(summary, f"pipeline {kind} is unusable: {pipeline.unusable}; {keep}")
        note = pipeline.calibration.to_dict().get("small_background") if pipeline.calibration else None
        if note:
            _warn(summary, f"pipeline {kind}: {note}")
        pipelines[kind] = pipeline
    return pipelines


def _write_pipelines(
    args: argparse.Namespace, pipelines: dict[str, CalibratedPipeline], summary: dict[str, Any]
) -> None:
    """``--pipelines DIR``: each pipeline's JSON; an unusable one only with ``--keep-unusable``."""
    if not args.pipelines:
        return
    directory = Path(args.pipelines)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, pipeline in pipelines.items():
        if pipeline.unusable is not None and not args.keep_unusable:
            continue
        (directory / f"{name}.json").write_text(pipeline.to_json() + "\n", encoding="utf-8")
        written.append(name)
    summary["written"] = written
    summary["left_from_earlier"] = _left_from_earlier(directory, written)


def _left_from_earlier(directory: Path, written: list[str]) -> list[str]:
    """The pipeline files in ``directory`` this fit did not write, each named in a warning.

    The service serves every ``<name>.json`` of its pipelines directory: one an earlier fit left
    (another transform, or a kind this fit found unusable or was not asked for) would be served
    beside the new ones.
    """
    left = sorted(path.name for path in directory.glob("*.json") if path.stem not in written)
    for name in left:
        print(
            f"warning: {directory / name} was not written by this fit (an earlier one left it) and would be "
            f"served beside the new pipelines: remove it, or fit into an empty directory",
            file=sys.stderr,
        )
    return left


def _fit_summary(
    args: argparse.Namespace, transform: Any, pipelines: dict[str, CalibratedPipeline], parts: tuple[Any, Any, Any]
) -> dict[str, Any]:
    """The JSON summary of ``features fit`` (transform, protocol, and per pipeline its figures)."""
    # start-up: numpy and the feature modules load only when this command runs.
    import numpy as np

    from sketchauth.evaluate.trials import projected_trials

    _, calibration, check = parts
    training = transform.training
    expected = {}
    if check is not None:
        trials = projected_trials(transform.project, check, args.enrol_samples)
        expected = {
            n: _expected(p, trials) for n, p in pipelines.items() if n not in ("asymmetric-interval", "angular")
        }
    summary = {
        "transform": str(args.out),
        "background": {k: training[k] for k in ("identities", "samples", "features")},
        "protocol": _protocol_text(args),
        "calibration_identities": int(np.unique(calibration.identities).size),
        "kept_dimensions": transform.dimensions,
        "projection": transform.projection_kind,
        "normalise": transform.normalises,
        "levels": transform.levels,
        "bits_per_dimension": transform.level_bits,
        "fisher_ratios_top": [round(float(x), 3) for x in transform.fisher_ratios[:8]],
        "shrinkage": round(float(training["shrinkage"]), 6),
        "enrol_samples": args.enrol_samples,
        "pipelines": {name: _pipeline_summary(p, expected.get(name)) for name, p in pipelines.items()},
    }
    if check is not None:
        summary["check_identities"] = int(np.unique(check.identities).size)
    return summary


def _protocol_text(args: argparse.Namespace) -> str:
    if args.calibration_split == "identities":
        return (
            f"open set by {args.folds}-fold identity-disjoint cross-validation over every background identity "
            "(leave-one-person-out when a fold would hold fewer than 2 people; each fold's transform refitted "
            "without its people; impostor pairs across folds scored by a transform fitted without either); "
            "predicted rates carry Clopper-Pearson intervals"
        )
    return (
        "closed set: the calibration and check parts are later samples of the people the transform "
        "was fitted on (split by samples); predicted and expected rates are OPTIMISTIC"
    )


def _pipeline_summary(pipeline: CalibratedPipeline, expected: dict[str, Any] | None) -> dict[str, Any]:
    """One pipeline's entry in the summary."""
    entry: dict[str, Any] = {
        "scheme": pipeline.sketch.scheme_name,
        "params": _summary_params(pipeline),
        "loss_bound_bits": round(pipeline.report().loss_bound_bits, 1),
        "secret_bits": round(pipeline.secret_bits, 1),
        "predicted_on_new_people": pipeline.calibration.to_dict() if pipeline.calibration else None,
    }
    if pipeline.unusable is not None:
        entry["unusable"] = pipeline.unusable
    if expected is not None:
        entry["expected_on_check_optimistic"] = expected
    if pipeline.kind == "angular":
        entry["decode_failures"] = getattr(pipeline, "decode_failures", None)
        entry["several_captures"] = _captures_summary(pipeline)
    return entry


def _captures_summary(pipeline: Any) -> dict[str, Any]:
    """Per number of captures (2, 3): the threshold an attempt of that many is decided at and how it
    was chosen, or why it keeps the one-capture threshold."""
    out: dict[str, Any] = {}
    for k, record in sorted(getattr(pipeline, "captures_calibration", {}).items()):
        if isinstance(record, str):
            out[str(k)] = {"min_cos": pipeline.sketch.min_cos, "not_calibrated": record}
        else:
            out[str(k)] = {"min_cos": pipeline.captures_min_cos[k], "predicted_on_new_people": record.to_dict()}
    return out


def _options(args: argparse.Namespace, *, enrol_samples: int, refit: bool, folds: int) -> CalibrationOptions:
    """The calibration options of ``features fit``/``evaluate`` from their flags (one place)."""
    # start-up: numpy and the feature modules load only when this command runs.
    from sketchauth.evaluate.fitting.options import CalibrationOptions
    from sketchauth.features.defaults import DEFAULTS

    return CalibrationOptions(
        target_fmr=args.target_fmr,
        enrol_samples=enrol_samples,
        folds=folds,
        confidence=getattr(args, "confidence", DEFAULTS.confidence),
        refit=refit,
        resolution=args.resolution,
        code_bits=args.code_bits,
        margin=args.asymmetric_margin,
        security_bits=args.security_bits,
        code=args.angular_code,
    )


def _summary_params(pipeline: CalibratedPipeline) -> dict[str, Any]:
    """The sketch parameters the summary shows (an interval sketch's per-dimension ``v`` left out)."""
    if pipeline.kind == "interval":
        return {"n": pipeline.transform.levels, "dims": int(pipeline.dims.size)}
    return dict(pipeline.sketch.params())


def _expected(pipeline: CalibratedPipeline, trials: ProjectedTrials) -> dict[str, Any]:
    """FNMR/FMR of a calibrated pipeline on the check identities (scores as in evaluation)."""
    # start-up: numpy and the feature modules load only when this command runs.
    import numpy as np

    from sketchauth.evaluate.fitting.code_offset import byte_error_scores
    from sketchauth.evaluate.fitting.interval import abs_delta
    from sketchauth.evaluate.fitting.thermometer import trial_distances
    from sketchauth.evaluate.trials import pair_scores
    from sketchauth.features.code_offset import CodeOffsetPipeline
    from sketchauth.features.interval import IntervalPipeline
    from sketchauth.features.thermometer import ThermometerPipeline

    transform = pipeline.transform
    if isinstance(pipeline, IntervalPipeline):
        t_lv, p_lv = transform.quantise(trials.templates), transform.quantise(trials.probes)
        v = np.full(transform.dimensions, transform.levels)
        v[pipeline.dims] = pipeline.tolerances
        genuine, impostor = pair_scores(
            t_lv, p_lv, trials.owner, lambda a, b: np.any(abs_delta(a, b) >= v, axis=-1).astype(np.int64)
        )
        return _rates(genuine, impostor, 0)
    if isinstance(pipeline, ThermometerPipeline):
        return _rates(*trial_distances(pipeline, trials), pipeline.sketch.t)
    if not isinstance(pipeline, CodeOffsetPipeline):
        raise ParameterError(f"no check-part rates for pipeline kind {pipeline.kind!r}")
    genuine, impostor = byte_error_scores(transform, trials, pipeline.bits, pipeline.dims)
    return _rates(genuine, impostor, pipeline.sketch.t)


def _evaluate(args: argparse.Namespace) -> int:
    _one_blas_thread()
    # start-up: numpy and the feature modules load only when this command runs.
    from tqdm import tqdm

    from sketchauth.cli._codesize import evaluation_angular
    from sketchauth.evaluate.pipelines.evaluation import EvaluationChecks, evaluate_pipelines
    from sketchauth.features.defaults import DEFAULTS
    from sketchauth.features.transform import FeatureTransform

    with tqdm(total=5, desc="features evaluate", unit="step", file=sys.stderr, disable=not show_progress(args)) as bar:
        transform = FeatureTransform.from_json(Path(args.transform).read_text(encoding="utf-8"))
        training = transform.training
        calibration, set_kind, cross_validated = _evaluation_background(args, transform)
        data = _evaluation_data(args)
        if set_kind is None:
            set_kind = _set_kind(data, calibration)
        loaded = _load_pipelines(args, transform)
        bar.update()
        kinds = ["interval", "code-offset", "thermometer"] + (["asymmetric-interval"] if args.enrol_samples > 1 else [])
        options = _options(
            args,
            enrol_samples=args.enrol_samples,
            refit=cross_validated,
            folds=int(training.get("folds", DEFAULTS.folds)),
        )
        angular, curve, why = evaluation_angular(args, transform, calibration, data, options, loaded.get("angular"))
        bar.update()
        checks = EvaluationChecks(
            attack_people=args.attack_people, attack_tries=args.attack_tries, decode_checks=args.decode_checks
        )
        result = evaluate_pipelines(
            transform,
            calibration,
            data,
            kinds=kinds,
            options=options,
            set_kind=set_kind,
            checks=checks,
            angular=angular,
        )
        unavailable = (*result.unavailable, ("angular", why)) if why else result.unavailable
        result = replace(result, unavailable=unavailable, code_size=curve)
        bar.update()
        if loaded:
            result = _measure_loaded(args, result, loaded, data, set_kind)
        else:
            result = _calibrated(args, result, (transform, calibration), data, options, angular)
        bar.update()
        _write_evaluation(args, result)
        bar.update()
    print(result.table())
    result.require_exact()  # a row whose rule is not the scheme's fails the run (after the report is written)
    return 0


def _evaluation_background(args: argparse.Namespace, transform: Any) -> tuple[Any, str | None, bool]:
    """(the background part that calibrates, ``"closed"`` if known already else ``None``, cross-validated)."""
    # start-up: numpy and the feature modules load only when this command runs.
    import numpy as np

    from sketchauth.evaluate.data import LabelledVectors, load_vectors

    training = transform.training
    background = load_vectors(args.background)
    cross_validated = str(training.get("calibration_split", "identities")) == "identities" and "folds" in training
    if cross_validated:
        # Fitted on every background identity ('features fit' default): the whole background calibrates.
        return background, None, True
    fit, calibration, check = split_background(
        background,
        float(training.get("holdout", 0.3)),
        int(training.get("split_seed", 0)),
        by=str(training.get("calibration_split", "identities")),
        source=str(args.background),
        enrol_samples=args.enrol_samples,
    )
    # Both held-out parts build the interval path here: nothing is being checked on them.
    calibration = LabelledVectors(
        np.concatenate([calibration.identities, check.identities]),
        np.concatenate([calibration.samples, check.samples]),
    )
    data = _evaluation_data(args)
    return calibration, _set_kind(data, fit), False


def _set_kind(data: Any, fit: Any) -> str:
    """Closed set when the transform was fitted on any of the people evaluated here."""
    # start-up: numpy loads only when this command runs.
    import numpy as np

    seen = np.intersect1d(np.unique(data.identities).astype(str), np.unique(fit.identities).astype(str))
    return "closed" if seen.size else "open"


def _load_pipelines(args: argparse.Namespace, transform: Any) -> dict[str, Any]:
    """``--pipelines DIR``: what ``features fit`` wrote, on this transform; one marked unusable only with
    ``--keep-unusable`` (the service refuses to serve it)."""
    if not args.pipelines:
        return {}
    # start-up: the feature modules load only when this command runs.
    from sketchauth.features.loading import load_pipelines

    pipelines = load_pipelines(args.pipelines)
    if not pipelines:
        raise ParameterError(f"--pipelines {args.pipelines}: no pipeline configuration (<name>.json) in it")
    kept = {}
    for name, pipeline in sorted(pipelines.items()):
        if pipeline.transform.fingerprint != transform.fingerprint:
            raise ParameterError(
                f"--pipelines {args.pipelines}: {name}.json was fitted on another transform than {args.transform}"
            )
        if pipeline.unusable is not None and not args.keep_unusable:
            print(f"warning: {name}.json is marked unusable ({pipeline.unusable}); skipped", file=sys.stderr)
            continue
        kept[name] = pipeline
    return kept


def _measure_loaded(args: argparse.Namespace, result: Any, loaded: dict[str, Any], data: Any, set_kind: str) -> Any:
    """``--pipelines DIR``: the pipelines ``fit`` wrote, measured as written on ``data`` (no recalibration)."""
    # start-up: the evaluation modules load only when this command runs.
    from sketchauth.evaluate.pipelines.loaded import measure_loaded
    from sketchauth.evaluate.protocol import Protocol

    protocol = Protocol(args.enrol_samples, set_kind, data.split_column)
    rows = [measure_loaded(n, p, data, protocol, checks=args.decode_checks) for n, p in loaded.items()]
    return replace(result, loaded=tuple(rows))


def _calibrated(
    args: argparse.Namespace,
    result: Any,
    background: tuple[Any, Any],
    data: Any,
    options: CalibrationOptions,
    angular: Any,
) -> Any:
    """Each kind calibrated on the background (``background``: the transform and its calibration people)
    and measured on ``data``; the angular one at the code size of its row."""
    # start-up: the evaluation modules load only when this command runs.
    from sketchauth.evaluate.fitting.calibrated import heldout_check

    transform, calibration = background
    kinds = ["interval", "code-offset", "thermometer"] + (["asymmetric-interval"] if args.enrol_samples > 1 else [])
    if angular is not None and hasattr(angular.sketch, "bits"):
        kinds.append("angular")
        options = options.but(security_bits=angular.sketch.bits, match_threshold=False)
    # The honest figures: settings chosen on the background, measured on these people.
    return replace(result, calibrated=tuple(heldout_check(transform, calibration, data, kinds=kinds, options=options)))


def _write_evaluation(args: argparse.Namespace, result: Any) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "features.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
    (out / "features.md").write_text(result.table(), encoding="utf-8")
    if not args.no_plot:
        result.plot(out / "features_det.png")


def _evaluation_data(args: argparse.Namespace) -> Any:
    """``--data`` (roles by row order or its split column), or ``--data`` enrols and ``--probe-data`` probes."""
    # start-up: numpy and the feature modules load only when this command runs.
    import numpy as np

    from sketchauth.evaluate.data import LabelledVectors, load_vectors

    data = load_vectors(args.data)
    if args.probe_data is None:
        return data
    probes = load_vectors(args.probe_data)
    if probes.features != data.features:
        raise ParameterError(f"{args.probe_data} has {probes.features} features but {args.data} has {data.features}")
    if data.identities.dtype.kind != probes.identities.dtype.kind:
        raise ParameterError(f"{args.data} and {args.probe_data} label identities differently (numbers vs text)")
    split = np.array(["enrol"] * len(data.identities) + ["probe"] * len(probes.identities))
    return LabelledVectors(
        np.concatenate([data.identities, probes.identities]),
        np.vstack([data.samples, probes.samples]),
        split,
        f"files: {Path(args.data).name} enrols, {Path(args.probe_data).name} probes",
    )


def add(sub: SubParsers) -> None:  # type: ignore[type-arg]
    """Add the ``features`` group and its sub-commands to the top-level parser."""
    p = sub.add_parser("features", help="feature preparation: fit transforms, build and evaluate pipelines")
    group = p.add_subparsers(dest="features_command", required=True, metavar="FEATURES")
    _add_synth(group)
    _add_fit(group)
    _add_evaluate(group)


def _add_synth(group: Any) -> None:
    s = group.add_parser("synth", help="write a synthetic labelled embedding population as CSV")
    s.add_argument("--out", required=True, help="CSV to write (identity,f0,f1,...)")
    s.add_argument("--identities", type=int, default=600, help="identities (default 600)")
    s.add_argument("--samples", type=int, default=6, help="samples per identity (default 6)")
    s.add_argument("--seed", type=int, default=1, help="seed of the people drawn (default 1)")
    s.add_argument("--population-seed", type=int, default=0, help="seed of the population model (default 0)")
    s.add_argument("--prefix", default="id", help="identity label prefix (default 'id')")
    s.set_defaults(func=_synth)


def _add_fit(group: Any) -> None:
    # The one set of defaults the Python API reads too (a dataclass: no numpy at start-up).
    from sketchauth.features.defaults import DEFAULTS as D

    f = group.add_parser("fit", help="fit a feature transform on background data and calibrate pipelines")
    f.add_argument("--data", required=True, help="background population: CSV (identity,f1,...) or NPZ / NPY")
    f.add_argument("--out", required=True, help="transform JSON to write")
    f.add_argument(
        "--pipelines", metavar="DIR", help="also write the calibrated pipelines' JSON here (for the service)"
    )
    f.add_argument(
        "--kinds",
        metavar="KIND[,KIND]",
        help="calibrate only these pipeline kinds, a comma list of interval, thermometer, code-offset, "
        "asymmetric-interval, angular (default: all; asymmetric-interval with --enrol-samples >= 2)",
    )
    f.add_argument(
        "--keep-unusable",
        action="store_true",
        help="also write a pipeline whose predicted FNMR at its target is above 0.5, marked unusable "
        "(the service refuses to serve it); by default it is reported and not written",
    )
    _add_transform_options(f, D)
    _add_split_options(f, D)
    _add_calibration_options(f, D)
    add_quiet(f)
    f.set_defaults(func=_fit)


def _add_transform_options(f: argparse.ArgumentParser, D: Any) -> None:
    f.add_argument(
        "--levels", type=int, default=D.levels, help=f"quantiser levels, a power of two (default {D.levels})"
    )
    f.add_argument("--dimensions", type=int, help="keep at most this many whitened dimensions")
    f.add_argument(
        "--min-fisher-ratio",
        type=float,
        default=D.min_fisher_ratio,
        help=f"smallest Fisher ratio kept (default {D.min_fisher_ratio})",
    )
    f.add_argument(
        "--projection",
        choices=("lda", "whiten", "centre"),
        default=D.projection,
        help="'lda' (Fisher directions, at most identities - 1), 'whiten' (within-class whitening of every "
        "embedding axis, no LDA) or 'centre' (the background mean subtracted, nothing else: for the angular "
        f"pipeline of embeddings compared by cosine) (default {D.projection})",
    )
    f.add_argument(
        "--normalise", action="store_true", help="divide every vector by its Euclidean norm first (cosine embeddings)"
    )


def _add_split_options(f: argparse.ArgumentParser, D: Any) -> None:
    f.add_argument(
        "--folds",
        type=int,
        default=D.folds,
        help=f"identity-disjoint cross-validation folds of the calibration (default {D.folds}; "
        "leave-one-person-out when a fold would hold fewer than 2 people)",
    )
    f.add_argument(
        "--confidence",
        type=float,
        default=D.confidence,
        help=f"confidence of the Clopper-Pearson bound on the FMR (default {D.confidence})",
    )
    f.add_argument(
        "--holdout", type=float, default=0.3, help="with --calibration-split samples: share held out (default 0.3)"
    )
    f.add_argument("--seed", type=int, default=0, help="seed of the folds or of the split (default 0)")
    f.add_argument(
        "--calibration-split",
        choices=SPLITS,
        default="identities",
        help="'identities' (default): fit on every background identity and calibrate by identity-disjoint "
        "cross-validation (open set); 'samples': later samples of every identity (closed set, for populations "
        "too small to spare identities; rates optimistic)",
    )


def _add_calibration_options(parser: argparse.ArgumentParser, D: Any, *, target: str = "") -> None:
    """The options every calibrated pipeline kind reads (``features fit`` and ``features evaluate``)."""
    parser.add_argument(
        "--enrol-samples",
        type=int,
        default=D.enrol_samples,
        help=f"enrolment samples per person (default {D.enrol_samples})",
    )
    parser.add_argument(
        "--target-fmr",
        type=float,
        default=D.target_fmr,
        help=(target or "FMR every pipeline is held to: its upper confidence bound") + f" (default {D.target_fmr})",
    )
    parser.add_argument(
        "--code-bits",
        type=int,
        default=D.code_bits,
        help=f"Gray bits per dimension for code-offset (default {D.code_bits})",
    )
    parser.add_argument(
        "--resolution",
        type=float,
        default=D.thermometer_resolution,
        help=f"thermometer step in weighted whitened units (default {D.thermometer_resolution})",
    )
    parser.add_argument(
        "--asymmetric-margin",
        type=int,
        default=D.asymmetric_margin,
        help=f"tolerance margin of the asymmetric-interval pipeline (default {D.asymmetric_margin})",
    )
    parser.add_argument(
        "--code-size",
        type=code_size_type,
        default="auto",
        metavar="auto|BITS",
        help="information bits of the angular pipeline's polar code. 'auto' (default): measure every size of "
        "32, 48, 64, 96, 128 bits the dimension holds on the background and take the largest whose FNMR is within "
        "max(1.5 x, +0.01) of centred cosine's, at least 32 bits (docs/embeddings.md); fit refuses when none is "
        "(give BITS to accept one)",
    )
    parser.add_argument(
        "--security-bits",
        type=float,
        default=D.angular_security_bits,
        action=GivenAction,
        help="codebook bits of the sparse code (--angular-code sparse; default "
        f"{D.angular_security_bits:g}); given with the polar code, an older spelling of --code-size",
    )
    parser.add_argument(
        "--angular-code",
        choices=("polar", "sparse"),
        default=D.angular_code,
        help="code of the angular pipeline: 'polar' (decodes wider angles) or 'sparse' (IronMask) "
        f"(default {D.angular_code})",
    )


def _add_evaluate(group: Any) -> None:
    # The one set of defaults the Python API reads too (a dataclass: no numpy at start-up).
    from sketchauth.features.defaults import DEFAULTS as D

    e = group.add_parser("evaluate", help="FNMR/FMR/EER of every pipeline vs the unprotected reference")
    e.add_argument("--transform", required=True, help="transform JSON from 'features fit'")
    e.add_argument("--background", required=True, help="the background data the transform was fitted on")
    e.add_argument("--data", required=True, help="evaluation people (not in the background): CSV or NPZ")
    e.add_argument("--out", required=True, help="directory for features.json, features.md, features_det.png")
    e.add_argument(
        "--probe-data",
        help="probes in a separate file (then --data only enrols: the first --enrol-samples rows "
        "of each identity); default: roles from --data's split/session/role column, else row order",
    )
    e.add_argument(
        "--pipelines",
        metavar="DIR",
        help="evaluate the pipelines 'features fit' wrote to DIR as written (loaded, not recalibrated): real "
        "enrolment of every person, every pair decided exactly, sampled pairs re-decided by real decode",
    )
    e.add_argument(
        "--keep-unusable",
        action="store_true",
        help="with --pipelines: also evaluate a pipeline marked unusable (predicted FNMR > 0.5; skipped by default)",
    )
    _add_calibration_options(e, D, target="FMR the calibrated pipelines are held to on the background")
    e.add_argument("--attack-people", type=int, default=10, help="people enrolled for the offline attack (default 10)")
    e.add_argument(
        "--attack-tries",
        type=int,
        default=100,
        help="background samples tried per person in the offline attack (default 100; 0 skips the attack)",
    )
    e.add_argument("--no-plots", dest="no_plot", action="store_true", help="skip the DET plot (no matplotlib needed)")
    e.add_argument("--no-plot", dest="no_plot", action="store_true", help=argparse.SUPPRESS)  # old spelling
    add_quiet(e)
    e.add_argument(
        "--decode-checks",
        type=int,
        default=10_000,
        metavar="N",
        help="trials per protected row re-decided by real encode/decode at its FMR 1e-2 setting "
        "(default 10000; 0: none)",
    )
    e.set_defaults(func=_evaluate)
