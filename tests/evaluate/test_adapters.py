"""The evaluation's per-scheme tables derive from the scheme descriptors.

A family registered at test time (a toy byte-string scheme, monkeypatched into the registry) is
evaluated without any entry in ``sketchauth.evaluate``: its adapter, default sweep and error rates
come from its descriptor alone.
"""

from __future__ import annotations

from collections.abc import Iterator

import _toy_scheme
import numpy as np
import pytest
from _toy_scheme import TOY, ToyClearSketch

from sketchauth.errors import ParameterError
from sketchauth.evaluate import adapters
from sketchauth.evaluate.adapters import ADAPTERS, SchemeAdapter, adapter, quantised_schemes
from sketchauth.evaluate.data import synthetic_strings
from sketchauth.evaluate.deciders import decide_batch
from sketchauth.evaluate.error_rates import evaluate_adapter
from sketchauth.evaluate.leakage import SMALL_INSTANCES, small_instance
from sketchauth.evaluate.report import default_sweep
from sketchauth.sketches import registry
from sketchauth.templates import enrol_byte_mode


@pytest.fixture
def toy_registered() -> Iterator[None]:
    """The toy family as a registry line (id 99), for this test only."""
    with _toy_scheme.toy_registered():
        yield


def test_a_family_registered_later_gets_an_adapter_and_a_default_sweep(toy_registered: None) -> None:
    assert TOY in ADAPTERS and TOY in list(ADAPTERS)
    ad = adapter(TOY)
    assert isinstance(ad, SchemeAdapter)
    assert (ad.scheme, ad.data_kind, ad.sweep, ad.baseline_metrics) == (TOY, "strings", "t", ("hamming",))
    assert ad.enrol is enrol_byte_mode and ad.decide is decide_batch
    assert (ad.min_enrol_samples, ad.sweep_at_enrolment) == (1, False)
    probe = ad.probe_for({"n": 3})
    assert probe is not None and probe(np.array([1, 2, 3])) == b"\x01\x02\x03"
    assert ad.make_sketch({"n": 8}, 2) == ToyClearSketch(8, 2)
    assert default_sweep(TOY, {"n": 9}) == [1, 2, 3, 4]
    # No small instance on the descriptor: no exact leakage.
    assert small_instance(TOY) is None


def test_a_family_registered_later_is_evaluated_by_its_own_decoder(toy_registered: None) -> None:
    """Same data, same acceptance rule: the toy's counts are code-offset's exact counts."""
    strings = synthetic_strings(10, 3, 8, error_rate=0.1, seed=4)
    toy = evaluate_adapter(TOY, {"n": 8}, strings, [1, 2, 3], seed=0)
    code_offset = evaluate_adapter("code-offset", {"n": 8}, strings, [1, 2, 3], seed=0)
    counts = [(p.setting, p.false_non_matches, p.false_matches) for p in toy.points]
    assert counts == [(1, 9, 0), (2, 2, 0), (3, 0, 0)]
    assert counts == [(p.setting, p.false_non_matches, p.false_matches) for p in code_offset.points]


def test_without_the_registry_line_there_is_no_adapter() -> None:
    assert TOY not in ADAPTERS
    with pytest.raises(ParameterError, match="no evaluation adapter for scheme 'toy-clear'"):
        adapter(TOY)
    with pytest.raises(ParameterError, match="unknown scheme 'toy-clear'"):
        default_sweep(TOY, {})


def test_the_tables_cover_every_registered_family_as_its_descriptor_says() -> None:
    found = registry.descriptors()
    assert list(ADAPTERS) == [name for name, d in found.items() if d.sweep is not None]
    assert "chaff-point" not in ADAPTERS and "mixed" not in ADAPTERS
    for name, ad in ADAPTERS.items():
        d = found[name]
        assert (ad.sweep, ad.sweep_at_enrolment) == (d.sweep, d.sweep_at_enrolment)
        assert ad.min_enrol_samples == d.min_captures
        assert ad.data_kind == adapters.DATA_KINDS[d.sample_kind]
        assert d.default_sweep is not None
        assert default_sweep(name, dict(d.example[0])) == d.default_sweep(d.example[0])
    with pytest.raises(ParameterError, match="no default sweep for 'chaff-point'"):
        default_sweep("chaff-point", {})
    assert set(SMALL_INSTANCES) == {name for name, d in found.items() if d.small_instance is not None}
    assert quantised_schemes() == ("interval", "asymmetric-interval")


def test_template_families_enrol_through_their_hook() -> None:
    """The weighted vault and the asymmetric sketch enrol through their descriptor's template
    hook; the asymmetric sweep's setting is the hook's ``margin``."""
    captures = [[10, 20, 30], [12, 20, 31], [11, 21, 30]]
    asym = adapter("asymmetric-interval")
    sketch = asym.make_sketch({"n": 64, "q": 8, "scheme": "s2", "features": 3}, 2)
    b, v = asym.enrol(sketch, np.array(captures), 2)
    want_b, want_v = sketch.descriptor.secret_from_captures(sketch, captures, {"margin": 2})
    assert b.tolist() == want_b.tolist() == [11, 20, 30] and v.tolist() == want_v.tolist() == [4, 3, 3]
    vault = adapter("weighted-vault")
    wv = vault.make_sketch({"p": 50, "q": 4, "g": 9}, 3)
    sets = [[3, 17, 40], [3, 17, 40], [3, 17, 40, 5]]
    elements, weights = vault.enrol(wv, sets, 3)
    assert elements.tolist() == [3, 17, 40] and int(weights.sum()) == 9
