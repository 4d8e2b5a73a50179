"""``sketchauth demo``: enrol a synthetic user and verify a genuine and an impostor sample."""

from __future__ import annotations

import argparse
import json

from sketchauth.cli._common import DEFAULT_PROFILE_NAME, SubParsers, profile

__all__ = ["add"]


def _demo(args: argparse.Namespace) -> int:
    # Function-level imports: command-line start-up cost (numpy and the library load only here).
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
    ph = hasher(profile(args))
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


def add(sub: SubParsers[argparse.ArgumentParser]) -> None:
    """Add ``demo`` to the top-level parser."""
    p = sub.add_parser("demo", help="enrol a synthetic user and verify genuine and impostor samples")
    p.add_argument("--features", type=int, default=16, help="feature-vector length (default 16)")
    p.add_argument("--tolerance", type=int, default=8, help="interval tolerance v (default 8)")
    p.add_argument("--seed", type=int, default=1, help="seed of the synthetic person (default 1)")
    p.add_argument("--profile", default=None, help=f"argon2 profile (default {DEFAULT_PROFILE_NAME})")
    p.set_defaults(func=_demo)
