"""The ``sketchauth`` command.

Sub-commands import what they need only when they run, so ``sketchauth --help`` and every
command start fast (no field compilation, no web framework unless serving).

* ``sketchauth demo``: enrol a synthetic user, verify a genuine and an impostor sample, show what
  is stored and the entropy report.
* ``sketchauth serve``: run the enrolment/verification service (:mod:`service`, uvicorn).
* ``sketchauth --version``: the installed version.

Every ``--profile`` / ``--hash-profile`` defaults to the library's
:data:`sketchauth.enrolment.DEFAULT_HASH_PROFILE` (``owasp``), as ``hasher()`` and the service do.
The flags leave the default unset and resolve it when the command runs, so that building the
parser does not import the library.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence

__all__ = ["build_parser", "main"]

Handler = Callable[[argparse.Namespace], int]

#: What the help texts call the default argon2 profile; ``tests/test_cli.py`` checks that it is
#: :data:`sketchauth.enrolment.DEFAULT_HASH_PROFILE` (importing that here would slow ``--help``).
DEFAULT_PROFILE_NAME = "owasp"


def _profile(args: argparse.Namespace) -> str:
    """``--profile`` as given, or the library's default argon2 profile."""
    from sketchauth.enrolment import DEFAULT_HASH_PROFILE

    return args.profile or DEFAULT_HASH_PROFILE


def _demo(args: argparse.Namespace) -> int:
    import numpy as np

    from sketchauth.enrolment import enrol, hasher, verify
    from sketchauth.sketches.interval import IntervalSketch

    # Simulation only: a seeded generator makes the synthetic person; the sketch's own
    # randomness (none for this scheme) and the hash salt come from `secrets`.
    rng = np.random.default_rng(args.seed)
    sketch = IntervalSketch(n=256, v=args.tolerance, features=args.features)
    template = rng.integers(args.tolerance, 256 - args.tolerance, size=args.features)
    genuine = template + rng.integers(-(args.tolerance - 1), args.tolerance, size=args.features)
    impostor = rng.integers(0, 256, size=args.features)
    ph = hasher(_profile(args))
    record = enrol(sketch, template, password_hasher=ph)
    out = {
        "scheme": sketch.scheme_name,
        "params": sketch.params(),
        "stored": {
            "helper_bytes": len(record.helper),
            "helper_hex_prefix": record.helper[:24].hex(),
            "secret_hash": record.secret_hash,
        },
        "report": record.report.to_dict(),
        "verify_genuine": verify(sketch, record, genuine, password_hasher=ph),
        "verify_impostor": verify(sketch, record, impostor, password_hasher=ph),
    }
    print(json.dumps(out, indent=2))
    return 0 if out["verify_genuine"] and not out["verify_impostor"] else 1


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="enrol a synthetic user and verify genuine and impostor samples")
    p.add_argument("--features", type=int, default=16, help="feature-vector length (default 16)")
    p.add_argument("--tolerance", type=int, default=8, help="interval tolerance v (default 8)")
    p.add_argument("--seed", type=int, default=1, help="seed of the synthetic person (default 1)")
    p.add_argument("--profile", default=None, help=f"argon2 profile (default {DEFAULT_PROFILE_NAME})")
    p.set_defaults(func=_demo)


def _add_evaluate(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="offline evaluation: error rates, leakage, linkage, attacks")
    evaluate = p.add_subparsers(dest="evaluation", required=True, metavar="EVALUATION")
    for add in _EVALUATE_COMMANDS:
        add(evaluate)


# One entry per `sketchauth evaluate ...` sub-command; each adds its parser and sets `func`.
_EVALUATE_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = []


def _emit_json(result: dict[str, object], destination: str | None, summary: Callable[[], str]) -> None:
    """Print ``result`` as indented JSON, or write it to the file ``destination`` (``--json OUT``).

    With no destination (or ``-``) the JSON goes to stdout; otherwise stdout gets only the
    one-line ``summary()`` followed by ``-> OUT``, so a long run still ends with a readable result.
    """
    text = json.dumps(result, indent=2)
    if destination in (None, "-"):
        print(text)
        return
    with open(destination, "w", encoding="utf-8") as out:
        out.write(text + "\n")
    print(f"{summary()} -> {destination}")


def _evaluate_linkage(args: argparse.Namespace) -> int:
    import importlib.util

    from tqdm import tqdm

    from sketchauth.errors import ParameterError
    from sketchauth.evaluate.linkage import check_linkage_arguments, histogram_plot, linkage_experiment

    check_linkage_arguments(args.scheme, args.n, args.q, args.tau, args.pairs, args.seed, args.features)
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise ParameterError("--plot needs matplotlib: pip install 'sketchauth[plots]'")
    bar_off = args.quiet or not sys.stderr.isatty()
    with tqdm(total=args.pairs, unit="pair", desc=f"linkage {args.scheme}", file=sys.stderr, disable=bar_off) as bar:
        result = linkage_experiment(
            args.scheme,
            args.n,
            args.q,
            args.tau,
            args.pairs,
            args.seed,
            features=args.features,
            progress=bar.update,
            adversary=args.adversary,
        )
    _emit_json(
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


def _add_evaluate_linkage(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--quiet", action="store_true", help="no progress bar (it is shown on a terminal only)")
    p.set_defaults(func=_evaluate_linkage)


_EVALUATE_COMMANDS.append(_add_evaluate_linkage)


def _evaluate_guessing(args: argparse.Namespace) -> int:
    from sketchauth.evaluate.guessing import guessing_experiment
    from sketchauth.sketches.base import SecureSketch

    sketch: SecureSketch
    if args.family == "chaff":
        from sketchauth.sketches.chaff import ChaffPointSketch

        sketch = ChaffPointSketch(args.universe, args.min_distance, args.points)
    else:
        from sketchauth.sketches.interval import IntervalSketch

        sketch = IntervalSketch(n=args.n, v=args.v, features=args.features)
    result = guessing_experiment(
        sketch,
        args.key_bits,
        args.trials,
        args.seed,
        estimate_encodings=args.estimate,
        mixing=args.mixing,
        progress=not args.quiet and sys.stderr.isatty(),
    )
    _emit_json(
        result.to_dict(),
        args.json,
        lambda: f"{result.scheme}: success {result.success_rate:.6f} vs baseline {result.baseline:.6f}",
    )
    return 0


def _add_evaluate_guessing(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--quiet", action="store_true", help="no progress bar (it is shown on a terminal only)")
    p.set_defaults(func=_evaluate_guessing)


_EVALUATE_COMMANDS.append(_add_evaluate_guessing)


def _evaluate_report(args: argparse.Namespace) -> int:
    from sketchauth.evaluate.report import cli_report

    # The report measures this profile's cost (None there would mean: do not measure).
    args.profile = _profile(args)
    return cli_report(args)


def _add_evaluate_report(sub: argparse._SubParsersAction) -> None:
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
    p.add_argument("--out", required=True, metavar="DIR", help="directory for report.json, report.md and PNG figures")
    p.add_argument("--seed", type=int, default=0, help="seed of data generation and trial subsampling (default 0)")
    p.add_argument("--jobs", type=int, default=2, help="worker processes/threads for comparisons (default 2)")
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
        "--operating-setting", default=None, help="setting for leakage and linkage (default: NIST targets rule)"
    )
    p.add_argument("--no-plots", dest="plots", action="store_false", help="skip the PNG figures (no matplotlib needed)")
    p.add_argument(
        "--no-plot", dest="plots", action="store_false", help=argparse.SUPPRESS
    )  # spelling of other commands
    p.add_argument("--quiet", action="store_true", help="no progress bars (they are shown on a terminal only)")
    p.set_defaults(func=_evaluate_report)


_EVALUATE_COMMANDS.append(_add_evaluate_report)


class _Version(argparse.Action):
    """``--version``: the installed distribution's version (read only when asked for)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)  # type: ignore[arg-type]

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        import sketchauth

        print(f"sketchauth {sketchauth.__version__}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``sketchauth`` command."""
    parser = argparse.ArgumentParser(
        prog="sketchauth",
        description="Biometric authentication without storing the biometric.",
    )
    parser.add_argument("--version", action=_Version, help="print the installed version and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in _COMMANDS:
        add(sub)
    return parser


def _serve(args: argparse.Namespace) -> int:
    import os

    # The service is imported only here: the library never depends on it.
    from service.settings import TEST_PROFILE_WARNING, Settings, SettingsError, env_name

    # Flags override the environment (settings fields; None: flag not given).
    overrides: dict[str, object] = {
        "database_url": args.db,
        "hash_profile": args.hash_profile,
        "allow_test_profile": True if args.allow_insecure_test_profile else None,
        # Absolute, so every worker reads the same directory whatever it resolves against.
        "pipelines_dir": None if args.pipelines is None else os.path.abspath(args.pipelines),
        "pin_min_entropy": args.pin_min_entropy,
        "host": args.host,
        "port": args.port,
        "workers": args.workers,
        "access_log": False if args.no_access_log else None,
    }
    given = {field: value for field, value in overrides.items() if value is not None}
    try:
        settings = Settings.from_env().replace(**given).validate()
        # Refuse to start on a bad pipeline file here, with its name, not in every worker.
        from service.pipelines import load_configured

        load_configured(settings)
    except SettingsError as exc:
        print(f"sketchauth serve: {exc}", file=sys.stderr)
        return 2
    if settings.insecure_hash_profile:
        print(f"sketchauth serve: WARNING: {TEST_PROFILE_WARNING}", file=sys.stderr)
    # Workers are separate processes that build their settings from the environment.
    os.environ.update({env_name(field): "1" if value is True else str(value) for field, value in given.items()})
    from service.app import run_server

    return run_server(settings, log_level=args.log_level, access_log=not args.no_access_log)


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="run the enrolment/verification service (needs the 'service' extra)",
        description="Run the HTTP service. Settings come from SKETCHAUTH_* environment variables "
        "(an API key of at least 128 bits in SKETCHAUTH_API_KEYS or SKETCHAUTH_API_KEY_FILE is required); "
        "these flags override them.",
    )
    p.add_argument("--db", help="database URL (default $SKETCHAUTH_DATABASE_URL or sqlite:///./sketchauth.db)")
    p.add_argument("--host", help="address to listen on (default $SKETCHAUTH_HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default $SKETCHAUTH_PORT or 8000)")
    p.add_argument("--workers", type=int, help="worker processes (default $SKETCHAUTH_WORKERS or 1)")
    p.add_argument(
        "--hash-profile", help=f"argon2 profile (default $SKETCHAUTH_HASH_PROFILE or {DEFAULT_PROFILE_NAME})"
    )
    p.add_argument(
        "--allow-insecure-test-profile",
        action="store_true",
        help="allow --hash-profile test (argon2id t=1, m=8 KiB: stolen hashes cost nothing to attack); "
        "for tests only, refused without this flag or $SKETCHAUTH_ALLOW_TEST_PROFILE=1",
    )
    p.add_argument(
        "--pipelines",
        metavar="DIR",
        help="feature pipelines offered as 'pipeline:<name>' "
        "(<name>.json from 'sketchauth features fit --pipelines DIR'; "
        "default $SKETCHAUTH_PIPELINES)",
    )
    p.add_argument(
        "--pin-min-entropy",
        metavar="BITS",
        help="declared min-entropy of PINs, for the entropy report "
        "(default $SKETCHAUTH_PIN_MIN_ENTROPY; unset: undeclared)",
    )
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    p.add_argument(
        "--no-access-log",
        action="store_true",
        help="do not write the JSON request log (one line per request; $SKETCHAUTH_ACCESS_LOG=0)",
    )
    p.set_defaults(func=_serve)


def _add_features(sub: argparse._SubParsersAction) -> None:
    # argparse only; the handlers import numpy and the feature modules when they run.
    from sketchauth.features.commands import add_features

    add_features(sub)


# One entry per sub-command; each adds its parser and sets `func`.
_COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [_add_demo, _add_evaluate, _add_serve, _add_features]


def _reproduce(args: argparse.Namespace) -> int:
    from sketchauth.evaluate.reproduce import cli_reproduce

    return cli_reproduce(args.out, args.json, args.quick, args.quiet)


def _add_reproduce(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "reproduce",
        help="recompute the thesis' and Boreale-Paolini's numbers and figures, errata included",
        description="Write a Markdown report with PNG figures and a JSON file: per item the source, "
        "the printed value, the library's value and a verdict (agrees / differs / not reproducible).",
    )
    p.add_argument(
        "--out",
        default="reproduce",
        metavar="DIR",
        help="directory for reproduce.md and the figures (default ./reproduce)",
    )
    p.add_argument("--json", metavar="FILE", help="JSON file (default DIR/reproduce.json)")
    p.add_argument("--quick", action="store_true", help="smaller simulations and toy sets (for CI, seconds)")
    p.add_argument("--quiet", action="store_true", help="no progress bar (it is shown on a terminal only)")
    p.set_defaults(func=_reproduce)


_COMMANDS.append(_add_reproduce)


# -- pepper (h-pepper): implementation in sketchauth/cli_pepper.py ---------------------------------
def _add_pepper(sub: argparse._SubParsersAction) -> None:
    from sketchauth.cli_pepper import add_pepper

    add_pepper(sub)


_COMMANDS.append(_add_pepper)
# -- end pepper ------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``sketchauth`` console script."""
    args = build_parser().parse_args(argv)
    handler: Handler = args.func
    try:
        return handler(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from sketchauth.errors import SketchAuthError

        if isinstance(exc, SketchAuthError):
            print(f"sketchauth: error: {exc}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
