"""Pipeline configurations read back: one JSON document, or a directory of them registered by name."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sketchauth.errors import ParameterError
from sketchauth.features.angular import AngularPipeline
from sketchauth.features.asymmetric import AsymmetricIntervalPipeline
from sketchauth.features.base import PIPELINE_FORMAT, Pipeline, _dims
from sketchauth.features.code_offset import CodeOffsetPipeline
from sketchauth.features.interval import IntervalPipeline
from sketchauth.features.thermometer import ThermometerPipeline
from sketchauth.features.transform import FeatureTransform

__all__ = ["MAX_PIPELINE_BYTES", "load_pipeline", "load_pipelines"]


_KINDS: dict[str, type[Pipeline]] = {
    IntervalPipeline.kind: IntervalPipeline,
    AsymmetricIntervalPipeline.kind: AsymmetricIntervalPipeline,
    CodeOffsetPipeline.kind: CodeOffsetPipeline,
    ThermometerPipeline.kind: ThermometerPipeline,
    AngularPipeline.kind: AngularPipeline,
}


def load_pipeline(config: str | bytes | Mapping[str, Any]) -> Pipeline:
    """A pipeline from its JSON configuration (``ParameterError`` for anything malformed).

    The embedded transform must match its recorded SHA-256 fingerprint. A pipeline written with
    an ``unusable`` reason (``sketchauth features fit --keep-unusable``) loads with
    :attr:`~sketchauth.features.base.Pipeline.unusable` set: serving it is the caller's refusal to make.
    """
    if isinstance(config, (str, bytes)):
        try:
            config = json.loads(config)
        except (ValueError, TypeError):
            raise ParameterError("pipeline configuration is not valid JSON") from None
    if not isinstance(config, Mapping) or config.get("format") != PIPELINE_FORMAT:
        raise ParameterError(f"not a pipeline configuration (expected format {PIPELINE_FORMAT!r})")
    cls = _KINDS.get(config.get("kind"))  # type: ignore[arg-type]
    if cls is None:
        raise ParameterError(f"unknown pipeline kind {config.get('kind')!r}; known: {', '.join(_KINDS)}")
    transform = FeatureTransform.from_dict(config.get("transform"))  # type: ignore[arg-type]
    if config.get("transform_sha256") != transform.fingerprint:
        raise ParameterError("pipeline transform does not match its recorded fingerprint")
    if not isinstance(config.get("params"), Mapping) or not isinstance(config.get("settings", {}), Mapping):
        raise ParameterError("pipeline params and settings must be objects")
    try:
        pipeline = cls._from_config(transform, _dims(config.get("dims"), transform), config)
    except (KeyError, TypeError):
        raise ParameterError("pipeline configuration lacks a required field") from None
    if pipeline.sketch.scheme_name != config.get("scheme"):
        raise ParameterError("pipeline scheme does not match its kind")
    unusable = config.get("unusable")
    if unusable is not None and not (isinstance(unusable, str) and unusable):
        raise ParameterError("pipeline 'unusable' must be a non-empty reason (a string)")
    pipeline.unusable = unusable
    return pipeline


#: Pipeline names a deployment may register: file stems of ``<name>.json``.
_PIPELINE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: A pipeline file larger than this is not a configuration (a 512×4096 projection is ~40 MB).
MAX_PIPELINE_BYTES = 64 * 1024 * 1024


def load_pipelines(directory: str | Path) -> dict[str, Pipeline]:
    """Every ``<name>.json`` pipeline configuration in ``directory``, by name (e.g. ``SKETCHAUTH_PIPELINES``).

    This is how a service registers pipelines by name: configuration stored once, beside the
    scheme settings. Names are the file stems (letters, digits, ``._-``; at most 64 characters);
    anything else in the directory is ignored. ``ParameterError`` names the first bad file.
    """
    root = Path(directory)
    if not root.is_dir():
        raise ParameterError(f"pipeline directory {root} does not exist")
    found: dict[str, Pipeline] = {}
    for path in sorted(root.glob("*.json")):
        if not _PIPELINE_NAME.match(path.stem):
            continue
        if path.stat().st_size > MAX_PIPELINE_BYTES:
            raise ParameterError(f"{path.name} is larger than {MAX_PIPELINE_BYTES} bytes")
        try:
            found[path.stem] = load_pipeline(path.read_text(encoding="utf-8"))
        except ParameterError as exc:
            raise ParameterError(f"{path.name}: {exc}") from None
    return found
