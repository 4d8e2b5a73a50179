"""The pipeline interface: a fitted :class:`~sketchauth.features.transform.FeatureTransform` chained with a sketch.

See :mod:`sketchauth.features.pipeline` for the design (configuration, not per-user data) and the
pipelines built on this base (:mod:`.interval`, :mod:`.asymmetric`, :mod:`.code_offset`,
:mod:`.thermometer`); :mod:`.loading` reads their JSON configurations back.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Protocol

import argon2
import numpy as np

from sketchauth.enrolment import Enrolment, enrol, verify
from sketchauth.errors import DecodeError, ParameterError, SampleError
from sketchauth.features.transform import FeatureTransform
from sketchauth.sketches.base import EntropyReport, SecureSketch

__all__ = ["PIPELINE_FORMAT", "FitRecord", "Pipeline"]


PIPELINE_FORMAT = "sketchauth-pipeline/v1"


class FitRecord(Protocol):
    """How a pipeline's setting was chosen on a background (what the fitting layer attaches).

    :class:`sketchauth.evaluate.fitting.calibration.Calibration` is one; the core only reads these
    figures (e.g. to report them), it never computes them.
    """

    @property
    def target_fmr(self) -> float: ...

    @property
    def fnmr(self) -> float: ...

    def to_dict(self) -> dict[str, Any]: ...

    def summary(self) -> str: ...


def _dims(dims: Any, transform: FeatureTransform) -> np.ndarray:
    try:
        arr = np.asarray(dims)
    except (TypeError, ValueError):
        raise ParameterError("dims must be a list of dimension indices") from None
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu":
        raise ParameterError("dims must be a non-empty list of integer dimension indices")
    arr = arr.astype(np.int64)
    if np.any(arr < 0) or np.any(arr >= transform.dimensions) or np.unique(arr).size != arr.size:
        raise ParameterError(f"dims must be distinct indices in [0, {transform.dimensions})")
    return arr


class Pipeline(ABC):
    """A transform chained with a sketch on a subset ``dims`` of the transform's dimensions.

    A pipeline is built from its settings (the constructor) or its JSON (:func:`load_pipeline`);
    choosing those settings on a background is evaluation-side work
    (:mod:`sketchauth.evaluate.fitting`, one module per kind), which records how in
    :attr:`calibration` (the predicted FMR/FNMR and their intervals).
    """

    kind: ClassVar[str]

    def __init__(self, transform: FeatureTransform, dims: Any) -> None:
        if not isinstance(transform, FeatureTransform):
            raise ParameterError("transform must be a FeatureTransform")
        self.transform = transform
        self.dims = _dims(dims, transform)
        #: How the setting was chosen (:mod:`sketchauth.evaluate.fitting`): predicted rates on new people;
        #: not configuration.
        self.calibration: FitRecord | None = None
        #: Why this pipeline must not be served (e.g. its predicted FNMR at its target is above 0.5),
        #: or ``None``. Configuration: written to the JSON when set (:meth:`to_dict`), and a service
        #: refuses to start with a pipeline that carries it.
        self.unusable: str | None = None

    # -- the sketch and the two conversions ---------------------------------------------------
    @property
    @abstractmethod
    def sketch(self) -> SecureSketch[Any, Any]:
        """The sketch every user of this pipeline is enrolled with."""

    def _enrolment_matrix(self, samples: Any) -> np.ndarray:
        x = np.asarray(samples, dtype=np.float64) if _numeric(samples) else None
        if x is None:
            raise SampleError("enrolment samples must be numbers")
        if x.ndim == 1:
            x = x[None, :]
        if x.ndim != 2 or x.shape[0] < 1:
            raise SampleError(f"enrolment samples must be an m × {self.transform.features} array")
        return self.transform.project(x)[:, self.dims]

    def _levels(self, y: np.ndarray) -> np.ndarray:
        """Equal-probability levels of projected values on ``dims`` (``k`` or ``N × k``, ``k = dims.size``).

        The transform quantises full-width vectors; each dimension is quantised on its own, so the
        other dimensions are padded with zeros and dropped again.
        """
        full = np.zeros((*y.shape[:-1], self.transform.dimensions))
        full[..., self.dims] = y
        return self.transform.quantise(full)[..., self.dims]

    @abstractmethod
    def secret_from_samples(self, samples: Any) -> Any:
        """The sketch's secret from raw enrolment vectors (one ``d``-vector or ``m × d``)."""

    @abstractmethod
    def sample_transform(self, sample: Any) -> Any:
        """The sketch's sample from one raw ``d``-vector."""

    # -- enrol / verify -----------------------------------------------------------------------
    def enrol(self, samples: Any, *, password_hasher: argon2.PasswordHasher | None = None) -> Enrolment:
        """Enrol raw samples: helper data and argon2id hash only (the samples are not kept)."""
        return enrol(self.sketch, self.secret_from_samples(samples), password_hasher=password_hasher)

    def verify(
        self, enrolment: Enrolment, sample: Any, *, password_hasher: argon2.PasswordHasher | None = None
    ) -> bool:
        """True iff the raw ``sample`` recovers the enrolled secret (one outcome for every failure)."""
        return verify(self.sketch, enrolment, self.sample_transform(sample), password_hasher=password_hasher)

    def accepts(self, samples: Any, sample: Any) -> bool:
        """Decode without hashing: does ``sample`` recover the secret enrolled from ``samples``?

        Evaluation helper (encode → decode → compare, the hash check without argon2's cost).
        """
        sketch = self.sketch
        secret = sketch.check_secret(self.secret_from_samples(samples))
        helper = sketch.encode(secret)
        try:
            recovered = sketch.decode(helper, self.sample_transform(sample))
        except DecodeError:
            return False
        return hmac.compare_digest(sketch.secret_bytes(recovered), sketch.secret_bytes(secret))

    # -- accounting ---------------------------------------------------------------------------
    @property
    @abstractmethod
    def secret_bits(self) -> float:
        """Bits the secret carries if its levels are uniform (the background's equal-probability design)."""

    def report(self) -> EntropyReport:
        """The sketch's report plus the pipeline's context (secret bits, transform fingerprint)."""
        base = self.sketch.report()
        remaining = max(0.0, self.secret_bits - base.loss_bound_bits)
        return EntropyReport.from_bits(
            base.scheme,
            base.sketch_bits,
            base.randomness_bits,
            notes=(
                *base.notes,
                f"pipeline {self.kind}: {self.dims.size} whitened dimensions of a transform fitted on background data",
                f"secret carries at most {self.secret_bits:.1f} bits under the background (uniform levels); "
                f"at least {remaining:.1f} remain after the loss bound if the levels are independent and uniform",
            ),
            extra={
                **dict(base.extra),
                "pipeline": self.kind,
                "secret_bits": self.secret_bits,
                "remaining_bits_if_uniform": remaining,
                "transform": self.transform.fingerprint,
            },
        )

    # -- configuration ------------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready configuration: transform, dims, scheme and parameters."""
        return {
            "format": PIPELINE_FORMAT,
            "kind": self.kind,
            "transform": self.transform.to_dict(),
            "transform_sha256": self.transform.fingerprint,
            "dims": self.dims.tolist(),
            "scheme": self.sketch.scheme_name,
            "params": self.sketch.params(),
            "settings": self._settings(),
            # Only when set, so that the configuration (and fingerprint) of a usable pipeline is unchanged.
            **({"unusable": self.unusable} if self.unusable is not None else {}),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    @property
    def fingerprint(self) -> str:
        """SHA-256 of the canonical configuration JSON (transform, dims, scheme, parameters, settings).

        Names this exact pipeline: a service stores it with every enrolment, so a pipeline file
        changed since (re-fitted transform, re-calibrated tolerance) is detected, not silently
        decoded with the wrong configuration. Stable across :func:`load_pipeline` round trips.
        """
        return hashlib.sha256(self.to_json().encode()).hexdigest()

    @classmethod
    @abstractmethod
    def _from_config(cls, transform: FeatureTransform, dims: np.ndarray, raw: Mapping[str, Any]) -> Pipeline: ...

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pipeline) and other.to_dict() == self.to_dict()

    def __hash__(self) -> int:
        return hash(self.to_json())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dims={self.dims.size}, sketch={self.sketch!r})"


def _numeric(value: Any) -> bool:
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError):
        return False
    return arr.dtype.kind in "iuf"


def _one_sample(sample: Any, features: int) -> np.ndarray:
    if not _numeric(sample):
        raise SampleError("a sample must be numbers")
    x = np.asarray(sample, dtype=np.float64)
    if x.shape != (features,):
        raise SampleError(f"a sample must be a vector of {features} features, got shape {x.shape}")
    return x
