"""The evaluation report's peak memory: no pepper derivation (argon2id at 128 MiB) on the report's path.

``evaluate report`` at 1,000 people peaked at ~194 MB against ~72 MB before the pepper's keys became
memory-hard: the renewability step built two ``Pepper`` objects, each one argon2id evaluation over
``PEPPER_KDF.memory_kib`` (128 MiB), allocated in C where tracemalloc does not see it. The
experiments now seal under drawn keys (:mod:`sketchauth.evaluate.sealing`). These tests fail if a
report, or either sealed-record experiment, derives a pepper again, or if a small report's peak
RSS grows by anything near that allocation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from sketchauth.errors import SketchFormatError
from sketchauth.evaluate.data import VectorModel, synthetic_vectors
from sketchauth.evaluate.error_rates import adapter
from sketchauth.evaluate.renewability import evaluate_renewability
from sketchauth.evaluate.report import EvaluationTarget, run_report
from sketchauth.evaluate.sealing import DrawnSealer
from sketchauth.evaluate.unlinkability import link_pairs
from sketchauth.pepper import PEPPER_KDF, SEAL_TAG_BYTES, PepperKdf, new_nonce
from sketchauth.sketches.interval import IntervalSketch


@pytest.fixture
def no_pepper_derivation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any argon2id evaluation of a pepper secret fails the test."""

    def refuse(self: PepperKdf, secret: bytes) -> bytes:
        raise AssertionError(f"a pepper was derived ({self.memory_kib} KiB of argon2id) on the evaluation's path")

    monkeypatch.setattr(PepperKdf, "stretch", refuse)


@pytest.mark.usefixtures("no_pepper_derivation")
def test_a_report_with_renewability_derives_no_pepper() -> None:
    data = synthetic_vectors(16, 3, 8, seed=4, model=VectorModel(noise=2.0))
    target = EvaluationTarget.from_scheme("interval", {"n": 256, "features": 8})
    rep = run_report(target, data, [2, 4, 8], seed=2, profile="test", crosscheck_trials=0, attack_tries=0)
    assert rep.renewability is not None
    assert sorted(rep.renewability["scenarios"]) == ["pepper_rotation", "pin_change"]


@pytest.mark.usefixtures("no_pepper_derivation")
def test_renewability_seals_without_deriving_a_pepper() -> None:
    data = synthetic_vectors(12, 2, 4, seed=1, model=VectorModel(noise=1.0))
    sketch = IntervalSketch(256, 3, features=4)
    out = evaluate_renewability(sketch, link_pairs(sketch, adapter("interval").enrol, data), permutations=20)
    assert out["mated_pairs"] == 12


def test_drawn_sealer_stores_what_a_pepper_stores() -> None:
    """The same AEAD and length as ``wrap``; opened only with its own key, nonce and associated data."""
    a, b, nonce = DrawnSealer(), DrawnSealer(), new_nonce()
    record = bytes(range(200))
    stored = a.seal(record, nonce, b"ad")
    assert len(stored) == len(record) + SEAL_TAG_BYTES and record not in stored
    assert a.open(stored, nonce, b"ad") == record
    for opener, n, ad in ((b, nonce, b"ad"), (a, new_nonce(), b"ad"), (a, nonce, b"other")):
        with pytest.raises(SketchFormatError):
            opener.open(stored, n, ad)
    with pytest.raises(SketchFormatError):
        a.seal(record, nonce[:8], b"")
    assert a.id != b.id and a.derive(b"x") != b.derive(b"x") and len(a.derive(b"x", 16)) == 16
    assert "_aead" not in repr(a) and a.id in repr(a)


_CHILD = textwrap.dedent(
    """
    import json, resource
    import numpy as np
    from sketchauth.evaluate.data import VectorModel, synthetic_vectors
    from sketchauth.evaluate.report import EvaluationTarget, run_report

    np.ones((64, 64)) @ np.ones((64, 64))  # BLAS's buffers before the baseline
    data = synthetic_vectors(16, 3, 8, seed=4, model=VectorModel(noise=2.0))
    target = EvaluationTarget.from_scheme("interval", {"n": 256, "features": 8})
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    run_report(target, data, [2, 4, 8], seed=3, profile="test", crosscheck_trials=0, attack_tries=0)
    print(json.dumps({"growth_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before}))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="ru_maxrss in KiB is Linux's")
def test_a_small_reports_peak_memory_does_not_grow_by_a_pepper_derivation() -> None:
    """A report of 16 people keeps the peak RSS of its imports; a pepper's argon2id would add 128 MiB."""
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    child = subprocess.run(
        [sys.executable, "-c", _CHILD], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    growth_mib = json.loads(child.stdout.strip().splitlines()[-1])["growth_kib"] / 1024
    # Measured 0 MiB, and 125 MiB with the two peppers derived again: the bound is half a derivation.
    assert growth_mib < PEPPER_KDF.memory_kib / 1024 / 2, growth_mib
