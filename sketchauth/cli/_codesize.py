"""The angular pipeline's code size in ``sketchauth features fit | evaluate`` (``--code-size``).

``--code-size auto`` (the default) measures the code-size curve on the background
(:func:`sketchauth.evaluate.capacity.background_curve`: per size the capacity floor, the FNMR at
the target FMR and its ratio to the floor, the realised FMR, the centred-cosine FNMR and the
population-attack cost), prints it and takes the size the default rule
(:func:`sketchauth.evaluate.capacity.choose_code_size`) chooses; when no size is acceptable,
``fit`` refuses in one line (exit 2) unless a size is given explicitly: ``--code-size N`` is that
acceptance. Imports of numpy and the evaluation modules are inside the functions (command-line
start-up cost, as in :mod:`sketchauth.cli.features`).
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING, Any

from sketchauth.errors import ParameterError

if TYPE_CHECKING:
    from sketchauth.evaluate.capacity import CodeSizeCurve
    from sketchauth.evaluate.fitting.options import CalibrationOptions

__all__ = [
    "CodeSizeRefusedError",
    "GivenAction",
    "code_size_type",
    "evaluation_angular",
    "explicit_bits",
    "fit_angular",
]

AUTO = "auto"


class CodeSizeRefusedError(ParameterError):
    """No code size meets the default rule and none was given: ``fit`` stops (exit 2), writing nothing."""


def code_size_type(text: str) -> str | int:
    """``--code-size``: ``auto`` or a whole number of bits (at least 1)."""
    if text == AUTO:
        return AUTO
    try:
        bits = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a whole number of bits, got {text!r}") from None
    if bits < 1:
        raise argparse.ArgumentTypeError(f"a code holds at least 1 bit, got {bits}")
    return bits


class GivenAction(argparse.Action):
    """Stores the value and records that the flag was given (``<dest>_given``): a default is not a choice."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, *_: Any) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, f"{self.dest}_given", True)


def explicit_bits(args: argparse.Namespace) -> int | None:
    """The polar code's bits the user gave (``--code-size N``, else the older ``--security-bits``), or ``None``."""
    if isinstance(args.code_size, int):
        return int(args.code_size)
    if getattr(args, "security_bits_given", False):
        return math.ceil(float(args.security_bits))
    return None


def _curve(transform: Any, background: Any, options: CalibrationOptions) -> tuple[CodeSizeCurve | None, dict[int, Any]]:
    """The background curve and its pipelines (``None`` when the dimension holds no size of the curve)."""
    # start-up: numpy and the evaluation modules load only when this command runs.
    from sketchauth.evaluate.capacity import CODE_SIZES, background_curve, code_sizes

    if not code_sizes(transform.dimensions, CODE_SIZES):
        return None, {}
    return background_curve(
        transform,
        background,
        target_fmr=options.target_fmr,
        enrol_samples=options.enrol_samples,
        refit=options.refit,
        folds=options.folds,
        confidence=options.confidence,
        list_size=options.list_size,
    )


def _at(bits: int, ready: dict[int, Any], transform: Any, background: Any, options: CalibrationOptions) -> Any:
    """The pipeline of exactly ``bits`` polar bits: the curve's, else calibrated now (no threshold matching)."""
    # start-up: the fitting registry loads only when this command runs.
    from sketchauth.evaluate.fitting import fit_pipeline

    if bits in ready:
        return ready[bits]
    return fit_pipeline("angular", transform, background, options.but(security_bits=bits, match_threshold=False))


def fit_angular(
    args: argparse.Namespace, transform: Any, background: Any, options: CalibrationOptions, summary: dict[str, Any]
) -> Any:
    """The angular pipeline ``features fit`` writes, its code size chosen by ``--code-size`` (module docstring).

    The curve is printed on stderr and recorded in ``summary["code_size"]``. With ``auto`` and no
    acceptable size: :class:`CodeSizeRefusedError` when ``--kinds`` asked for the angular pipeline,
    otherwise a ``ParameterError`` (the pipeline is then reported unavailable beside the others).
    """
    # start-up: the fitting modules load only when this command runs.
    from sketchauth.evaluate.fitting import fit_pipeline
    from sketchauth.evaluate.fitting.angular import calibrate_captures, decode_failures

    if options.code != "polar" or transform.dimensions < 2:
        return fit_pipeline("angular", transform, background, options)
    explicit = explicit_bits(args)
    curve, ready = _curve(transform, background, options)
    if curve is None:
        if explicit is None:
            raise ParameterError(
                f"the polar code's sizes (32 to 128 bits) need more than 32 dimensions, and {transform.dimensions} "
                "are kept: keep more dimensions (--projection centre keeps every axis) or give --code-size N "
                f"(N < {transform.dimensions})"
            )
        return _at(explicit, ready, transform, background, options)
    choice = curve.choice()
    bits = explicit if explicit is not None else choice.bits
    print(curve.table(), file=sys.stderr, flush=True)
    summary["code_size"] = {
        **curve.to_dict(),
        "chosen_bits": bits,
        "chosen_by": "auto" if explicit is None else "--code-size",
    }
    if bits is None:
        text = f"{choice.reason} (--code-size N)"
        asked = args.kinds is not None
        raise CodeSizeRefusedError(text) if asked else ParameterError(text)
    if explicit is not None and choice.bits != explicit:
        print(f"code size {explicit} bits as given (the default rule: {choice.bits})", file=sys.stderr)
    pipeline = _at(bits, ready, transform, background, options)
    if pipeline.decode_failures is None:  # the curve's pipelines leave it to the size kept
        pipeline.decode_failures = decode_failures(pipeline, background, enrol_samples=options.enrol_samples)
    if not pipeline.captures_calibration and options.calibrate_captures:  # so are several captures' thresholds
        calibrate_captures(pipeline, background, options, shared=curve.shared)
    return pipeline


def evaluation_angular(
    args: argparse.Namespace,
    transform: Any,
    background: Any,
    data: Any,
    options: CalibrationOptions,
    loaded: Any,
) -> tuple[Any, CodeSizeCurve | None, str | None]:
    """``features evaluate``: (the angular pipeline of its rows, the curve on ``data``, why there is none).

    The pipeline is ``loaded`` (what ``fit`` wrote) when given; otherwise calibrated on the
    background with ``--code-size`` (``auto``: the default rule on the background curve). The
    curve is measured on the evaluation people with each size's background-calibrated pipeline
    (the loaded one in its size's place).
    """
    # start-up: numpy and the evaluation modules load only when this command runs.
    from sketchauth.evaluate.capacity import measured_curve

    if options.code != "polar":
        return None, None, "the code-size curve and the angular row are measured for the polar code"
    try:
        curve, ready = _curve(transform, background, options)
    except ParameterError as exc:
        curve, ready = None, {}
        if loaded is None:
            return None, None, str(exc)
    pipeline = loaded
    if pipeline is None:
        explicit = explicit_bits(args)
        bits = explicit if explicit is not None else (None if curve is None else curve.choice().bits)
        if bits is None:
            reason = "no code size fits these dimensions" if curve is None else curve.choice().reason
            return None, None, reason
        pipeline = _at(bits, ready, transform, background, options)
    if not ready:
        return pipeline, None, None
    if loaded is not None:
        if not hasattr(loaded.sketch, "bits"):
            return pipeline, None, None
        ready = {**ready, int(loaded.sketch.bits): loaded}
    people = measured_curve(ready, data, enrol_samples=options.enrol_samples, target_fmr=options.target_fmr)
    return pipeline, people, None
