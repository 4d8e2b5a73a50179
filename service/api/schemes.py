"""``/v1/schemes``: the schemes on offer with the JSON schema of their parameters."""

from __future__ import annotations

from fastapi import APIRouter

from service.api.deps import ApiKey
from service.problems import problem_doc
from service.models import SchemeInfo, SchemeList
from service.schemes import available_schemes

__all__ = ["router"]

router = APIRouter(
    prefix="/v1", tags=["schemes"], dependencies=[ApiKey], responses={401: problem_doc("missing or invalid API key")}
)


@router.get("/schemes", response_model=SchemeList, summary="Schemes and their parameter schemas")
async def list_schemes() -> SchemeList:
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
        ]
    )
