"""Every limit the service publishes is the limit it enforces: at the limit accepted, one beyond refused.

``GET /v1/schemes`` said ``max_samples: 256`` while a 17th sample was refused ("at most 16"), and
the OpenAPI schema said 65,536 numbers per sample while 4,096 were enforced. This module closes
that class of defect: it reads every bound the running service publishes — each
``minimum``/``maximum``/``exclusiveMinimum``/``minItems``/``maxItems``/``minLength``/``maxLength``
in the OpenAPI request schemas (every scheme's parameters and samples, every pipeline's samples,
the verification body, PINs, user ids) and the ``limits`` of ``GET /v1/schemes`` — and for each
one sends a request at the bound (accepted) and one just beyond it (refused with an RFC 9457
problem naming that field). A bound without a case here fails the test: publishing a new limit
means proving it. The check runs under the default settings and under small configured limits,
since the published figures follow the settings.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from service_testing import AUTH, test_settings
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings

from sketchauth.evaluate import fitting
from sketchauth.evaluate.fitting.options import CalibrationOptions
from sketchauth.evaluate.fitting.transform import fit_transform
from sketchauth.sketches._prime_field import is_prime

#: JSON-schema keywords that state a limit, and which way "beyond" is.
BOUND_KEYWORDS = {
    "minimum": -1,
    "maximum": +1,
    "exclusiveMinimum": 0,
    "minItems": -1,
    "maxItems": +1,
    "minLength": -1,
    "maxLength": +1,
}
PIN_CHAR = "7"


@dataclass(frozen=True)
class Bound:
    variant: str  # a scheme value ("interval", "pipeline:thermometer") or "verification"
    path: str  # "params.n", "params.v[]", "samples", "samples[]", "samples[][]", "pin", ...
    keyword: str
    value: Any

    @property
    def accepted(self) -> Any:
        if self.keyword == "exclusiveMinimum":
            return math.nextafter(self.value, math.inf)
        return self.value

    @property
    def refused(self) -> Any:
        return self.value + BOUND_KEYWORDS[self.keyword]

    def __str__(self) -> str:
        return f"{self.variant}: {self.path} {self.keyword} {self.value}"


# -- reading what is published ------------------------------------------------------------------------


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = document["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _walk(document: dict[str, Any], node: dict[str, Any], path: str) -> Iterator[tuple[str, str, Any]]:
    node = _resolve(document, node)
    for keyword in BOUND_KEYWORDS:
        if keyword in node:
            yield path, keyword, node[keyword]
    for name, sub in node.get("properties", {}).items():
        yield from _walk(document, sub, f"{path}.{name}" if path else name)
    if "items" in node:
        yield from _walk(document, node["items"], path + "[]")
    for branch in node.get("anyOf", []) + node.get("oneOf", []):
        yield from _walk(document, branch, path)


def published_bounds(document: dict[str, Any]) -> list[Bound]:
    """Every bound of the enrolment variants, the verification body and the user id.

    The optional second biometric (``second``) is one schema shared by every enrolment variant: its
    bounds are read once, per second-biometric scheme (variant ``second:<scheme>``).
    """
    bounds: list[Bound] = []
    enrolment = document["paths"]["/v1/users/{user_id}/enrolment"]["post"]
    seconds = []
    for ref in enrolment["requestBody"]["content"]["application/json"]["schema"]["oneOf"]:
        variant = _resolve(document, ref)
        name = variant["properties"]["scheme"]["const"]
        properties = dict(variant["properties"])
        if "second" in properties:
            seconds.append(properties.pop("second"))
        bounds += [Bound(name, *found) for found in _walk(document, {**variant, "properties": properties}, "")]
    assert all(second == seconds[0] for second in seconds), "every variant's 'second' is the same schema"
    for second in seconds[:1]:
        for branch in _resolve(document, second)["anyOf"]:
            if branch.get("type") == "null":
                continue
            for ref in _resolve(document, branch).get("oneOf", [branch]):
                model = _resolve(document, ref)
                name = "second:" + model["properties"]["scheme"]["const"]
                bounds += [Bound(name, *found) for found in _walk(document, model, "second")]
    verification = document["paths"]["/v1/users/{user_id}/verification"]["post"]
    body = verification["requestBody"]["content"]["application/json"]["schema"]
    bounds += [Bound("verification", *found) for found in _walk(document, body, "")]
    for parameter in enrolment["parameters"]:
        bounds += [Bound("user_id", *found) for found in _walk(document, parameter["schema"], "")]
    return sorted(set(bounds), key=str)


# -- requests at and beyond a bound -------------------------------------------------------------------
# One builder per scheme: (path, value, bound, keyword, settings) -> (params, samples). ``value`` is what the tested
# field gets; the other fields are chosen so that the request is valid at the bound, and the
# refused request differs from the accepted one only in the tested field.


def _zeros(count: int) -> list[int]:
    return [0] * count


def _interval(path: str, x: Any, b: Any, kw: str, limits: Any) -> tuple[dict[str, Any], list[Any]]:
    n_max = 2**52
    if path == "params.n":
        return {"n": x, "v": 1, "features": 1}, [[0]]
    if path == "params.v" and kw in ("minItems", "maxItems"):  # the per-feature list: x entries
        return {"n": 256, "v": [1] * x}, [_zeros(b)]
    if path in ("params.v", "params.v[]"):
        v = x if path == "params.v" else [x]
        return {"n": min(max(256, b), n_max), "v": v, "features": 1}, [[0]]
    if path == "params.features":
        return {"n": 256, "v": 1, "features": x}, [_zeros(b)]
    if path == "params.step":
        return {"n": 256, "v": 1, "features": 1, "step": x}, [[0.0]]
    if path == "samples":
        return {"n": 256, "v": 1, "features": 1}, [[0]] * x
    if path == "samples[]":
        return {"n": 256, "v": 1, "features": b}, [_zeros(x)]
    raise KeyError(path)


def _code_offset(path: str, x: Any, b: Any, kw: str, limits: Any) -> tuple[dict[str, Any], list[Any]]:
    if path == "params.n":
        return {"n": x, "t": 1}, [_zeros(b)]
    if path == "params.t":
        n = 2 * b + 1
        return {"n": n, "t": x}, [_zeros(n)]
    if path == "samples":
        return {"n": 3, "t": 1}, [[0, 0, 0]] * x
    if path == "samples[]":
        return {"n": b, "t": 1}, [_zeros(x)]
    if path == "samples[][]":
        return {"n": 3, "t": 1}, [[x, x, x]]
    raise KeyError(path)


def _fuzzy_vault(path: str, x: Any, b: Any, kw: str, limits: Any) -> tuple[dict[str, Any], list[Any]]:
    p = 521  # a prime above the 512 points a vault decodes
    if path == "params.p":
        return {"p": x, "m": 1, "t": 0}, [[0]]
    if path == "params.m":
        return {"p": p, "m": x, "t": 0}, [list(range(b))]
    if path == "params.t":
        m = 2 * b + 1
        return {"p": p, "m": m, "t": x}, [list(range(m))]
    if path == "samples":
        return {"p": p, "m": 1, "t": 0}, [[0]] * x
    if path == "samples[]":
        return {"p": p, "m": b, "t": 0}, [list(range(x))]
    if path == "samples[][]":
        return {"p": p, "m": 1, "t": 0}, [[x]]
    raise KeyError(path)


def _pinsketch(path: str, x: Any, b: Any, kw: str, limits: Any) -> tuple[dict[str, Any], list[Any]]:
    if path == "params.m":
        return {"m": x, "t": 1}, [[1, 2, 3]]
    if path == "params.t":
        return {"m": 16, "t": x}, [[1, 2, 3]]
    if path == "samples":
        return {"m": 16, "t": 1}, [[1, 2, 3]] * x
    if path == "samples[]":
        return {"m": 16, "t": 1}, [list(range(1, x + 1))]
    if path == "samples[][]":
        return {"m": 16, "t": 1}, [[x]]
    raise KeyError(path)


def _asymmetric(path: str, x: Any, b: Any, kw: str, limits: Any) -> tuple[dict[str, Any], list[Any]]:
    if path == "params.n":
        return {"n": x, "q": 1, "scheme": "s1"}, [[0], [0]]
    if path == "params.q":
        return {"n": max(b, 2), "q": x, "scheme": "s1"}, [[0], [0]]
    if path == "params.features":
        return {"n": 256, "q": 16, "features": x}, [_zeros(b)] * 2
    if path == "params.margin":
        return {"n": 256, "q": 16, "margin": x}, [[0], [0]]
    if path == "params.step":
        return {"n": 256, "q": 16, "step": x}, [[0.0], [0.0]]
    if path == "samples":
        return {"n": 256, "q": 16}, [[0]] * x
    if path == "samples[]":
        return {"n": 256, "q": 16, "features": b}, [_zeros(x)] * 2
    raise KeyError(path)


def _weighted_vault(path: str, x: Any, b: Any, kw: str, limits: Any) -> tuple[dict[str, Any], list[Any]]:
    if path == "params.p":
        return {"p": x, "q": 3, "g": 1, "t": 0}, [[0], [0]]
    if path == "params.q":
        return {"p": 2, "q": x, "g": 1, "t": 0}, [[0], [0]]
    if path == "params.g":
        # every element seen in both captures weighs q - 1 = 63: b // 63 + 1 of them reach g = b
        return {"p": 600, "q": 64, "g": x, "t": 0}, [list(range(b // 63 + 1))] * 2
    if path == "params.t":
        g = 2 * b + 1
        return {"p": 600, "q": 64, "g": g, "t": x}, [list(range(g // 63 + 1))] * 2
    if path == "params.min_count":
        return {"p": 50, "q": 4, "g": 3, "t": 0, "min_count": x}, [[3, 17]] * max(b, 2)
    if path == "samples":
        return {"p": 50, "q": 4, "g": 3, "t": 0}, [[3, 17]] * x
    if path == "samples[]":
        return {"p": limits.max_sample_length + 1, "q": 3, "g": 1, "t": 0}, [list(range(x))] * 2
    if path == "samples[][]":
        return {"p": 50, "q": 4, "g": 3, "t": 0}, [[x, 17]] * 2
    raise KeyError(path)


def _embedding(n: int) -> list[float]:
    return [1.0] + [0.5] * (n - 1)


def _angular(path: str, x: Any, b: Any, kw: str, limits: Any) -> tuple[dict[str, Any], list[Any]]:
    if path == "params.dimension":
        return {"dimension": x, "alpha": 1}, [_embedding(b)]
    if path == "params.alpha":
        return {"dimension": b + 1, "alpha": x}, [_embedding(b + 1)]
    if path == "params.min_cos":
        return {"dimension": 8, "alpha": 1, "min_cos": x}, [_embedding(8)]
    if path == "samples":
        return {"dimension": 8, "alpha": 1}, [_embedding(8)] * x
    if path == "samples[]":
        return {"dimension": b, "alpha": 1}, [_embedding(x) if x > 0 else []]
    raise KeyError(path)


def _angular_polar(path: str, x: Any, b: Any, kw: str, limits: Any) -> tuple[dict[str, Any], list[Any]]:
    if path == "params.dimension":
        return {"dimension": x, "bits": 1}, [_embedding(b)]
    if path == "params.bits":
        n = max(8, b + 1)
        return {"dimension": n, "bits": x}, [_embedding(n)]
    if path == "params.list_size":
        return {"dimension": 8, "bits": 1, "list_size": x}, [_embedding(8)]
    if path == "params.crc":  # room for the CRC at the bound beside one data bit (bits + crc < dimension)
        n = max(8, b + 2)
        return {"dimension": n, "bits": 1, "crc": x}, [_embedding(n)]
    if path == "params.min_cos":
        return {"dimension": 8, "bits": 1, "min_cos": x}, [_embedding(8)]
    if path == "samples":
        return {"dimension": 8, "bits": 1}, [_embedding(8)] * x
    if path == "samples[]":
        return {"dimension": b, "bits": 1}, [_embedding(x) if x > 0 else []]
    raise KeyError(path)


SCHEME_BUILDERS: dict[str, Callable[..., tuple[dict[str, Any], list[Any]]]] = {
    "interval": _interval,
    "code-offset": _code_offset,
    "fuzzy-vault": _fuzzy_vault,
    "pinsketch": _pinsketch,
    "asymmetric-interval": _asymmetric,
    "weighted-vault": _weighted_vault,
    "angular": _angular,
    "angular-polar": _angular_polar,
}


@dataclass
class Service:
    client: TestClient
    settings: Settings
    document: dict[str, Any]
    listing: dict[str, Any]
    examples: dict[str, dict[str, Any]]  # scheme value -> a working enrolment body
    serial: int = 0

    def user(self) -> str:
        self.serial += 1
        return f"user-{self.serial}"

    def enrol(self, body: dict[str, Any], user: str | None = None) -> Any:
        return self.client.post(f"/v1/users/{user or self.user()}/enrolment", headers=AUTH, json=body)

    def verify(self, user: str, body: dict[str, Any]) -> Any:
        return self.client.post(f"/v1/users/{user}/verification", headers=AUTH, json=body)


def _enrolment(service: Service, bound: Bound, x: Any) -> dict[str, Any]:
    """The enrolment body putting ``x`` at ``bound``'s field of ``bound.variant``."""
    if bound.path == "pin":
        return {**service.examples[bound.variant], "pin": PIN_CHAR * x}
    if bound.variant.startswith("pipeline:"):
        example = service.examples[bound.variant]
        dimension = len(example["samples"][0])
        # 0.5, not 0: an angular pipeline refuses a capture without a direction
        if bound.path == "samples":
            return {**example, "samples": [[0.5] * dimension] * x}
        if bound.path == "samples[]":
            return {**example, "samples": [[0.5] * x] * len(example["samples"])}
        raise KeyError(bound.path)
    if bound.variant.startswith("second:"):  # a second biometric with x at the field, over a small first
        scheme, path = bound.variant.removeprefix("second:"), bound.path.removeprefix("second.")
        params, samples = SCHEME_BUILDERS[scheme](path, x, bound.value, bound.keyword, service.settings)
        first = {"scheme": "interval", "params": {"n": 256, "v": 1, "features": 1}, "samples": [[0]]}
        return {**first, "second": {"scheme": scheme, "params": params, "samples": samples}}
    params, samples = SCHEME_BUILDERS[bound.variant](bound.path, x, bound.value, bound.keyword, service.settings)
    return {"scheme": bound.variant, "params": params, "samples": samples}


def _check_enrolment(service: Service, bound: Bound) -> list[str]:
    accepted = service.enrol(_enrolment(service, bound, bound.accepted))
    refused = service.enrol(_enrolment(service, bound, bound.refused))
    return _outcome(bound, accepted, 201, refused)


#: Input dimension of the fitted pipelines (12 informative + 2 useless features).
ANGULAR_FEATURES = 14


def _check_verification(service: Service, bound: Bound) -> list[str]:
    user = service.user()
    if bound.path == "sample":
        features = bound.value
        enrolled = service.enrol(
            {"scheme": "interval", "params": {"n": 256, "v": 1, "features": features}, "samples": [_zeros(features)]},
            user,
        )
        assert enrolled.status_code == 201, enrolled.text
        accepted = service.verify(user, {"sample": _zeros(bound.accepted)})
        refused = service.verify(user, {"sample": _zeros(bound.refused)})
    elif bound.path == "pin":
        pin = PIN_CHAR * bound.accepted
        body = {"scheme": "interval", "params": {"n": 256, "v": 1, "features": 1}, "samples": [[0]], "pin": pin}
        assert service.enrol(body, user).status_code == 201
        accepted = service.verify(user, {"sample": [0], "pin": pin})
        refused = service.verify(user, {"sample": [0], "pin": PIN_CHAR * bound.refused})
    elif bound.path == "second_sample":  # the second biometric's sample, under the same length limit
        features = bound.value
        second = {
            "scheme": "interval",
            "params": {"n": 256, "v": 1, "features": features},
            "samples": [_zeros(features)],
        }
        body = {"scheme": "interval", "params": {"n": 256, "v": 1, "features": 1}, "samples": [[0]], "second": second}
        assert service.enrol(body, user).status_code == 201
        accepted = service.verify(user, {"sample": [0], "second_sample": _zeros(bound.accepted)})
        refused = service.verify(user, {"sample": [0], "second_sample": _zeros(bound.refused)})
    elif bound.path in ("samples", "samples[]"):  # several captures, for an angular pipeline enrolment
        capture = [1.0] + [0.5] * (ANGULAR_FEATURES - 1)
        assert service.enrol({"scheme": "pipeline:angular", "samples": [capture]}, user).status_code == 201
        if bound.path == "samples":
            accepted = service.verify(user, {"samples": [capture] * bound.accepted})
            refused = service.verify(user, {"samples": [capture] * bound.refused})
        else:  # the length bound holds whatever the pipeline: a capture of another length is a failed attempt
            accepted = service.verify(user, {"samples": [_zeros(bound.accepted)]})
            refused = service.verify(user, {"samples": [_zeros(bound.refused)]})
            return _outcome(bound, accepted, 200, refused)
    else:
        raise KeyError(bound.path)
    problems = _outcome(bound, accepted, 200, refused)
    if accepted.status_code == 200 and accepted.json() != {"verified": True}:
        problems.append(f"{bound}: the sample at the bound did not verify: {accepted.text}")
    return problems


def _check_user_id(service: Service, bound: Bound) -> list[str]:
    body = {"scheme": "interval", "params": {"n": 256, "v": 1, "features": 1}, "samples": [[0]]}
    accepted = service.enrol(body, "u" * bound.accepted) if bound.accepted > 0 else None
    refused = service.enrol(body, "u" * bound.refused) if bound.refused > 0 else None
    if accepted is None or refused is None:  # an empty path segment is another route
        return [] if bound.keyword == "minLength" and bound.value == 1 else [f"{bound}: no request can test it"]
    return _outcome(bound, accepted, 201, refused, loc_parts=["path", "user_id"])


def _outcome(bound: Bound, accepted: Any, status: int, refused: Any, loc_parts: list[str] | None = None) -> list[str]:
    problems = []
    if accepted.status_code != status:
        problems.append(f"{bound}: the request at the bound was refused: {accepted.status_code} {accepted.text[:300]}")
    if refused.status_code != 422 or refused.headers.get("content-type") != "application/problem+json":
        problems.append(
            f"{bound}: the request beyond the bound was not a 422 problem: {refused.status_code} {refused.text[:300]}"
        )
        return problems
    parts = loc_parts or [p for p in bound.path.replace("[]", "").split(".") if p]
    locs = [err["loc"].split("/") for err in refused.json().get("errors", [])]
    if not any(all(part in loc for part in parts) for loc in locs):
        problems.append(f"{bound}: refused, but not for that field: {refused.json()}")
    return problems


def _check(service: Service, bound: Bound) -> list[str]:
    if bound.variant == "verification":
        return _check_verification(service, bound)
    if bound.variant == "user_id":
        return _check_user_id(service, bound)
    return _check_enrolment(service, bound)


# -- the services under test --------------------------------------------------------------------------


def _fit_pipelines(directory: Path) -> None:
    from sketchauth.evaluate.embeddings import EmbeddingPopulation
    from sketchauth.features.angular import AngularPipeline

    population = EmbeddingPopulation(informative=12, useless=2, noise_scale=0.5, seed=2)
    transform = fit_transform(population.draw(150, 4, seed=1), levels=16)
    heldout = population.draw(80, 4, seed=2)
    centre = fit_transform(population.draw(150, 4, seed=1), projection="centre", normalise=True)
    for name, pipeline in {
        "thermometer": fitting.thermometer.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=0.01)),
        "interval": fitting.interval.for_target_fmr(transform, heldout, CalibrationOptions(target_fmr=0.01)),
        # verification's "samples" (several captures of one attempt) are for angular pipeline enrolments
        "angular": AngularPipeline(centre, range(centre.dimensions), min_cos=0.0, alpha=2),
    }.items():
        (directory / f"{name}.json").write_text(pipeline.to_json())


LIMITS = {
    "default": {},
    "small": {"max_samples": 3, "max_sample_length": 16, "max_body_bytes": 4096},
}


@pytest.fixture(scope="module", params=sorted(LIMITS))
def service(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    directory = tmp_path_factory.mktemp("pipelines")
    _fit_pipelines(directory)
    settings = test_settings(tmp_path_factory.mktemp("db"), pipelines_dir=str(directory), **LIMITS[request.param])
    with TestClient(create_app(settings)) as client:
        document = client.get("/openapi.json").json()
        listing = client.get("/v1/schemes", headers=AUTH).json()
        examples: dict[str, dict[str, Any]] = {}
        for ref in document["paths"]["/v1/users/{user_id}/enrolment"]["post"]["requestBody"]["content"][
            "application/json"
        ]["schema"]["oneOf"]:
            variant = _resolve(document, ref)
            example = variant["examples"][0]
            examples[example["scheme"]] = example
        # the published example of a pipeline enrolment is zeros, which this angular pipeline's
        # normalising transform refuses (no direction): give it a capture with one
        angular = examples["pipeline:angular"]
        examples["pipeline:angular"] = {**angular, "samples": [[1.0] + [0.5] * (ANGULAR_FEATURES - 1)]}
        yield Service(client, settings, document, listing, examples)


# -- tests ---------------------------------------------------------------------------------------------


def test_every_published_bound_is_enforced_exactly_there(service: Service) -> None:
    bounds = published_bounds(service.document)
    problems: list[str] = []
    for bound in bounds:
        try:
            problems += _check(service, bound)
        except KeyError:
            problems.append(f"{bound}: published, but this test has no case for it: add one")
    assert not problems, "\n".join(problems)
    # What is covered, so that a bound silently dropped from the schema shows up too.
    covered = {(b.variant, b.path, b.keyword) for b in bounds}
    for scheme in SCHEME_BUILDERS:
        assert {
            (scheme, "samples", "minItems"),
            (scheme, "samples", "maxItems"),
            (scheme, "pin", "maxLength"),
        } <= covered
    assert {("verification", "sample", "maxItems"), ("user_id", "", "maxLength")} <= covered


def test_the_published_figures_are_the_settings(service: Service) -> None:
    settings = service.settings
    assert service.listing["limits"] == {
        "max_samples": settings.max_samples,
        "max_sample_length": settings.max_sample_length,
        "max_body_bytes": settings.max_body_bytes,
    }
    bounds = {(b.variant, b.path, b.keyword): b.value for b in published_bounds(service.document)}
    assert bounds[("verification", "sample", "maxItems")] == settings.max_sample_length
    for entry in service.listing["schemes"]:
        name = entry["name"]
        # GET /v1/schemes and the OpenAPI request schema say the same thing.
        assert (entry["min_samples"], entry["max_samples"]) == (
            bounds[(name, "samples", "minItems")],
            bounds[(name, "samples", "maxItems")],
        )
        assert entry["max_samples"] <= settings.max_samples
        variant = next(
            _resolve(service.document, ref)
            for ref in service.document["paths"]["/v1/users/{user_id}/enrolment"]["post"]["requestBody"]["content"][
                "application/json"
            ]["schema"]["oneOf"]
            if _resolve(service.document, ref)["properties"]["scheme"]["const"] == name
        )
        # ... and the same parameter bounds and required keys.
        published = service.document | {"components": {"schemas": {}}}
        listed = set(_walk(published, entry["params_schema"], ""))
        assert set(_walk(service.document, variant["properties"]["params"], "")) == listed
        assert (
            _resolve(service.document, variant["properties"]["params"])["required"]
            == entry["params_schema"]["required"]
        )
    assert bounds[("asymmetric-interval", "samples", "maxItems")] == settings.max_samples
    assert bounds[("weighted-vault", "samples", "maxItems")] == settings.max_samples
    for pipeline in service.listing["pipelines"]:
        tag = pipeline["enrol_as"]
        assert (pipeline["min_samples"], pipeline["max_samples"]) == (
            bounds[(tag, "samples", "minItems")],
            bounds[(tag, "samples", "maxItems")],
        )
        assert (
            bounds[(tag, "samples[]", "minItems")]
            == bounds[(tag, "samples[]", "maxItems")]
            == pipeline["input_dimension"]
        )


def test_the_body_size_limit_is_exact(service: Service) -> None:
    limit = service.listing["limits"]["max_body_bytes"]
    head = b'{"sample": [0]'
    for size, status in ((limit, 200), (limit + 1, 413)):
        body = head + b" " * (size - len(head) - 1) + b"}"
        assert len(body) == size
        r = service.client.post(
            "/v1/users/nobody/verification", headers={**AUTH, "content-type": "application/json"}, content=body
        )
        assert r.status_code == status, (size, r.text)


def test_library_bounds_the_schema_states_hold_in_the_library() -> None:
    """The published vault maximum is the largest prime within the service's cap, and the
    published scheme bounds are the library's own constants."""
    from sketchauth_service.schemes import MAX_VAULT_PRIME, MAX_VAULT_SLOTS, scheme_specs

    from sketchauth.sketches import asymmetric, interval, pinsketch, vault
    from sketchauth.sketches._gf2m import MAX_M, MIN_M

    assert is_prime(MAX_VAULT_PRIME) and not any(is_prime(p) for p in range(MAX_VAULT_PRIME + 1, MAX_VAULT_SLOTS + 1))
    schema = {name: spec.params_schema() for name, spec in scheme_specs().items()}
    assert schema["interval"]["properties"]["n"]["maximum"] == interval.MAX_N
    assert schema["asymmetric-interval"]["properties"]["n"]["maximum"] == asymmetric.MAX_N
    assert (schema["pinsketch"]["properties"]["m"]["minimum"], schema["pinsketch"]["properties"]["m"]["maximum"]) == (
        MIN_M,
        MAX_M,
    )
    assert schema["pinsketch"]["properties"]["t"]["maximum"] == pinsketch.MAX_T
    assert schema["fuzzy-vault"]["properties"]["m"]["maximum"] == vault.MAX_CANDIDATE_POINTS
    assert schema["weighted-vault"]["properties"]["g"]["maximum"] == vault.MAX_CANDIDATE_POINTS


# -- rules between parameters (x-rules): at the rule accepted, one beyond refused --------------------------
#: (scheme, rule) -> (parameters on the rule's edge, their samples, parameters one step beyond it).
RULE_CASES: dict[tuple[str, str], tuple[dict[str, Any], list[Any], dict[str, Any]]] = {
    ("interval", "v <= n"): ({"n": 16, "v": 16, "features": 1}, [[3]], {"n": 16, "v": 17, "features": 1}),
    ("code-offset", "2*t < n"): ({"n": 5, "t": 2}, [[0] * 5], {"n": 4, "t": 2}),
    ("pinsketch", "t < 2**(m-1)"): ({"m": 8, "t": 127}, [[1, 2, 3]], {"m": 8, "t": 128}),
    ("fuzzy-vault", "m <= p"): ({"p": 5, "m": 5, "t": 0}, [[0, 1, 2, 3, 4]], {"p": 5, "m": 6, "t": 0}),
    ("fuzzy-vault", "2*t + 1 <= m"): ({"p": 521, "m": 3, "t": 1}, [[0, 1, 2]], {"p": 521, "m": 2, "t": 1}),
    ("weighted-vault", "2*t + 1 <= g"): (
        {"p": 50, "q": 4, "g": 3, "t": 1},
        [[3, 17]] * 2,
        {"p": 50, "q": 4, "g": 3, "t": 2},
    ),
    ("weighted-vault", "p*q <= 131072"): (
        {"p": 32768, "q": 4, "g": 3, "t": 0},
        [[3, 17]] * 2,
        {"p": 32769, "q": 4, "g": 3, "t": 0},
    ),
    ("asymmetric-interval", "features*(n//2 + 1) <= 1048576 if scheme in ('s2', 's3')"): (
        {"n": 2097151, "q": 64, "scheme": "s2", "features": 1},
        [[1000000], [1000003]],
        {"n": 2097152, "q": 64, "scheme": "s2", "features": 1},
    ),
}


def test_every_published_rule_is_enforced_exactly_there(service: Service) -> None:
    """Each ``x-rules`` entry of each scheme: parameters on its edge enrol, one step beyond is a 422
    naming the rule. A published rule without a case here fails the test."""
    problems = []
    published = {
        (entry["name"], rule)
        for entry in service.listing["schemes"]
        for rule in entry["params_schema"].get("x-rules", [])
    }
    assert published == set(RULE_CASES), published ^ set(RULE_CASES)
    for (scheme, rule), (edge, samples, beyond) in RULE_CASES.items():
        accepted = service.enrol({"scheme": scheme, "params": edge, "samples": samples})
        if accepted.status_code != 201:
            problems.append(f"{scheme}: {rule}: on the edge refused: {accepted.text[:300]}")
        refused = service.enrol({"scheme": scheme, "params": beyond, "samples": samples})
        if refused.status_code != 422 or f"{rule} must hold" not in refused.json().get("detail", ""):
            problems.append(
                f"{scheme}: {rule}: beyond not refused by the rule: {refused.status_code} {refused.text[:300]}"
            )
    assert not problems, "\n".join(problems)
