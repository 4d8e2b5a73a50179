"""The service's scheme table derives from the library's descriptors and only tightens them."""

from __future__ import annotations

from typing import Any

import pytest
from sketchauth_service.limits import RequestLimits
from sketchauth_service.schemes import NOT_OFFERED, available_schemes, scheme_specs

from sketchauth.sketches.registry import registrations, scheme_descriptor

LIMITS = (RequestLimits.default(), RequestLimits(3, 10, 10_000), RequestLimits(2, 100_000, 4 << 20))


def _bounds(prop: dict[str, Any]) -> list[dict[str, Any]]:
    """The integer (or number) alternatives of one published property (a list's items)."""
    options = prop.get("anyOf", [prop])
    out = []
    for option in options:
        if option.get("type") == "array":
            out.append(option["items"])
        elif option.get("type") in ("integer", "number"):
            out.append(option)
    return out


def test_every_registered_family_is_offered_unless_said_why_not() -> None:
    families = {r.name for r in registrations() if not r.composite}
    assert set(scheme_specs()) == families - set(NOT_OFFERED)
    assert all(reason for reason in NOT_OFFERED.values())
    assert {s.name for s in available_schemes()} == set(scheme_specs())


@pytest.mark.parametrize("name", sorted(scheme_specs()))
@pytest.mark.parametrize("limits", LIMITS, ids=lambda lim: f"len{lim.max_sample_length}")
def test_published_bounds_tighten_the_librarys(name: str, limits: RequestLimits) -> None:
    spec, d = scheme_specs()[name], scheme_descriptor(name)
    properties = spec.params_schema(limits)["properties"]
    described = {p.name: p for p in (*d.parameters.fields, *d.template_options)}
    assert list(properties) == list(described)  # every parameter, in the library's order
    for key, p in described.items():
        if (name, key) != ("weighted-vault", "q"):  # the service states its own cap on p*q
            assert properties[key]["description"] == p.description
        for option in _bounds(properties[key]):
            if p.low is not None:
                low = option.get("exclusiveMinimum" if p.exclusive_low else "minimum")
                assert low is not None and low >= p.low, (key, option)
            if p.high is not None:
                assert option["maximum"] <= p.high, (key, option)
            if key in d.length_parameters and p.kind == "int":
                assert option["maximum"] <= limits.max_sample_length
        if key in d.length_parameters and p.kind == "per-feature":
            (array,) = [o for o in properties[key]["anyOf"] if o.get("type") == "array"]
            assert array["maxItems"] <= min(limits.max_sample_length, p.max_items or limits.max_sample_length)
        if p.kind == "choice":
            choices = properties[key].get("enum") or [properties[key].get("const")]
            assert set(choices) <= set(p.choices)


@pytest.mark.parametrize("name", sorted(scheme_specs()))
def test_spec_is_the_descriptors_view(name: str) -> None:
    spec, d = scheme_specs()[name], scheme_descriptor(name)
    assert (spec.sample_kind, spec.description, spec.min_samples, spec.max_samples) == (
        d.sample_kind,
        d.summary,
        d.min_captures,
        d.max_captures,
    )
    assert spec.enrolment_options == tuple(p.name for p in d.template_options)
    assert spec.example == d.example and spec.min_element == d.min_element
    arguments, options = spec.validate_params(spec.example[0])
    assert set(arguments) <= set(d.parameters.names) and set(options) <= set(spec.enrolment_options)


def test_service_caps_are_below_the_librarys() -> None:
    """Where the service stores less than the library allows, the published bound says so."""
    from sketchauth_service.schemes import MAX_VAULT_PRIME, MAX_VAULT_SLOTS

    from sketchauth.sketches import vault

    fuzzy = scheme_specs()["fuzzy-vault"].params_schema()["properties"]
    weighted = scheme_specs()["weighted-vault"].params_schema()["properties"]
    assert fuzzy["p"]["maximum"] == MAX_VAULT_PRIME < vault.MAX_LISTED_SLOTS
    assert weighted["p"]["maximum"] == MAX_VAULT_SLOTS // 3
    assert f"p*q <= {MAX_VAULT_SLOTS}" in weighted["q"]["description"]
    asym = scheme_specs()["asymmetric-interval"].params_schema()["properties"]
    assert (asym["scheme"]["default"], asym["features"]["default"]) == ("s2", 1)
