"""The scheme registry and descriptors: every family describes itself completely and truthfully.

A new scheme is one module (its class with a ``SchemeDescriptor``), one line in
``sketchauth.sketches.registry.BUILTIN`` and its tests; these tests hold every registered family
to the contract the other layers rely on.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import numpy as np
import pytest

import sketchauth
import sketchauth.sketches as sketches
from sketchauth.errors import DecodeError, ParameterError
from sketchauth.sketches.base import SchemeDescriptor, SecureSketch
from sketchauth.sketches.params import Parameter
from sketchauth.sketches.registry import descriptors, registrations, scheme_class, scheme_descriptor

FAMILIES = [r.name for r in registrations() if not r.composite]

#: A sample far beyond the tolerance of each family's example (decoding must fail or miss).
FAR = {
    "code-offset": list(range(100, 116)),
    "pinsketch": [11, 12, 13, 14, 15, 16, 17, 18, 19, 20],
    "fuzzy-vault": [1, 2, 4, 5, 6, 7, 8, 9],
    "weighted-vault": [20, 21, 22],
}


def _same(a: Any, b: Any) -> bool:
    """Equality of secrets as the schemes return them (bytes, arrays, tuples of arrays)."""
    if isinstance(a, tuple) or isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bytes) or isinstance(b, bytes):
        return bytes(a) == bytes(b)
    return np.array_equal(np.asarray(a), np.asarray(b))


def _example(name: str) -> tuple[SecureSketch, Any, Any]:
    """The family's example sketch, its enrolled secret and the genuine sample."""
    d = scheme_descriptor(name)
    params, captures, genuine = d.example
    sketch = scheme_class(name).from_params(_complete(d, params))
    return sketch, d.secret_from_captures(sketch, captures, {}), genuine


def _complete(d: SchemeDescriptor, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the defaults of left-out required parameters (examples may omit them)."""
    out = dict(params)
    for p in d.parameters.fields:
        if p.required and p.name not in out:
            out[p.name] = p.default
    return out


# -- the registry -------------------------------------------------------------------------------------
def test_registry_lines_give_the_ids_classes_and_exports() -> None:
    ids = [r.scheme_id for r in registrations()]
    assert len(set(ids)) == len(ids)
    for r in registrations():
        cls = scheme_class(r.name)
        assert cls.scheme_name == r.name
        if r.module.startswith("sketchauth.sketches."):
            assert getattr(sketches, r.class_name) is cls
            assert getattr(sketchauth, r.class_name) is cls


def test_unknown_scheme_and_composite_descriptor_are_refused() -> None:
    with pytest.raises(ParameterError, match="unknown scheme 'nope'"):
        scheme_class("nope")
    with pytest.raises(ParameterError, match="no descriptor"):
        scheme_descriptor("mixed")
    assert list(descriptors()) == FAMILIES


# -- complete descriptors -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", FAMILIES)
def test_every_family_has_a_complete_descriptor(name: str) -> None:
    cls = scheme_class(name)
    d = cls.descriptor
    assert isinstance(d, SchemeDescriptor) and d.name == name == cls.scheme_name
    assert cls.parameters is d.parameters
    assert d.sample_kind in ("vector", "bytes", "set") and d.summary
    # Every key from_params takes is described, with consistent bounds.
    assert sorted(p.name for p in d.parameters.fields) == sorted(d.parameters.names)
    for p in (*d.parameters.fields, *d.template_options):
        _check_parameter(p)
    if d.template is not None:
        module, _, attr = d.template.partition(":")
        assert callable(getattr(importlib.import_module(module), attr))
        # A template fuses several captures (the angular one enrols from one as well).
        assert d.max_captures is None or d.max_captures >= 2
    else:
        assert (d.min_captures, d.max_captures, d.template_options) == (1, 1, ())
    if d.sweep is not None:
        assert d.default_sweep is not None
        settings = d.default_sweep(d.example[0])
        assert settings and all(isinstance(s, int) for s in settings) and settings == sorted(set(settings))
    # The attacks name a key for every variant the parameters allow.
    variants = d.parameters.field(d.variant).choices if d.variant else ()
    keys = {f"{name}/{v}" for v in variants} if variants else {name}
    for table in (d.linkage_attacks, d.repeated_attacks):
        assert not table or set(table) == keys
        assert all(isinstance(attack, str) and attack for attack in table.values())


def _check_parameter(p: Parameter) -> None:
    assert p.name and p.description
    assert p.kind in ("int", "per-feature", "number", "choice")
    if p.kind == "choice":
        assert p.choices and (p.default is None or p.default in p.choices)
    if p.low is not None and p.high is not None:
        assert p.low <= p.high
    if p.kind == "per-feature":
        assert p.max_items is not None and p.max_items >= 1


@pytest.mark.parametrize("name", FAMILIES)
def test_the_example_enrols_and_decodes(name: str) -> None:
    sketch, secret, genuine = _example(name)
    helper = sketch.encode(secret)
    assert _same(sketch.decode(helper, genuine), sketch.check_secret(secret))


@pytest.mark.parametrize("name", [n for n in FAMILIES if scheme_descriptor(n).small_instance is not None])
def test_small_instances_build_and_their_secrets_are_secrets(name: str) -> None:
    d = scheme_descriptor(name)
    assert d.small_instance is not None
    for variant in d.parameters.field(d.variant).choices if d.variant else (None,):
        params, secrets = d.small_instance({} if variant is None else {d.variant: variant})
        sketch = scheme_class(name).from_params(params)
        if variant is not None:
            assert sketch.params()[d.variant] == variant
        assert secrets
        for secret in secrets:
            sketch.check_secret(secret)


@pytest.mark.parametrize("name", FAMILIES)
def test_published_integer_bounds_are_the_constructors(name: str) -> None:
    """Just outside each described bound, the constructor refuses the parameter."""
    d = scheme_descriptor(name)
    base = _complete(d, d.example[0])
    for p in d.parameters.fields:
        if p.kind != "int":
            continue
        for outside in (None if p.low is None else int(p.low) - 1, None if p.high is None else p.high + 1):
            if outside is None:
                continue
            with pytest.raises(ParameterError):
                scheme_class(name).from_params({**base, p.name: outside})


# -- from_params -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FAMILIES)
def test_from_params_round_trip(name: str) -> None:
    sketch, _, _ = _example(name)
    again = scheme_class(name).from_params(sketch.params())
    assert again == sketch and again.params() == sketch.params()


@pytest.mark.parametrize("name", FAMILIES)
def test_missing_or_unknown_key_is_a_parameter_error_naming_it(name: str) -> None:
    sketch, _, _ = _example(name)
    params = sketch.params()
    for key in scheme_class(name).parameters.required:
        with pytest.raises(ParameterError, match=repr(key)):
            scheme_class(name).from_params({k: v for k, v in params.items() if k != key})
    with pytest.raises(ParameterError, match="'bogus_key'"):
        scheme_class(name).from_params({**params, "bogus_key": 1})
    with pytest.raises(ParameterError, match="mapping"):
        scheme_class(name).from_params([("a", 1)])  # type: ignore[arg-type]


# -- batches ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", FAMILIES)
def test_batch_signatures_are_the_interfaces(name: str) -> None:
    cls = scheme_class(name)
    for method in ("encode_many", "decode_many"):
        own = inspect.signature(getattr(cls, method))
        assert list(own.parameters) == list(inspect.signature(getattr(SecureSketch, method)).parameters)
    assert inspect.signature(cls.decode_many).parameters["errors"].default == "raise"


@pytest.mark.parametrize("name", FAMILIES)
def test_encode_many_and_decode_many_match_single_calls(name: str) -> None:
    sketch, secret, genuine = _example(name)
    helpers = sketch.encode_many([secret, secret])
    assert len(helpers) == 2
    for result in sketch.decode_many(helpers, [genuine, genuine]):
        assert _same(result, sketch.check_secret(secret))
    assert sketch.decode_many([], []) == [] and sketch.encode_many([]) == []


@pytest.mark.parametrize("name", sorted(FAR))
def test_decode_many_errors_return_puts_the_decode_error_in_place(name: str) -> None:
    sketch, secret, genuine = _example(name)
    helpers = sketch.encode_many([secret, secret, secret])
    samples = [genuine, FAR[name], genuine]
    with pytest.raises(DecodeError):
        sketch.decode_many(helpers, samples)
    with pytest.raises(DecodeError):
        sketch.decode_many(helpers, samples, errors="raise")
    results = sketch.decode_many(helpers, samples, errors="return")
    assert len(results) == 3 and isinstance(results[1], DecodeError)
    assert _same(results[0], sketch.check_secret(secret)) and _same(results[2], sketch.check_secret(secret))


@pytest.mark.parametrize("name", FAMILIES)
def test_decode_many_refuses_a_bad_policy_or_unequal_lengths(name: str) -> None:
    sketch, secret, genuine = _example(name)
    helper = sketch.encode(secret)
    with pytest.raises(ParameterError, match="errors must be"):
        sketch.decode_many([helper], [genuine], errors="ignore")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="1 helpers but 2 samples"):
        sketch.decode_many([helper], [genuine, genuine])
    with pytest.raises(ParameterError, match="decode\\(\\) takes one"):
        sketch.decode_many(helper, [genuine])
