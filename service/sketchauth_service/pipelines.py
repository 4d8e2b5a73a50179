"""Feature pipelines offered by name: configuration loaded once, enrolment by name.

A deployment writes pipeline configurations with ``sketchauth features fit --pipelines DIR``
(:mod:`sketchauth.features.pipeline`: a frozen transform fitted on background data, chained with
a sketch and its parameters) and points ``SKETCHAUTH_PIPELINES`` (or ``sketchauth serve
--pipelines``) at the directory. :func:`load_configured` reads every ``<name>.json`` there once,
when the app is built; a malformed file, a transform that does not match its fingerprint or an
empty directory stops the service from starting (:class:`~sketchauth_service.settings.SettingsError`).

Clients then enrol with ``"scheme": "pipeline:<name>"`` and *raw* embedding samples (JSON float
arrays of the transform's input dimension). The service applies the transform, derives the
sketch's secret (``Pipeline.secret_from_samples``), enrols it on the pipeline's own scheme and
stores, beside the usual helper data and argon2id hash, the pipeline's name and
:attr:`~sketchauth.features.pipeline.Pipeline.fingerprint` (SHA-256 of its canonical
configuration) — never the embedding. Verification applies ``Pipeline.sample_transform`` and
decodes with the pipeline's sketch; if the file behind the name changed since enrolment (or is
gone), verification answers a 409 problem instead of a silent "no": the stored helper data
belongs to another configuration and no sample could ever match it.

Clients that keep the transform on their side instead send the sketch's own scheme and the
transformed samples: :func:`enrolment_request` and :func:`verification_request` map a pipeline to
those request bodies (the library's pipelines know nothing of the service's requests).

numpy and the feature modules are imported inside the functions that need them, so a service
without configured pipelines starts without them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sketchauth.errors import ParameterError, SampleError
from sketchauth_service.settings import Settings, SettingsError

if TYPE_CHECKING:  # the feature modules import numpy: only when pipelines are configured
    from sketchauth.features.pipeline import Pipeline

__all__ = [
    "PIPELINE_PREFIX",
    "LoadedPipeline",
    "check_dimensions",
    "enrolment_request",
    "load_configured",
    "min_samples",
    "pin_refusal",
    "pipeline_name",
    "pipeline_report",
    "verification_request",
    "warm_up_pipeline",
]

#: ``"scheme": "pipeline:<name>"`` selects the pipeline ``<name>.json`` of the configured directory.
PIPELINE_PREFIX = "pipeline:"


@dataclass(frozen=True, slots=True)
class LoadedPipeline:
    """A configured pipeline and its fingerprints, hashed once at load (configurations can be large)."""

    name: str
    pipeline: Pipeline
    #: ``Pipeline.fingerprint``: SHA-256 of the whole configuration, stored with each enrolment.
    fingerprint: str
    #: SHA-256 of the fitted transform alone.
    transform_sha256: str
    #: Why the pipeline's sketch cannot be put under a PIN (``None``: it can).
    pin_refusal: str | None = None

    @classmethod
    def of(cls, name: str, pipeline: Pipeline) -> LoadedPipeline:
        return cls(name, pipeline, pipeline.fingerprint, pipeline.transform.fingerprint, pin_refusal(pipeline))


def load_configured(settings: Settings) -> dict[str, LoadedPipeline]:
    """The pipelines of ``settings.pipelines_dir`` by name (``{}`` when none is configured).

    ``SettingsError`` with the directory and the offending file when anything is wrong, so the
    service refuses to start rather than offering half a configuration.
    """
    if settings.pipelines_dir is None:
        return {}
    # start-up: a service without pipelines starts without the feature modules
    from sketchauth.features.pipeline import load_pipelines

    try:
        pipelines = load_pipelines(settings.pipelines_dir)
    except ParameterError as exc:
        raise SettingsError(f"SKETCHAUTH_PIPELINES={settings.pipelines_dir}: {exc}") from None
    except OSError as exc:
        raise SettingsError(f"SKETCHAUTH_PIPELINES={settings.pipelines_dir}: cannot read: {exc}") from None
    if not pipelines:
        raise SettingsError(
            f"SKETCHAUTH_PIPELINES={settings.pipelines_dir}: no pipeline <name>.json in the directory "
            "(write some with 'sketchauth features fit --pipelines DIR')"
        )
    loaded = {}
    for name, pipeline in pipelines.items():
        if pipeline.unusable is not None:
            raise SettingsError(
                f"SKETCHAUTH_PIPELINES={settings.pipelines_dir}: {name}.json is marked unusable ({pipeline.unusable}); "
                "refit it on more or better background data, or remove it from the directory"
            )
        try:
            loaded[name] = LoadedPipeline.of(name, pipeline)
        except SampleError as exc:
            raise SettingsError(f"SKETCHAUTH_PIPELINES={settings.pipelines_dir}: {name}.json: {exc}") from None
    return loaded


def pipeline_name(scheme: str) -> str | None:
    """``name`` for ``"pipeline:name"``, ``None`` for a plain scheme name."""
    return scheme[len(PIPELINE_PREFIX) :] if scheme.startswith(PIPELINE_PREFIX) else None


def min_samples(pipeline: Pipeline) -> int:
    """Enrolment captures a pipeline needs: the asymmetric one derives tolerances from a spread."""
    return 2 if pipeline.kind == "asymmetric-interval" else 1


def check_dimensions(pipeline: Pipeline, samples: Sequence[Sequence[Any]]) -> None:
    """``SampleError`` unless every sample has the transform's input dimension."""
    want = pipeline.transform.features
    for i, sample in enumerate(samples):
        if len(sample) != want:
            raise SampleError(f"sample {i} has {len(sample)} features; this pipeline's transform takes {want}")


def pipeline_report(loaded: LoadedPipeline, enrolled: dict[str, Any], *, pin: bool) -> dict[str, Any]:
    """The stored entropy report of a pipeline enrolment.

    Without a PIN: the pipeline's report (the sketch's bounds plus the secret's bits under the
    background and the transform fingerprint). With a PIN: the cascade's report (the loss
    diverted to the PIN), tagged with the pipeline. Both name the pipeline and its fingerprint.
    """
    report = enrolled if pin else loaded.pipeline.report().to_dict()
    extra = dict(report.get("extra", {}))
    extra.update(
        {
            "pipeline": loaded.pipeline.kind,
            "pipeline_name": loaded.name,
            "pipeline_sha256": loaded.fingerprint,
            "transform": loaded.transform_sha256,
        }
    )
    return {**report, "extra": extra}


def pin_refusal(pipeline: Pipeline) -> str | None:
    """The library's reason the pipeline's sketch cannot be mixed with a PIN, or ``None``.

    A PIN cascade pads the sketch's symbols (``SecureSketch.symbols``); a sketch without a free
    symbol group (e.g. PinSketch whose syndromes are not independent) refuses, whatever the
    sample, so the service finds out once, at load, from a helper of a sample near the background mean.
    """
    sketch = pipeline.sketch
    helper = sketch.encode(pipeline.secret_from_samples(_warm_up_samples(pipeline)))
    try:
        sketch.symbols(sketch.payload(helper))
    except ParameterError as exc:
        return str(exc)
    return None


def _warm_up_samples(pipeline: Pipeline) -> Any:
    """Two copies of one raw sample the pipeline accepts: the background mean (valid for any
    transform: a normalising one refuses the zero vector, which has no direction), or — where the
    pipeline refuses it — the mean moved one unit along the projection direction of the pipeline's
    first dimension.

    The angular pipeline compares directions about the background mean: a transform that
    subtracts the mean without normalising first maps the mean onto the origin, which has no
    direction, while the moved sample projects to ``y`` with ``y_j = ‖P_j‖² > 0`` (``j = dims[0]``).
    """
    import numpy as np  # start-up: only pipelines need numpy here

    transform = pipeline.transform
    moved = transform.mean + transform.scale * transform.projection[:, int(pipeline.dims[0])]
    refusal = None
    for sample in (transform.mean, moved):
        try:
            pipeline.sample_transform(sample)
            pipeline.secret_from_samples(np.tile(sample, (2, 1)))
        except SampleError as exc:
            refusal = exc
            continue
        return np.tile(sample, (2, 1))
    raise SampleError(f"the pipeline refuses every warm-up sample near the background mean: {refusal}")


def warm_up_pipeline(pipeline: Pipeline) -> None:
    """Enrol and decode once near the background mean (imports, field tables, compiled code)."""
    origin = _warm_up_samples(pipeline)
    sketch = pipeline.sketch
    helper = sketch.encode(pipeline.secret_from_samples(origin))
    sketch.decode(helper, pipeline.sample_transform(origin[0]))


# -- request bodies for a client that applies the transform itself ----------------------------------------
def _json_ints(value: Any) -> list[int]:
    """A secret or transformed sample as the JSON integer array the service parses (bytes as byte values)."""
    import numpy as np  # start-up: only pipelines need numpy here

    if isinstance(value, bytes):
        return list(value)
    return [int(x) for x in np.asarray(value).ravel()]


def enrolment_request(pipeline: Pipeline, samples: Any) -> dict[str, Any]:
    """JSON body of ``POST /v1/users/{id}/enrolment`` with the transform applied client-side.

    The service then sees only the sketch's secret (levels, a set or bytes), never the raw
    embedding, and stores the same helper data and hash as ``pipeline.enrol`` would. The
    asymmetric interval pipeline sends every capture's levels with its ``spread`` and ``margin``
    instead, because the service derives ``(b, v)`` itself (with its default ``scale``). The
    angular pipeline's secret is a codeword drawn at enrolment and bound to the template: it
    sends the projected template direction (floats), from which the service draws the codeword.
    """
    params = {k: v for k, v in pipeline.sketch.params().items() if v is not None}
    scheme = pipeline.sketch.scheme_name
    if pipeline.kind == "angular":
        template = pipeline.secret_from_samples(samples).template
        return {"scheme": scheme, "params": params, "samples": [[float(x) for x in template]]}
    if pipeline.kind != "asymmetric-interval":
        return {"scheme": scheme, "params": params, "samples": [_json_ints(pipeline.secret_from_samples(samples))]}
    from sketchauth.sketches.interval_template import DEFAULT_SCALE  # start-up: only pipelines need it

    spread, scale, margin = pipeline.spread, pipeline.scale, pipeline.margin  # type: ignore[attr-defined]
    if scale != DEFAULT_SCALE[spread]:
        raise ParameterError(f"the service uses scale {DEFAULT_SCALE[spread]} for spread {spread!r}")
    params.update(spread=spread, margin=margin)
    levels = pipeline.capture_levels(samples)  # type: ignore[attr-defined]
    return {"scheme": scheme, "params": params, "samples": [row.tolist() for row in levels]}


def verification_request(pipeline: Pipeline, sample: Any) -> dict[str, Any]:
    """JSON body of ``POST /v1/users/{id}/verification`` with the transform applied client-side
    (integers, or floats for the angular pipeline, whose sketch compares directions)."""
    transformed = pipeline.sample_transform(sample)
    if pipeline.kind == "angular":
        return {"sample": [float(x) for x in transformed]}
    return {"sample": _json_ints(transformed)}
