"""One set of defaults: the ``sketchauth features`` command line reads the library's (DEFAULTS)."""

from __future__ import annotations

import argparse

from sketchauth.features.defaults import DEFAULTS


def test_cli_defaults_are_the_library_defaults() -> None:

    from sketchauth.cli import build_parser

    parser = build_parser()
    features = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["features"]
    commands = next(a for a in features._actions if isinstance(a, argparse._SubParsersAction)).choices
    expected = {
        "levels": DEFAULTS.levels,
        "min_fisher_ratio": DEFAULTS.min_fisher_ratio,
        "projection": DEFAULTS.projection,
        "folds": DEFAULTS.folds,
        "confidence": DEFAULTS.confidence,
        "enrol_samples": DEFAULTS.enrol_samples,
        "target_fmr": DEFAULTS.target_fmr,
        "code_bits": DEFAULTS.code_bits,
        "resolution": DEFAULTS.thermometer_resolution,
        "asymmetric_margin": DEFAULTS.asymmetric_margin,
        "security_bits": DEFAULTS.angular_security_bits,
        "angular_code": DEFAULTS.angular_code,
    }
    for name in ("fit", "evaluate"):
        defaults = {a.dest: a.default for a in commands[name]._actions}
        for dest, value in expected.items():
            if dest in defaults:
                assert defaults[dest] == value, (name, dest)
    assert {"code_bits", "resolution", "asymmetric_margin", "enrol_samples", "security_bits", "angular_code"} <= set(
        a.dest for a in commands["evaluate"]._actions
    )
