"""One set of defaults for the feature pipelines, read by the Python API and the ``sketchauth features`` CLI.

Each pipeline setting was chosen by measurement (``benchmarks/bench_calibration.py``, results in
``benchmarks/results/bench_calibration.json``, ``defaults_candidates``): calibrated on the
background people of a real face-embedding set and measured on held-out people, the candidate
with the lowest realised FNMR at FMR 1e-2 is the default.
``tests/features/test_defaults.py`` asserts that every CLI default equals the value here.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["DEFAULTS", "FeatureDefaults"]


@dataclass(frozen=True, slots=True)
class FeatureDefaults:
    """Defaults of :class:`~sketchauth.features.transform.FeatureTransform` fitting and pipeline calibration."""

    #: Quantiser levels ``L`` per whitened dimension (a power of two).
    levels: int = 32
    #: Smallest Fisher ratio a kept dimension may have.
    min_fisher_ratio: float = 0.05
    #: ``"lda"`` or ``"whiten"`` (:func:`~sketchauth.evaluate.fitting.transform.fit_transform`).
    projection: str = "lda"
    #: Enrolment samples per person.
    enrol_samples: int = 1
    #: FMR the calibrated pipelines are held to (upper confidence bound ≤ this).
    target_fmr: float = 1e-2
    #: FNMR the code-offset pipeline's ``for_target_fnmr`` aims at.
    target_fnmr: float = 0.05
    #: Identity-disjoint folds of the calibration's cross-validation.
    folds: int = 5
    #: Confidence of the one-sided Clopper–Pearson bound on the FMR.
    confidence: float = 0.95
    #: Thermometer step in Fisher-weighted whitened units. Measured on real face embeddings (dlib,
    #: 203 held-out people) at FMR 1e-2: FNMR 0.488 / 0.040 / 0.041 at 0.15 / 0.2 / 0.3 (at 0.15 the
    #: budget needed exceeds PinSketch's t ≤ 256).
    thermometer_resolution: float = 0.2
    #: Gray-coded bits per dimension of the code-offset pipeline: 1 bit rejected fewer genuine
    #: attempts than 2 (FNMR 0.999 against 1.0 at FMR 1e-2 on the same faces; both useless there).
    code_bits: int = 1
    #: ``margin`` of :func:`~sketchauth.templates.enrol_interval` in the asymmetric-interval pipeline:
    #: 3 against 1 gave FNMR 0.95 against 0.998 at the calibrated setting for FMR 1e-2 (2 captures).
    asymmetric_margin: int = 3
    #: Codebook work (bits) the angular pipeline's ``alpha`` must reach: the issue-independent floor
    #: of 64 bits against one helper without a matching sample (Kim et al. aim at 115 with 512-D faces).
    angular_security_bits: float = 64.0
    #: Code of the angular pipeline: "polar" decoded half the genuine probes IronMask's sparse code
    #: refused at the same 64 bits (benchmarks/bench_angular.py).
    angular_code: str = "polar"
    #: Paths of the polar code's list decoder, and the bits of its outer CRC: list 128 with CRC-6
    #: decodes genuine probes nearest the capacity angle (benchmarks/bench_code_sizes.py, "code_alone").
    angular_list_size: int = 128
    angular_crc: int = 6
    #: Raise the polar code's bits to the calibrated threshold (AngularPipeline.for_target_fmr).
    angular_match_threshold: bool = True


#: The defaults every entry point reads.
DEFAULTS = FeatureDefaults()
