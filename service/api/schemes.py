"""``/v1/schemes``: the schemes on offer with the JSON schema of their parameters, and the
server-side feature pipelines (``SKETCHAUTH_PIPELINES``) with their fingerprints."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.deps import ApiKey, State
from service.models import PipelineInfo, SchemeInfo, SchemeList
from service.pipelines import PIPELINE_PREFIX, min_samples
from service.problems import problem_doc
from service.schemes import available_schemes

__all__ = ["router"]

router = APIRouter(
    prefix="/v1", tags=["schemes"], dependencies=[ApiKey], responses={401: problem_doc("missing or invalid API key")}
)


@router.get("/schemes", response_model=SchemeList, summary="Schemes and their parameter schemas; feature pipelines")
async def list_schemes(state: State) -> SchemeList:
    return SchemeList(
        schemes=[
            SchemeInfo(
                name=spec.name,
                sample_kind=spec.sample_kind,
                min_samples=spec.min_samples,
                max_samples=spec.max_samples,
                description=spec.description,
                params_schema=spec.params_schema(),
            )
            for spec in available_schemes()
        ],
        pipelines=[
            PipelineInfo(
                name=name,
                enrol_as=PIPELINE_PREFIX + name,
                kind=loaded.pipeline.kind,
                scheme=loaded.pipeline.sketch.scheme_name,
                params=loaded.pipeline.sketch.params(),
                input_dimension=loaded.pipeline.transform.features,
                min_samples=min_samples(loaded.pipeline),
                max_samples=state.settings.max_samples,
                fingerprint=loaded.fingerprint,
                transform_sha256=loaded.transform_sha256,
            )
            for name, loaded in sorted(state.pipelines.items())
        ],
    )
