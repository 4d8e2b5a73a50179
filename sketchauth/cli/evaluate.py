"""The ``sketchauth evaluate`` command group: linkage, guessing and the evaluation report.

* ``evaluate linkage`` — :func:`sketchauth.evaluate.linkage.linkage_experiment`;
* ``evaluate guessing`` — :func:`sketchauth.evaluate.guessing.guessing_experiment`;
* ``evaluate report`` — :mod:`sketchauth.evaluate.report` for a registered scheme (``--scheme``,
  on ``--data`` or a ``--synthetic`` population) or a feature pipeline (``--pipeline``,
  :func:`sketchauth.evaluate.pipelines.report_target.pipeline_target`);
* ``evaluate unlinkability`` — :mod:`sketchauth.evaluate.unlinkability_report`: D↔sys of real
  re-enrolments per feature pipeline and linkage attack, with and without a pepper.

Only argparse at import: each handler imports numpy and the evaluation when it runs (every
function-level import here is for command-line start-up cost).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sketchauth.cli._common import DEFAULT_PROFILE_NAME, SubParsers, add_quiet, emit_json, profile, show_progress
from sketchauth.errors import ParameterError

if TYPE_CHECKING:
    from sketchauth.evaluate.data import LabelledSets, LabelledVectors
    from sketchauth.evaluate.report import EvaluationTarget
    from sketchauth.sketches.base import SecureSketch

__all__ = ["add", "parse_synthetic", "synthetic_data"]


def add(sub: SubParsers[argparse.ArgumentParser]) -> None:
    """Add the ``evaluate`` group and its sub-commands to the top-level parser."""
    p = sub.add_parser("evaluate", help="offline evaluation: error rates, leakage, linkage, attacks")
    evaluate = p.add_subparsers(dest="evaluation", required=True, metavar="EVALUATION")
    for add_command in (_add_linkage, _add_guessing, _add_report, _add_unlinkability):
        add_command(evaluate)


def _evaluate_linkage(args: argparse.Namespace) -> int:
    # start-up: tqdm and the evaluation load only when this command runs.
    from tqdm import tqdm

    from sketchauth.evaluate.linkage import LinkageSetup, check_linkage_arguments, histogram_plot, linkage_experiment

    check_linkage_arguments(args.scheme, args.n, args.q, args.tau, args.pairs, args.seed, args.features)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise ParameterError("--plot needs matplotlib: pip install 'sketchauth[plots]'")
    with tqdm(
        total=args.pairs, unit="pair", desc=f"linkage {args.scheme}", file=sys.stderr, disable=not show_progress(args)
    ) as bar:
        result = linkage_experiment(
            LinkageSetup(args.scheme, args.n, args.q, args.tau, features=args.features, adversary=args.adversary),
            args.pairs,
            args.seed,
            progress=bar.update,
        )
    emit_json(
        result.to_dict(),
        args.json,
        lambda: (
            f"{result.scheme}: accuracy {result.accuracy:.6f} at threshold {result.threshold} "
            f"(mean score mated {result.mated_scores.mean():.3f}, "
            f"non-mated {result.nonmated_scores.mean():.3f})"
        ),
    )
    if args.plot:
        histogram_plot(result, args.plot)
    return 0


def _add_linkage(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("linkage", help="link two asymmetric interval sketches of one person (s1, s2, s3)")
    p.add_argument("--scheme", choices=("s1", "s2", "s3"), required=True, help="sketch scheme to attack")
    p.add_argument("--n", type=int, default=1000, help="feature universe size (default 1000)")
    p.add_argument("--q", type=int, default=16, help="largest tolerance (default 16)")
    p.add_argument("--tau", type=int, default=2, help="re-enrolment noise and similarity bound (default 2)")
    p.add_argument("--pairs", type=int, default=100_000, help="mated and non-mated pairs each (default 100000)")
    p.add_argument("--seed", type=int, default=1, help="simulation seed (default 1)")
    p.add_argument("--features", type=int, default=1, help="features per person (default 1)")
    p.add_argument(
        "--adversary",
        choices=("tolerances", "similar-intervals", "similar-even-intervals", "parity"),
        default=None,
        help="linking adversary (default: tolerances for s1, similar-intervals for s2/s3; "
        "parity: agreement of the boundaries' majority parity per feature)",
    )
    p.add_argument("--json", metavar="OUT", help="write the JSON result to OUT instead of stdout")
    p.add_argument("--plots", dest="plot", metavar="OUT.png", help="PNG of the two score histograms (extra 'plots')")
    p.add_argument("--plot", dest="plot", metavar="OUT.png", help=argparse.SUPPRESS)  # old spelling
    add_quiet(p)
    p.set_defaults(func=_evaluate_linkage)


def _evaluate_guessing(args: argparse.Namespace) -> int:
    from sketchauth.evaluate.guessing import guessing_experiment  # start-up: numpy loads when this runs

    sketch: SecureSketch[Any, Any]
    if args.family == "chaff":
        from sketchauth.sketches.chaff import ChaffPointSketch  # start-up

        sketch = ChaffPointSketch(args.universe, args.min_distance, args.points)
    else:
        from sketchauth.sketches.interval import IntervalSketch  # start-up

        sketch = IntervalSketch(n=args.n, v=args.v, features=args.features)
    result = guessing_experiment(
        sketch,
        args.key_bits,
        args.trials,
        args.seed,
        estimate_encodings=args.estimate,
        mixing=args.mixing,
        progress=show_progress(args),
    )
    emit_json(
        result.to_dict(),
        args.json,
        lambda: f"{result.scheme}: success {result.success_rate:.6f} vs baseline {result.baseline:.6f}",
    )
    return 0


def _add_guessing(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "guessing", help="key-guessing attack on a format-preserving mixed sketch (Fang's thesis, ch. 7)"
    )
    p.add_argument("--family", choices=("chaff", "interval"), default="chaff", help="sketch family (default chaff)")
    p.add_argument("--universe", type=int, default=16, help="chaff: points of Z_n (default 16)")
    p.add_argument("--min-distance", type=int, default=2, help="chaff: minimum distance (default 2)")
    p.add_argument("--points", type=int, default=1, help="chaff: genuine points (default 1)")
    p.add_argument(
        "--n",
        type=int,
        default=15,
        help="interval: feature universe (default 15: a multiple of 2v - 1, so the sketch is uniform over a "
        "uniform secret; otherwise some residues are likelier and the attacker gains)",
    )
    p.add_argument("--v", type=int, default=3, help="interval: tolerance (default 3)")
    p.add_argument("--features", type=int, default=1, help="interval: features (default 1)")
    p.add_argument("--key-bits", type=int, default=4, help="key length L_k in bits (default 4)")
    p.add_argument("--trials", type=int, default=100_000, help="attacks simulated (default 100000)")
    p.add_argument(
        "--estimate",
        type=int,
        default=None,
        help="encodings estimating the sketch distribution (default max(10*trials, 1e5))",
    )
    p.add_argument("--mixing", choices=("pad", "shake", "shift"), default="pad", help="mixing function (default pad)")
    p.add_argument("--seed", type=int, default=1, help="simulation seed (default 1)")
    p.add_argument("--json", metavar="OUT", help="write the JSON result to OUT instead of stdout")
    add_quiet(p)
    p.set_defaults(func=_evaluate_guessing)


# -- evaluate report ------------------------------------------------------------------------------------
def _add_report(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "report", help="error rates, leakage, attack costs and unlinkability of a scheme on data (JSON, Markdown, PNG)"
    )
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--scheme", help="registered scheme, e.g. interval, code-offset, pinsketch, fuzzy-vault")
    what.add_argument(
        "--pipeline",
        metavar="PIPELINE.json",
        help="feature pipeline (transform + scheme) from 'sketchauth features fit --pipelines'",
    )
    p.add_argument("--params", default="{}", help="scheme parameters as a JSON object, without the swept one")
    p.add_argument("--sweep", help="comma-separated values of the tolerance parameter (default: per scheme)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--data", metavar="FILE", help="labelled samples: CSV or NPZ (see sketchauth.evaluate.data)")
    source.add_argument(
        "--synthetic", metavar="OPTIONS", help="synthetic population, e.g. identities=200,samples=4,noise=2"
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        default=None,
        help="directory for report.json, report.md and PNG figures (default: report-<scheme or pipeline name>)",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of data generation and trial subsampling (default 0)")
    p.add_argument(
        "--interval",
        choices=("wilson", "clopper-pearson"),
        default="wilson",
        help="95%% intervals of FNMR and FMR: Wilson score (default) or exact Clopper-Pearson",
    )
    p.add_argument("--jobs", type=int, default=2, help="worker processes for comparisons (default 2)")
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help="run the comparisons on a Dask cluster: tcp://host:8786, or local:N for N local worker processes "
        "(extra 'dask'); --data CSV/Parquet is then read by partitions",
    )
    p.add_argument(
        "--enrol-samples",
        type=int,
        default=None,
        help="samples per enrolment (default: 1, or 2 for asymmetric schemes)",
    )
    p.add_argument("--max-impostors", type=int, default=None, help="impostor probes per identity (default: all)")
    p.add_argument(
        "--closed-set",
        action="store_true",
        help="declare that the pipeline's transform was fitted on data of these people (stated in the report)",
    )
    p.add_argument(
        "--attack-people", type=int, default=10, help="people attacked offline with the database (default 10)"
    )
    p.add_argument(
        "--attack-tries",
        type=int,
        default=50,
        help="other people's samples tried per attacked person (default 50; 0 skips the offline attack)",
    )
    p.add_argument(
        "--profile", default=None, help=f"argon2 profile whose cost is measured (default {DEFAULT_PROFILE_NAME})"
    )
    p.add_argument(
        "--source-entropy", type=float, default=None, help="declared source min-entropy in bits (default: estimated)"
    )
    p.add_argument(
        "--operating-setting",
        default=None,
        help="setting for leakage and linkage (default: with --pipeline its calibrated setting; otherwise the NIST "
        "targets rule on the evaluated people, labelled optimistic)",
    )
    p.add_argument("--no-plots", dest="plots", action="store_false", help="skip the PNG figures (no matplotlib needed)")
    p.add_argument(
        "--no-plot", dest="plots", action="store_false", help=argparse.SUPPRESS
    )  # spelling of other commands
    add_quiet(p, "no progress bars")
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    """``sketchauth evaluate report``: ``--scheme`` (this function) or ``--pipeline`` (:func:`_pipeline_report`)."""
    # The report measures this profile's cost (None there would mean: do not measure).
    args.profile = profile(args)
    if args.out is None:
        args.out = f"report-{Path(args.pipeline).stem if args.pipeline is not None else args.scheme}"
    if args.scheduler is not None:
        from sketchauth.evaluate.distributed import connect  # optional dependency: dask

        args.client = connect(args.scheduler)
        try:
            return _pipeline_report(args) if args.pipeline is not None else _scheme_report(args)
        finally:
            args.client.close()
    args.client = None
    if args.pipeline is not None:
        return _pipeline_report(args)
    return _scheme_report(args)


def _scheme_report(args: argparse.Namespace) -> int:
    """``sketchauth evaluate report --scheme ...``."""
    # start-up: numpy and the evaluation load only when this command runs.
    from sketchauth.evaluate.data import load_sets
    from sketchauth.evaluate.report import EvaluationTarget, run_report
    from sketchauth.evaluate.report.figures import require_plots
    from sketchauth.evaluate.report.run import check_scheme_params, range_is_fitted

    try:
        params = json.loads(args.params)
    except json.JSONDecodeError as exc:
        raise ParameterError(f"--params is not valid JSON: {exc.msg}") from None
    if not isinstance(params, dict):
        raise ParameterError("--params must be a JSON object")
    # An interval sketch with a step but neither n nor offset gets its range fitted to the data
    # below; until then its other parameters are checked with a provisional (largest) level count.
    provisional = {**params, "n": 2**40} if range_is_fitted(args.scheme, params) else params
    check_scheme_params(args.scheme, provisional, where="--params")
    if args.plots:
        require_plots()  # before the evaluation, not after it
    target = EvaluationTarget.from_scheme(args.scheme, provisional)
    settings = _settings(args.sweep, args.scheme, provisional)
    target.factory(settings[0])  # the parameters' values, checked before any data is read or made
    if args.data is not None:
        data = load_sets(args.data) if target.data_kind == "sets" else _vectors(args)
        source = f"file {Path(args.data).name}"
    else:
        data = synthetic_data(target, args.synthetic, args.seed)
        source = f"synthetic ({args.synthetic or 'defaults'}, seed {args.seed})"
    # An interval sketch given a step but neither n nor offset: fit the range to the enrolment data.
    target = EvaluationTarget.fitted(args.scheme, params, data, enrol_samples=args.enrol_samples, settings=settings)
    report = run_report(target, data, settings, **_report_options(args, source, args.source_entropy))
    return _write(report, args)


def _pipeline_report(args: argparse.Namespace) -> int:
    """``sketchauth evaluate report --pipeline ...`` (the other options as for ``--scheme``)."""
    # start-up: numpy and the evaluation load only when this command runs.
    from sketchauth.evaluate.pipelines.report_target import configured_setting, default_pipeline_sweep, pipeline_target
    from sketchauth.evaluate.report import run_report
    from sketchauth.evaluate.report.figures import require_plots
    from sketchauth.features.pipeline import load_pipeline

    if args.data is None:
        raise ParameterError("--pipeline needs --data: labelled raw feature vectors of people outside the background")
    if args.plots:
        require_plots()  # before the evaluation, not after it
    pipeline = load_pipeline(Path(args.pipeline).read_text(encoding="utf-8"))
    if args.sweep:
        try:
            settings = [int(json.loads(x)) for x in args.sweep.split(",") if x.strip()]
        except (ValueError, TypeError):
            raise ParameterError(f"--sweep must be comma-separated integers, got {args.sweep!r}") from None
    else:
        settings = default_pipeline_sweep(pipeline)
    entropy = args.source_entropy if args.source_entropy is not None else pipeline.secret_bits
    source = f"file {Path(args.data).name}"
    options = _report_options(args, source, entropy)
    if options["operating_setting"] is None:
        # The calibrated configuration, measured on these people (not a setting picked on them).
        configured = configured_setting(pipeline)
        options["operating_setting"] = configured
        settings = sorted({*settings, configured})
    report = run_report(pipeline_target(pipeline), _vectors(args), settings, **options)
    return _write(report, args)


def _vectors(args: argparse.Namespace) -> LabelledVectors:
    """``--data`` as labelled vectors: by partitions through Dask with ``--scheduler``, else whole."""
    if args.client is not None:
        from sketchauth.evaluate.distributed import read_vectors  # optional dependency: dask

        return read_vectors(args.data)
    from sketchauth.evaluate.data import load_vectors  # start-up: numpy loads only when this runs

    return load_vectors(args.data)


# -- evaluate unlinkability (begin) -----------------------------------------------------------------------
def _add_unlinkability(sub: SubParsers[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "unlinkability",
        help="D<->sys of real re-enrolments per feature pipeline and linkage attack, with and without a pepper",
        description="Fit a feature transform on --background, calibrate the pipelines on it, enrol every identity "
        "of --data several times from disjoint captures in two deployments, score mated and non-mated pairs "
        "with every applicable linkage attack and measure D<->(s) and D<->sys (Gomez-Barrero et al., IEEE TIFS "
        "2018), with the helpers stored in clear and wrapped with per-deployment peppers.",
    )
    p.add_argument("--data", required=True, metavar="FILE", help="labelled evaluation samples: CSV identity,f0..fk")
    p.add_argument(
        "--background", required=True, metavar="FILE", help="labelled background samples the transform is fitted on"
    )
    p.add_argument("--out", required=True, metavar="DIR", help="directory for unlinkability.json, .md and .png")
    p.add_argument(
        "--pipelines",
        default="interval,thermometer,code-offset,s1,s2,s3",
        help="comma-separated pipelines (default: interval,thermometer,code-offset,s1,s2,s3)",
    )
    p.add_argument("--enrol-samples", type=int, default=2, help="captures per enrolment (default 2)")
    p.add_argument("--groups", type=int, default=12, help="disjoint enrolments per identity at most (default 12)")
    p.add_argument("--tau", type=int, default=2, help="closeness of the interval attacks (default 2)")
    p.add_argument("--levels", type=int, default=32, help="quantiser levels of the transform (default 32)")
    p.add_argument("--target-fmr", type=float, default=0.01, help="FMR the pipelines are calibrated to (default 0.01)")
    p.add_argument("--max-nonmated", type=int, default=4000, help="non-mated pairs scored at most (default 4000)")
    p.add_argument(
        "--permutations", type=int, default=200, help="label permutations for the chance level (default 200)"
    )
    p.add_argument("--seed", type=int, default=0, help="seed of grouping and pair subsampling (default 0)")
    p.add_argument("--no-plots", dest="plots", action="store_false", help="skip the PNG (no matplotlib needed)")
    add_quiet(p)
    p.set_defaults(func=_unlinkability)


def _unlinkability(args: argparse.Namespace) -> int:
    # Function-level imports: command-line start-up cost.
    from sketchauth.evaluate.data import load_vectors
    from sketchauth.evaluate.report.figures import require_plots
    from sketchauth.evaluate.unlinkability_report import (
        UnlinkabilityReportOptions,
        run_unlinkability_report,
        write_unlinkability_report,
    )

    if args.plots:
        require_plots()  # before the evaluation, not after it
    kinds = [k.strip() for k in args.pipelines.split(",") if k.strip()]
    report = run_unlinkability_report(
        load_vectors(args.background),
        load_vectors(args.data),
        options=UnlinkabilityReportOptions(
            kinds=kinds,
            enrol_samples=args.enrol_samples,
            groups=args.groups,
            tau=args.tau,
            levels=args.levels,
            target_fmr=args.target_fmr,
            max_nonmated=args.max_nonmated,
            permutations=args.permutations,
            seed=args.seed,
            progress=show_progress(args),
            sources=(Path(args.background).name, Path(args.data).name),
        ),
    )
    files = write_unlinkability_report(report, args.out, plots=args.plots)
    for kind, entry in report["pipelines"].items():
        for attack in entry.get("attacks", []):
            print(
                f"{kind} {attack['attack']}: D<->sys clear {attack['clear']['d_sys']:.3f}, "
                f"peppered {attack['peppered']['d_sys']:.3f}"
            )
        if "unavailable" in entry:
            print(f"{kind}: not evaluated: {entry['unavailable']}")
    print(f"-> {', '.join(files.values())}")
    return 0


# -- evaluate unlinkability (end) -------------------------------------------------------------------------


def _spec_value(key: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise ParameterError(f"--synthetic {key}={text!r} is not a number") from None


def parse_synthetic(spec: str) -> dict[str, float]:
    """``"identities=200,samples=4,noise=2"`` → a mapping (values are numbers)."""
    out: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ParameterError(f"--synthetic expects key=value pairs, got {item!r}")
        out[key.strip()] = _spec_value(key, value.strip())
    return out


_SYNTHETIC_KEYS = {
    "vectors": {"identities", "samples", "spread", "noise", "reliability_spread"},
    "strings": {"identities", "samples", "error_rate"},
    "sets": {"identities", "samples", "set_size", "dropout", "insertion"},
}


def synthetic_data(target: EvaluationTarget, spec: str, seed: int) -> LabelledVectors | LabelledSets:
    """A seeded synthetic population shaped for ``target`` (its features, length or universe)."""
    from sketchauth.evaluate import data as d  # start-up: numpy loads only when this runs

    opts = parse_synthetic(spec)
    unknown = set(opts) - _SYNTHETIC_KEYS[target.data_kind]
    if unknown:
        raise ParameterError(
            f"--synthetic keys for {target.data_kind}: {', '.join(sorted(_SYNTHETIC_KEYS[target.data_kind]))}; "
            f"unknown: {', '.join(sorted(unknown))}"
        )
    people = int(opts.pop("identities", 100))
    samples = int(opts.pop("samples", 4))
    p = target.params
    if target.data_kind == "vectors":
        try:
            features, n = int(p["features"]), int(p["n"])
        except KeyError as exc:
            raise ParameterError(f"--params needs {exc.args[0]!r} to shape synthetic vectors") from None
        return d.synthetic_vectors(people, samples, features, n=n, seed=seed, model=d.VectorModel(**opts))
    if target.data_kind == "strings":
        return d.synthetic_strings(people, samples, int(p.get("n", 32)), seed=seed, **opts)
    if target.name == "pinsketch":
        low, high, size = 1, 2 ** int(p.get("m", 16)), 32
    elif target.name == "fuzzy-vault":
        low, high, size = 0, int(p["p"]), int(p["m"])
    else:
        q, g = int(p.get("q", 4)), int(p.get("g", 30))
        low, high, size = 0, int(p["p"]), -(-g // (q - 1)) + 2
    size = int(opts.pop("set_size", size))
    return d.synthetic_sets(people, samples, low=low, high=high, set_size=size, seed=seed, **opts)


def _settings(text: str | None, scheme: str, params: dict[str, Any]) -> list[Any]:
    """``--sweep`` as a list of values, or the scheme's default sweep."""
    from sketchauth.evaluate.report import default_sweep  # start-up: the evaluation loads only when this runs

    if text is None:
        return default_sweep(scheme, params)
    try:
        values = [json.loads(x) for x in text.split(",") if x.strip()]
    except json.JSONDecodeError:
        raise ParameterError(f"--sweep must be comma-separated numbers, got {text!r}") from None
    if not values:
        raise ParameterError("--sweep is empty")
    return values


def _report_options(args: argparse.Namespace, source: str, source_min_entropy: float | None) -> dict[str, Any]:
    """The ``run_report`` options both ``evaluate report`` forms (``--scheme``, ``--pipeline``) take from the flags."""
    return {
        "source": source,
        "enrol_samples": args.enrol_samples,
        "max_impostors_per_identity": args.max_impostors,
        "seed": args.seed,
        "jobs": args.jobs,
        "progress": show_progress(args),
        "profile": args.profile,
        "source_min_entropy": source_min_entropy,
        "operating_setting": None if args.operating_setting is None else json.loads(args.operating_setting),
        "set_kind": "closed" if args.closed_set else "open",
        "attack_people": args.attack_people,
        "attack_tries": args.attack_tries,
        "interval": args.interval,
        "client": args.client,
    }


def _write(report: Any, args: argparse.Namespace) -> int:
    """Write the report's files and print its summary (``summary`` is imported lazily: start-up)."""
    # start-up: the report modules load only when a report is written
    from sketchauth.evaluate.report import write_report
    from sketchauth.evaluate.report.render import summary

    payload = write_report(report, args.out, plots=args.plots)
    print(summary(payload, args.out))
    return 0
