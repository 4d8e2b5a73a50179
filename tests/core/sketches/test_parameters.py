"""``from_params`` of every registered scheme raises ``ParameterError`` naming the parameter.

``IntervalSketch.from_params({"v": 3})`` used to raise a bare ``KeyError`` (and ``sketchauth
evaluate report --scheme fuzzy-vault`` without ``--params`` crashed with ``KeyError: 'm'``), although
the base contract promises ``ParameterError``. The class is closed here for every entry of
the registry: a missing, unknown or wrongly typed parameter, and arbitrary JSON values.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from _helpers import JSON_VALUES
from hypothesis import given, settings
from hypothesis import strategies as st

from sketchauth.cli import main
from sketchauth.errors import ParameterError
from sketchauth.evaluate.error_rates import evaluate_adapter
from sketchauth.evaluate.report import EvaluationTarget
from sketchauth.mixing import Cascade, ExactKey
from sketchauth.sketches.angular import AngularSketch
from sketchauth.sketches.angular_polar import PolarAngularSketch
from sketchauth.sketches.asymmetric import AsymmetricIntervalSketch
from sketchauth.sketches.base import SecureSketch, scheme_class
from sketchauth.sketches.chaff import ChaffPointSketch
from sketchauth.sketches.code_offset import CodeOffsetSketch
from sketchauth.sketches.interval import IntervalSketch
from sketchauth.sketches.pinsketch import PinSketch
from sketchauth.sketches.registry import registrations
from sketchauth.sketches.vault import FuzzyVault, WeightedFuzzyVault


def _cascade() -> SecureSketch:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Cascade(PinSketch(16, 4), pin=ExactKey("test"))


#: One working instance per registered scheme. A scheme added to the registry without an entry here
#: fails test_every_registered_scheme_is_covered, so the class stays closed.
INSTANCES: dict[str, SecureSketch] = {
    "interval": IntervalSketch(n=256, v=8, features=4, step=0.5),
    "code-offset": CodeOffsetSketch(n=16, t=2),
    "pinsketch": PinSketch(16, 8),
    "fuzzy-vault": FuzzyVault(p=13, m=5, t=1),
    "asymmetric-interval": AsymmetricIntervalSketch(n=64, q=4, scheme="s2", features=3),
    "weighted-vault": WeightedFuzzyVault(p=50, q=4, g=9, t=3),
    "chaff-point": ChaffPointSketch(universe=30, min_distance=3, points=2),
    "angular": AngularSketch(dimension=32, alpha=4, min_cos=0.25),
    "angular-polar": PolarAngularSketch(dimension=32, bits=8, list_size=4, min_cos=0.25),
    "mixed": _cascade(),
}
NAMES = sorted(r.name for r in registrations())


def test_every_registered_scheme_is_covered() -> None:
    assert sorted(INSTANCES) == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_parameter_spec_matches_what_params_writes(name: str) -> None:
    cls, params = scheme_class(name), INSTANCES[name].params()
    assert set(cls.parameters.required) <= set(params) <= set(cls.parameters.names)
    assert cls.from_params(params) == INSTANCES[name]


@pytest.mark.parametrize("name", NAMES)
def test_missing_parameter_is_named(name: str) -> None:
    cls, params = scheme_class(name), INSTANCES[name].params()
    for key in cls.parameters.required:
        partial = {k: v for k, v in params.items() if k != key}
        with pytest.raises(ParameterError) as info:
            cls.from_params(partial)
        message = str(info.value)
        assert f"needs parameter {key!r}" in message, message
        assert "required: " + ", ".join(cls.parameters.required) in message, message
    with pytest.raises(ParameterError, match="required: "):
        cls.from_params({})


@pytest.mark.parametrize("name", NAMES)
def test_unknown_parameter_is_named(name: str) -> None:
    cls, params = scheme_class(name), INSTANCES[name].params()
    with pytest.raises(ParameterError, match=f"unknown {name} parameter 'bogus' \\(required: "):
        cls.from_params({**params, "bogus": 1})
    with pytest.raises(ParameterError, match="'7'"):
        cls.from_params({**params, 7: 1})


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", ["x", {"x": 1}, [["x"]], True], ids=["str", "dict", "nested list", "bool"])
def test_wrongly_typed_parameter_is_named(name: str, bad: Any) -> None:
    cls, params = scheme_class(name), INSTANCES[name].params()
    for key in params:
        with pytest.raises(ParameterError) as info:
            cls.from_params({**params, key: bad})
        assert key in str(info.value), (key, str(info.value))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("params", [None, [], "m=16", 3])
def test_parameters_that_are_not_a_mapping(name: str, params: Any) -> None:
    with pytest.raises(ParameterError, match="must be a mapping \\(required: "):
        scheme_class(name).from_params(params)


def test_nested_component_parameters_are_named() -> None:
    params = INSTANCES["mixed"].params()
    exact = params["components"][1]
    for key, needle in (("profile", "needs parameter 'profile'"), ("kind", "unknown component 'kind'")):
        broken = {**params, "components": [params["components"][0], {k: v for k, v in exact.items() if k != key}]}
        with pytest.raises(ParameterError, match=f"components\\[1\\].*{needle}"):
            scheme_class("mixed").from_params(broken)
    with pytest.raises(ParameterError, match="'profile' must be the name of an argon2 profile"):
        scheme_class("mixed").from_params(
            {**params, "components": [params["components"][0], {**exact, "profile": ["x"]}]}
        )
    with pytest.raises(ParameterError, match="unknown mixing 'structure'"):
        scheme_class("mixed").from_params({**params, "structure": ["cascade"]})
    with pytest.raises(ParameterError, match="components\\[0\\] must be an object"):
        scheme_class("mixed").from_params({**params, "components": [[], exact]})


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_arbitrary_parameter_values_give_a_sketch_or_a_parameter_error(name: str, data: st.DataObject) -> None:
    cls, params = scheme_class(name), dict(INSTANCES[name].params())
    for key in data.draw(st.lists(st.sampled_from(sorted(params)), unique=True, min_size=1)):
        if data.draw(st.booleans(), label=f"drop {key}"):
            del params[key]
        else:
            params[key] = data.draw(JSON_VALUES | st.integers(-1, 2**22), label=key)
    try:
        sketch = cls.from_params(params)
    except ParameterError:
        return
    assert isinstance(sketch, cls)


# -- the evaluation door: sketchauth evaluate report / evaluate_adapter -----------------------------------


@pytest.mark.parametrize(
    ("scheme", "needle"),
    [
        ("fuzzy-vault", "fuzzy-vault needs parameters 'p', 'm' in --params (required: p, m; 't' comes from the sweep)"),
        (
            "weighted-vault",
            "weighted-vault needs parameters 'p', 'q', 'g' in --params (required: p, q, g; 't' comes from the sweep)",
        ),
        ("pinsketch", "pinsketch needs parameter 'm' in --params (required: m; 't' comes from the sweep)"),
        ("code-offset", "code-offset needs parameter 'n' in --params"),
        (
            "interval",
            "interval needs parameter 'n' in --params "
            "(required: n; optional: features, step, offset; 'v' comes from the sweep)",
        ),
    ],
)
def test_evaluate_report_without_params_lists_the_required_ones(
    scheme: str, needle: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["evaluate", "report", "--scheme", scheme, "--synthetic", "identities=4", "--out", str(tmp_path), "--quiet"]
    )
    err = capsys.readouterr().err
    assert code == 2 and needle in err, err
    assert "Traceback" not in err and "KeyError" not in err


def test_evaluate_report_refuses_the_swept_parameter_and_unknown_ones(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    base = [
        "evaluate",
        "report",
        "--scheme",
        "fuzzy-vault",
        "--synthetic",
        "identities=4",
        "--out",
        str(tmp_path),
        "--quiet",
    ]
    assert main([*base, "--params", '{"p": 97, "m": 10, "t": 2}']) == 2
    assert "--params sets 't', the fuzzy-vault parameter the sweep varies: remove it" in capsys.readouterr().err
    assert main([*base, "--params", '{"p": 97, "m": 10, "x": 2}']) == 2
    assert "unknown fuzzy-vault parameter 'x' in --params" in capsys.readouterr().err


def test_evaluate_report_names_a_wrongly_typed_parameter_before_making_data(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [
        "evaluate",
        "report",
        "--scheme",
        "interval",
        "--params",
        '{"n": "x", "features": 4}',
        "--synthetic",
        "identities=4",
        "--out",
        str(tmp_path),
        "--quiet",
    ]
    assert main(args) == 2
    assert "n must be an integer, got str" in capsys.readouterr().err


def test_evaluation_library_entry_points_raise_parameter_error() -> None:
    with pytest.raises(ParameterError, match="weighted-vault needs parameters 'q', 'g' in params"):
        EvaluationTarget.from_scheme("weighted-vault", {"p": 50})
    from sketchauth.evaluate.data import synthetic_sets

    data = synthetic_sets(4, 3, low=0, high=97, set_size=10, seed=0)
    with pytest.raises(ParameterError, match="fuzzy-vault needs parameter 'm' in params"):
        evaluate_adapter("fuzzy-vault", {"p": 97}, data, [1])
