"""``MixedSketch.from_params`` as the public configuration of a mixing structure (docs/mixing.md).

A JSON description ``{"structure", "components", "mixes"}`` is parsed strictly into the library's
structures: each named structure comes back as its own class, the description round-trips
through JSON and ``params()``, a helper made by one object decodes with the object rebuilt from
the description, and every malformed description is a ``ParameterError`` saying what to change.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sketchauth.errors import ParameterError
from sketchauth.mixing import Cascade, Chaining, Concatenate, Fanning, Hybrid, MixedSketch

PIN = {"kind": "exact", "profile": "test", "min_entropy": 19.93}
FACE = {"kind": "fuzzy", "scheme": "pinsketch", "params": {"m": 16, "t": 4}, "importance": 3}
VOICE = {"kind": "fuzzy", "scheme": "interval", "params": {"n": 256, "v": 3, "features": 2}, "importance": 2}
IRIS = {"kind": "fuzzy", "scheme": "code-offset", "params": {"n": 15, "t": 3}, "importance": 1}

FACE_SET, FACE_NEAR = [3, 70, 1000, 2024], [3, 70, 1001, 2024]
VOICE_VEC, VOICE_NEAR = [100, 200], [101, 199]
IRIS_BYTES = bytes(range(15))

DESCRIPTIONS: dict[str, tuple[type[MixedSketch], dict[str, Any], list[Any], list[Any]]] = {
    "cascade": (
        Cascade,
        {"structure": "cascade", "components": [FACE, PIN], "mixes": [[1, 0]]},
        [FACE_SET, "2468"],
        [FACE_NEAR, "2468"],
    ),
    "fanning": (
        Fanning,
        {"structure": "fanning", "components": [PIN, FACE, VOICE], "mixes": [[0, 2], [0, 1]]},
        ["2468", FACE_SET, VOICE_VEC],
        ["2468", FACE_NEAR, VOICE_NEAR],
    ),
    "chaining": (
        Chaining,
        {"structure": "chaining", "components": [PIN, VOICE, FACE], "mixes": [[0, 1], [1, 2]]},
        ["2468", VOICE_VEC, FACE_SET],
        ["2468", VOICE_NEAR, FACE_NEAR],
    ),
    "hybrid": (
        Hybrid,
        {"structure": "hybrid", "components": [FACE, VOICE, PIN, IRIS], "mixes": [[2, 1], [1, 0]]},
        [FACE_SET, VOICE_VEC, "2468", IRIS_BYTES],
        [FACE_NEAR, VOICE_NEAR, "2468", IRIS_BYTES],
    ),
    "concatenate": (
        Concatenate,
        {"structure": "concatenate", "components": [FACE, VOICE], "mixes": []},
        [FACE_SET, VOICE_VEC],
        [FACE_NEAR, VOICE_NEAR],
    ),
}


@pytest.mark.parametrize("name", sorted(DESCRIPTIONS))
def test_a_description_builds_its_structure_and_round_trips(name: str) -> None:
    cls, description, secrets, samples = DESCRIPTIONS[name]
    built = MixedSketch.from_params(json.loads(json.dumps(description)))
    assert type(built) is cls and built.structure == name
    assert sorted(built.mixes) == sorted(tuple(m) for m in description["mixes"])
    again = MixedSketch.from_params(json.loads(json.dumps(built.params())))
    assert type(again) is cls and again.params() == built.params()
    helper = built.encode(secrets)
    recovered = again.decode(helper, samples)
    assert again.secret_bytes(recovered) == built.secret_bytes(secrets)


def test_the_service_order_is_warning_free() -> None:
    """PIN → second → first with declared importances: the guidelines have nothing to say."""
    chaining = MixedSketch.from_params(DESCRIPTIONS["chaining"][1])
    assert chaining.guideline_violations() == []
    # The reverse order diverts the loss onto the more important secret: a guideline says so.
    reverse = {"structure": "chaining", "components": [PIN, FACE, VOICE], "mixes": [[0, 1], [1, 2]]}
    assert any("more important" in v for v in MixedSketch.from_params(reverse).guideline_violations())


@pytest.mark.parametrize(
    ("description", "message"),
    [
        ({"structure": "cascade", "components": [FACE, PIN]}, "needs parameter 'mixes'"),
        ({"structure": "cascade", "components": [FACE, PIN], "mixes": [[1, 0]], "name": "x"}, "unknown mixed"),
        ({"structure": "spiral", "components": [FACE], "mixes": []}, "unknown mixing 'structure'"),
        ({"structure": "cascade", "components": [FACE, PIN], "mixes": [[0, 1]]}, "exact key: it has no sketch"),
        ({"structure": "hybrid", "components": [FACE, VOICE, PIN], "mixes": [[1, 0]]}, "exact key 2 mixes nothing"),
        ({"structure": "cascade", "components": [FACE, VOICE, PIN], "mixes": [[2, 0]]}, "a cascade is two secrets"),
        ({"structure": "fanning", "components": [PIN, FACE, VOICE], "mixes": [[0, 1]]}, "fanning:"),
        ({"structure": "fanning", "components": [FACE, VOICE, IRIS], "mixes": [[0, 1]]}, "fanning:"),
        ({"structure": "chaining", "components": [PIN, VOICE, FACE], "mixes": [[0, 1], [0, 2]]}, "chaining:"),
        ({"structure": "hybrid", "components": [FACE, VOICE], "mixes": [[0, 1], [1, 0]]}, "cycle"),
        ({"structure": "hybrid", "components": [FACE, VOICE, IRIS], "mixes": [[1, 0], [2, 0]]}, "at most one key"),
        ({"structure": "hybrid", "components": [FACE, VOICE], "mixes": [[True, 0]]}, "pairs of ints"),
        ({"structure": "hybrid", "components": [FACE, VOICE], "mixes": [[1, 0, 2]]}, "[key, sketch] pairs"),
        ({"structure": "hybrid", "components": [FACE, VOICE], "mixes": [[5, 0]]}, "does not exist"),
        ({"structure": "hybrid", "components": [FACE, {**VOICE, "scheme": "nope"}], "mixes": []}, "unknown scheme"),
        ({"structure": "hybrid", "components": [{**FACE, "colour": 1}], "mixes": []}, "parameter 'colour'"),
        ({"structure": "hybrid", "components": [{**FACE, "kind": "smart"}], "mixes": []}, "unknown component 'kind'"),
        ({"structure": "hybrid", "components": [{**PIN, "profile": "fast"}, FACE], "mixes": [[0, 1]]}, "profile"),
        ({"structure": "hybrid", "components": [{**FACE, "scheme": "mixed"}], "mixes": []}, "cannot be a component"),
        ({"structure": "hybrid", "components": [FACE] * 65, "mixes": []}, "at most 64 components"),
        ({"structure": "hybrid", "components": {"0": FACE}, "mixes": []}, "components must be a list"),
    ],
)
def test_a_malformed_description_says_what_to_change(description: dict[str, Any], message: str) -> None:
    with pytest.raises(ParameterError, match=message.replace("[", r"\[").replace("]", r"\]")):
        MixedSketch.from_params(description)
