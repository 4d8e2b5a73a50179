"""The angular pipeline: a transform fitted on background people, then the angular sketch (IronMask).

For float embeddings compared by cosine — what face and voice models output. The transform is
usually fitted with ``projection="centre", normalise=True``: each vector is normalised, the
background people's mean is subtracted, and the sketch compares the direction that is left.
Centring is not cosmetic. Raw embeddings of a deep model share a large common direction
(every template lies in one cone); the helper ``R`` maps the template onto the codeword
(``R t = c``), so ``R`` applied to the population's mean direction lands next to ``c`` and an
attacker holding the helper reads the codeword off with a handful of guesses, no sample of the
person needed (measured in ``benchmarks/bench_angular.py``, "prior-guided rank"). About the
population's centre the directions are spread over the sphere and the codebook's work is back.
Any other transform (``whiten``, ``lda``) works too: the sketch then compares angles in that space.

The code, its size and ``min_cos`` are chosen on the background by
:mod:`sketchauth.evaluate.fitting.angular` (which also measures the decode failures this
pipeline reports).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import argon2
import numpy as np

from sketchauth.enrolment import Enrolment, verify
from sketchauth.errors import ParameterError, SampleError
from sketchauth.features.base import Pipeline, _one_sample
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.angular import AngularSketch
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.base import EntropyReport

__all__ = ["MAX_VERIFY_CAPTURES", "AngularPipeline"]


def unit(x: np.ndarray) -> np.ndarray:
    """Rows divided by their norm, taken after scaling by the largest coordinate (a norm of huge
    or tiny coordinates would overflow to ``inf`` or underflow to 0; the direction is well defined)."""
    peak = np.max(np.abs(x), axis=-1, keepdims=True)
    if np.any(peak == 0):
        raise SampleError("a projected embedding is the zero vector: it has no direction")
    scaled = x / peak
    return np.asarray(scaled / np.linalg.norm(scaled, axis=-1, keepdims=True))


#: A mean of unit vectors shorter than this is rounding noise (each coordinate carries ~1e-16), not a direction.
MIN_MEAN_NORM = 1e-9


#: Most captures one verification attempt may average (:meth:`AngularPipeline.captures_transform`).
MAX_VERIFY_CAPTURES = 3


def _numeric_rows(samples: Any) -> bool:
    """A real-number array (no strings, objects or booleans), before any conversion."""
    try:
        arr = np.asarray(samples)
    except (TypeError, ValueError):
        return False
    return arr.dtype.kind in "iuf"


def mean_direction(units: np.ndarray) -> np.ndarray:
    """The normalised mean of unit rows along the second-last axis; refused when they cancel out."""
    mean = units.mean(axis=-2)
    if np.any(np.linalg.norm(mean, axis=-1) < MIN_MEAN_NORM):
        raise SampleError(
            "the captures' directions cancel out (their mean is the zero vector): enrol from other captures"
        )
    return unit(mean)


class AngularPipeline(Pipeline):
    """A fitted transform → :class:`~sketchauth.sketches.angular.AngularSketch` (module docstring).

    Every kept dimension of the transform is used (the sketch is rotation-invariant, so dropping
    axes would only throw information away). The enrolled template is the mean of the normalised
    projected captures; the probe is the projected capture.
    """

    kind = "angular"

    def __init__(
        self,
        transform: FeatureTransform,
        dims: Any,
        *,
        min_cos: float,
        bits: int | None = None,
        list_size: int = 8,
        alpha: int | None = None,
        crc: int = 0,
        captures_min_cos: Mapping[int, float] | None = None,
    ) -> None:
        super().__init__(transform, dims)
        if self.dims.size < 2:
            raise ParameterError("the angular pipeline needs at least 2 dimensions")
        if (bits is None) == (alpha is None):
            raise ParameterError("give bits (the polar code) or alpha (IronMask's sparse code), not both")
        n = int(self.dims.size)
        self._sketch: AngularSketch = (
            PolarAngularSketch(dimension=n, bits=bits, list_size=list_size, min_cos=min_cos, crc=crc)
            if bits is not None
            else AngularSketch(dimension=n, alpha=alpha, min_cos=min_cos)  # type: ignore[arg-type]
        )
        #: Share of background genuine trials within ``min_cos`` that real decoding refused, and
        #: how many were decoded (``for_target_fmr`` measures it; ``None`` otherwise).
        self.decode_failures: dict[str, Any] | None = None
        #: ``min_cos`` for an attempt of ``k`` ≥ 2 captures (:meth:`sketch_for_captures`), calibrated on
        #: the background's own ``k``-capture attempts; a ``k`` not here uses ``min_cos``. Configuration.
        self.captures_min_cos: dict[int, float] = _checked_captures_min_cos(captures_min_cos or {})
        #: How each ``k``'s threshold was chosen (the fitting layer attaches it), or why it was not.
        self.captures_calibration: dict[int, Any] = {}
        self._by_captures: dict[int, AngularSketch] = {}

    @property
    def sketch(self) -> AngularSketch:
        return self._sketch

    def _template(self, samples: Any) -> np.ndarray:
        captures = self._enrolment_matrix(samples)
        return mean_direction(unit(captures))

    def secret_from_samples(self, samples: Any) -> Any:
        return self._sketch.check_secret(self._template(samples))

    def sample_transform(self, sample: Any) -> np.ndarray:
        y = self.transform.project(_one_sample(sample, self.transform.features))[self.dims]
        if not np.any(y):
            raise SampleError("the sample projects onto the background's centre: it has no direction")
        return np.asarray(y)

    def captures_transform(self, samples: Any) -> np.ndarray:
        """One probe from one attempt's 1 to :data:`MAX_VERIFY_CAPTURES` raw captures (frames or utterances).

        **Decision rule: average, then decode once.** Each capture is projected and normalised, and
        the probe is the normalised mean of those directions — the template's own construction at
        enrolment (:func:`mean_direction`). Within-attempt noise averages out, so genuine probes
        come closer to the template; an impostor's captures average to the impostor's own
        direction, no closer to the template. One decode and one argon2id evaluation whatever the
        number of captures, so an attempt is still *one* try: the rule "accept if any capture
        decodes" would give an impostor ``k`` tries per attempt (FMR up to ``k``-fold at the same
        threshold) and cost ``k`` hash evaluations. Measured against one capture at the same FMR
        in ``benchmarks/bench_angular_captures.py``.
        """
        x = np.asarray(samples, dtype=np.float64) if _numeric_rows(samples) else None
        if x is None or x.ndim != 2 or not 1 <= x.shape[0] <= MAX_VERIFY_CAPTURES:
            raise SampleError(
                f"a verification takes 1 to {MAX_VERIFY_CAPTURES} captures, each of {self.transform.features} features"
            )
        return mean_direction(unit(np.stack([self.sample_transform(row) for row in x])))

    def sketch_for_captures(self, captures: int) -> AngularSketch:
        """The sketch that decides an attempt of ``captures`` captures: :attr:`sketch` with the
        ``min_cos`` calibrated for that many (:attr:`captures_min_cos`), else :attr:`sketch` itself.

        Only the threshold differs (:meth:`~sketchauth.sketches.angular.AngularSketch.deciding_at`):
        the code, the parameters and so the helper data are the same for every ``captures``.
        Averaging removes capture noise from genuine and impostor attempts alike — an attempt comes
        closer to its owner's template, and a look-alike's closer to the look-alike's own — so one
        capture's threshold does not keep the target FMR for several (on real faces it realised
        about 1.5× the target with two and three captures): the threshold is chosen for each number
        of captures on the background's own attempts of that many (the fitting layer's
        ``calibrate_captures``).
        """
        if isinstance(captures, bool) or not isinstance(captures, int) or not 1 <= captures <= MAX_VERIFY_CAPTURES:
            raise SampleError(f"a verification takes 1 to {MAX_VERIFY_CAPTURES} captures, got {captures!r}")
        min_cos = self.captures_min_cos.get(captures)
        if min_cos is None or min_cos == self._sketch.min_cos:
            return self._sketch
        found = self._by_captures.get(captures)
        if found is None:
            found = self._by_captures[captures] = self._sketch.deciding_at(min_cos)
        return found

    def verify_captures(
        self, enrolment: Enrolment, samples: Any, *, password_hasher: argon2.PasswordHasher | None = None
    ) -> bool:
        """:meth:`verify` with 1 to :data:`MAX_VERIFY_CAPTURES` captures of one attempt (:meth:`captures_transform`),
        decided at the threshold for that many captures (:meth:`sketch_for_captures`)."""
        probe = self.captures_transform(samples)
        sketch = self.sketch_for_captures(len(samples))
        return verify(sketch, enrolment, probe, password_hasher=password_hasher)

    @property
    def secret_bits(self) -> float:
        return float(self._sketch.report().extra["codebook_bits"])

    def report(self) -> EntropyReport:
        """The sketch's report plus the angular pipeline's context: the code and its codebook bits,
        the transform the directions are taken in, and the decode failures if measured.

        Not the quantising pipelines' notes: nothing here is whitened or cut into levels; the secret
        is the codeword, whose codebook size is the figure (the sketch's notes say what lowers it).
        """
        base = self._sketch.report()
        sketch = self._sketch
        if isinstance(sketch, PolarAngularSketch):
            code = f"a polar code of {sketch.bits} information bits (list decoder, {sketch.list_size} paths"
            code += f", {sketch.crc}-bit CRC)" if sketch.crc else ")"
        else:
            code = f"IronMask's sparse code of weight alpha = {sketch.alpha}"
        transform = self.transform
        if transform.projection_kind == "centre":
            space = "centre transform (the background mean subtracted" + (
                ", every vector normalised first)" if transform.normalises else ")"
            )
        else:
            space = f"'{transform.projection_kind}' transform" + (
                " (vectors normalised first)" if transform.normalises else ""
            )
        failures = self.decode_failures
        if failures is None:
            decoded = (
                "decode failures not measured here (AngularPipeline.for_target_fmr measures them on background people)"
            )
        else:
            decoded = (
                f"decode failures: real decoding refused {failures['refused']} of {failures['checked']} background "
                f"genuine trials within min_cos ({failures['share']:.1%}), on top of the cosine rule's FNMR"
            )
        notes = (
            *base.notes,
            f"pipeline angular: the direction of {self.dims.size} dimensions of a {space} fitted on background data, "
            f"accepted iff the code decodes and cos(probe, template) >= {sketch.min_cos:g}",
            f"secret: the codeword of {code}, {self.secret_bits:.1f} bits of codebook",
            decoded,
            *(
                (
                    "several captures: an attempt of k captures is accepted at cos >= "
                    + ", ".join(f"{v:g} (k = {k})" for k, v in sorted(self.captures_min_cos.items()))
                    + ", each calibrated on the background's own k-capture attempts",
                )
                if self.captures_min_cos
                else ()
            ),
        )
        extra: dict[str, Any] = {
            **dict(base.extra),
            "pipeline": self.kind,
            "secret_bits": self.secret_bits,
            "transform": transform.fingerprint,
        }
        if failures is not None:
            extra["decode_failures"] = dict(failures)
        if self.captures_min_cos:
            extra["captures_min_cos"] = dict(self.captures_min_cos)
        return EntropyReport.from_bits(base.scheme, base.sketch_bits, base.randomness_bits, notes=notes, extra=extra)

    def _settings(self) -> dict[str, Any]:
        # Only when set, so that the configuration (and fingerprint) of a pipeline without them is unchanged.
        if not self.captures_min_cos:
            return {}
        return {"captures_min_cos": {str(k): v for k, v in sorted(self.captures_min_cos.items())}}

    @classmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> AngularPipeline:
        params = raw["params"]
        min_cos = params.get("min_cos", 0.0)
        scheme = raw.get("scheme")
        if scheme == PolarAngularSketch.descriptor.name:
            pipeline = cls(
                transform,
                dims,
                min_cos=min_cos,
                bits=params["bits"],
                list_size=params["list_size"],
                crc=params.get("crc", 0),  # absent: a pipeline written before the CRC, the plain code
            )
        elif scheme == AngularSketch.descriptor.name:
            pipeline = cls(transform, dims, min_cos=min_cos, alpha=params["alpha"])
        else:
            raise ParameterError("pipeline scheme does not match its kind")
        if pipeline.sketch.params() != dict(params):
            raise ParameterError("pipeline parameters do not match its dims")
        pipeline.captures_min_cos = _captures_setting(raw.get("settings"))
        return pipeline


def _captures_setting(settings: Any) -> dict[int, float]:
    """``settings.captures_min_cos`` of a pipeline file (``{"2": cos, "3": cos}``), strictly parsed."""
    if settings is None:
        return {}
    if not isinstance(settings, Mapping) or not set(settings) <= {"captures_min_cos"}:
        raise ParameterError("an angular pipeline's settings hold only captures_min_cos")
    raw = settings.get("captures_min_cos", {})
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) and k.isdecimal() and len(k) == 1 for k in raw):
        raise ParameterError(
            f"captures_min_cos maps numbers of captures (2 to {MAX_VERIFY_CAPTURES}, as strings) to thresholds"
        )
    return _checked_captures_min_cos({int(k): v for k, v in raw.items()})


def _checked_captures_min_cos(values: Mapping[int, Any]) -> dict[int, float]:
    """``{captures: min_cos}`` for 2 to :data:`MAX_VERIFY_CAPTURES` captures, each a number in [0, 1]."""
    out: dict[int, float] = {}
    for k, v in values.items():
        if isinstance(k, bool) or not isinstance(k, int) or not 2 <= k <= MAX_VERIFY_CAPTURES:
            raise ParameterError(f"captures_min_cos: numbers of captures are 2 to {MAX_VERIFY_CAPTURES}, got {k!r}")
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and 0.0 <= v <= 1.0):
            raise ParameterError(f"captures_min_cos[{k}] must be a number in [0, 1], got {v!r}")
        out[k] = float(v)
    return out
