"""``/v1/schemes``: the schemes on offer with the JSON schema of their parameters, the
server-side feature pipelines (``SKETCHAUTH_PIPELINES``) with their fingerprints, and the
request limits. Every figure is the one the request models enforce (same limits, same models)."""

from __future__ import annotations

from fastapi import APIRouter

from sketchauth_service.api.deps import ANY_KEY, State, scoped
from sketchauth_service.limits import RequestLimits
from sketchauth_service.models import LimitsInfo, PipelineInfo, SchemeInfo, SchemeList
from sketchauth_service.pipelines import PIPELINE_PREFIX, min_samples
from sketchauth_service.problems import problem_doc
from sketchauth_service.schemes import SchemeSpec, available_schemes

__all__ = ["router"]

router = APIRouter(
    prefix="/v1",
    tags=["schemes"],
    dependencies=[scoped(*ANY_KEY)],
    responses={
        401: problem_doc("missing or invalid API key"),
        429: problem_doc("too many wrong API keys from this address: wait Retry-After seconds"),
    },
)


@router.get("/schemes", response_model=SchemeList, summary="Schemes and their parameter schemas; feature pipelines")
async def list_schemes(state: State) -> SchemeList:
    limits = RequestLimits.of(state.settings)
    return SchemeList(
        schemes=[_scheme_info(spec, limits) for spec in available_schemes()],
        pipelines=[
            PipelineInfo(
                name=name,
                enrol_as=PIPELINE_PREFIX + name,
                kind=loaded.pipeline.kind,
                scheme=loaded.pipeline.sketch.scheme_name,
                params=loaded.pipeline.sketch.params(),
                input_dimension=loaded.pipeline.transform.features,
                min_samples=min_samples(loaded.pipeline),
                max_samples=limits.max_samples,
                fingerprint=loaded.fingerprint,
                transform_sha256=loaded.transform_sha256,
            )
            for name, loaded in sorted(state.pipelines.items())
        ],
        limits=LimitsInfo(
            max_samples=limits.max_samples,
            max_sample_length=limits.max_sample_length,
            max_body_bytes=limits.max_body_bytes,
        ),
    )


def _scheme_info(spec: SchemeSpec, limits: RequestLimits) -> SchemeInfo:
    """What a client needs to enrol with ``spec`` here: the same figures the request models enforce."""
    least, most = spec.sample_count(limits)
    return SchemeInfo(
        name=spec.name,
        sample_kind=spec.sample_kind,
        min_samples=least,
        max_samples=most,
        description=spec.description,
        params_schema=spec.params_schema(limits),
    )
