"""Unlinkability across two real deployments with different peppers, measured on their databases.

Two ``sketchauth serve`` processes, each with its own SQLite database and its own pepper, enrol the
same people with the same captures (identical re-enrolment: the linkage attacker's best case).
Each deployment seals every helper record as a whole (:mod:`sketchauth.pepper`). The test then
reads both databases, as a thief of both would, and checks per scheme:

* no record is stored identically in both, and no two people's records share a difference (the
  per-enrolment nonce: a keystream from the pepper alone would give everyone the same difference);
* ``D↔sys`` (Gomez-Barrero et al. 2018) of the best attack that can be stated on sealed records:
  the project's own linkage attack (:data:`sketchauth.evaluate.unlinkability.LINKAGE_ATTACKS`:
  residue distance, difference decoding, vault differential cross-matching, the s1/s2/s3
  adversaries) where both records parse as helpers, else byte agreement (equal bytes at equal
  positions), over mated pairs (one person in both databases) and non-mated pairs: at most 0.05
  for **every** scheme, the asymmetric ones included;
* the control: the same records unsealed with both peppers (a thief holding the databases *and*
  the peppers) link as without a pepper.

``D↔sys`` is estimated on 10 equal-width bins: with 400 mated scores the estimator's own floor
(two samples of one distribution) is about 0.01–0.03 there; on one bin per integer it is several
times higher (0.1 for the interval residue distance at 200 pairs), and at 200 pairs the vaults'
discrete agreement counts alone reached 0.054 with and without a pepper.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from service_testing import ADMIN_KEY, API_KEY, ServerProcess
from sketchauth_service.store.records import RecordCodec
from sketchauth_service.store.sql import _USER_COLUMNS

from sketchauth.errors import SketchAuthError
from sketchauth.evaluate.unlinkability import attack_for_key, linkability
from sketchauth.pepper import SEAL_TAG_BYTES, Pepper
from sketchauth.sketches.base import SecureSketch, load_sketch

pytestmark = pytest.mark.slow

#: Made by `sketchauth pepper new` (new_pepper_text), as a pepper must be.
PEPPERS = {
    "a": "skp1_VTWlryKi6NoHkmrQlbPaZNlogoNlM3YGGRD8psdWX9XmOnM_",
    "b": "skp1_9y0sC5CZW81QvHoYQ5ZY7jDgCgVy8Rw5Yr4HdAGhIGSk8ORy",
}
PEOPLE = 400
#: Randomised schemes whose attack is costly (~64 interpolations per pair): no unwrapped control
#: (without a pepper they do not link either: 0.02-0.05 measured, the estimator's floor).
NO_CONTROL = ("fuzzy-vault", "weighted-vault")
NONMATED_PER_PERSON = 10
BINS = 10
#: Deterministic schemes: without a pepper two databases store identical helpers.
DETERMINISTIC = ("interval", "pinsketch", "asymmetric-s1")


def _people(rng: np.random.Generator) -> dict[str, list[dict[str, Any]]]:
    """Per scheme, one enrolment body per person (the same body goes to both deployments)."""

    def captures(template: np.ndarray, n: int, count: int = 3) -> list[list[int]]:
        return [np.clip(template + rng.integers(-2, 3, template.size), 0, n - 1).tolist() for _ in range(count)]

    bodies: dict[str, list[dict[str, Any]]] = {}
    for _ in range(PEOPLE):
        weighted = sorted(rng.choice(50, 4, replace=False).tolist())
        entries = {
            "interval": ({"n": 4096, "v": 8, "features": 8}, [rng.integers(0, 4096, 8).tolist()]),
            "pinsketch": ({"m": 16, "t": 4}, [sorted(rng.choice(np.arange(1, 65536), 12, replace=False).tolist())]),
            "code-offset": ({"n": 16, "t": 2}, [rng.integers(0, 256, 16).tolist()]),
            "fuzzy-vault": ({"p": 257, "m": 8, "t": 2}, [sorted(rng.choice(257, 8, replace=False).tolist())]),
            "weighted-vault": ({"p": 50, "q": 4, "g": 9, "t": 3}, [weighted[:3], weighted[:3], weighted]),
        }
        for variant in ("s1", "s2", "s3"):
            template = rng.integers(20, 236, 4)
            params = {"n": 256, "q": 16, "scheme": variant, "features": 4}
            entries[f"asymmetric-{variant}"] = (params, captures(template, 256))
        for name, (params, samples) in entries.items():
            scheme = "asymmetric-interval" if name.startswith("asymmetric") else name
            bodies.setdefault(name, []).append({"scheme": scheme, "params": params, "samples": samples})
    return bodies


def _read(db: Path, pepper: Pepper) -> dict[str, tuple[bytes, str, bytes]]:
    """Per user: the stored (sealed) record, its pepper id, and the helper the pepper opens from it (the control)."""
    codec = RecordCodec(pepper)
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = conn.execute(f"SELECT {_USER_COLUMNS} FROM users").fetchall()
    return {row[0]: (bytes(row[3]), row[14], codec.open(row).helper) for row in rows}


def _attack_key(sketch: SecureSketch) -> str:
    if sketch.scheme_name == "asymmetric-interval":
        return f"asymmetric-interval/{sketch.scheme}"  # type: ignore[attr-defined]
    return sketch.scheme_name


def _parses(sketch: SecureSketch, record: bytes) -> bool:
    try:
        return load_sketch(record) == sketch
    except (SketchAuthError, ValueError):
        return False


def _byte_agreement(a: bytes, b: bytes) -> float:
    """Equal bytes at equal positions (``-1`` for different lengths): the generic score of sealed records."""
    if len(a) != len(b):
        return -1.0
    return float(np.count_nonzero(np.frombuffer(a, np.uint8) == np.frombuffer(b, np.uint8)))


def _score(sketch: SecureSketch, a: bytes, b: bytes) -> float:
    """The scheme's own attack where both records parse as its helpers, else byte agreement."""
    if _parses(sketch, a) and _parses(sketch, b):
        return float(attack_for_key(_attack_key(sketch)).score(sketch, a, b))
    return _byte_agreement(a, b)


def _d_sys(sketch: SecureSketch, first: list[bytes], second: list[bytes], rng: np.random.Generator) -> float:
    mated = [_score(sketch, a, b) for a, b in zip(first, second, strict=True)]
    nonmated = []
    for i in range(len(first)):
        others = rng.choice(np.delete(np.arange(len(first)), i), NONMATED_PER_PERSON, replace=False)
        nonmated += [_score(sketch, first[i], second[int(j)]) for j in others]
    return linkability(mated, nonmated, bins=BINS).d_sys


def _differences(first: list[bytes], second: list[bytes]) -> list[bytes]:
    """Byte-wise XOR of the sealed bodies of mated pairs of the same length."""
    return [
        bytes(x ^ y for x, y in zip(a[:-SEAL_TAG_BYTES], b[:-SEAL_TAG_BYTES], strict=True))
        for a, b in zip(first, second, strict=True)
        if len(a) == len(b)
    ]


@pytest.mark.statistical  # 400 people per scheme: D<->sys at the 0.05 threshold needs them
def test_two_peppered_deployments_cannot_be_linked(tmp_path: Path, servers: list[ServerProcess]) -> None:
    rng = np.random.default_rng(20261124)
    bodies = _people(rng)
    dbs = {}
    for name, pepper in PEPPERS.items():
        workdir = tmp_path / name
        workdir.mkdir()
        dbs[name] = workdir / "service.db"
        env = {
            "SKETCHAUTH_API_KEYS": API_KEY,
            "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
            "SKETCHAUTH_HASH_PROFILE": "test",
            "SKETCHAUTH_PEPPER": pepper,
            "SKETCHAUTH_REQUIRE_PEPPER": "1",
        }
        server = ServerProcess(workdir, env, db=f"sqlite:///{dbs[name]}")
        servers.append(server)
        server.wait_ready()
        with server.client() as c:
            for scheme, people in bodies.items():
                for i, body in enumerate(people):
                    response = c.post(f"/v1/users/{scheme}-{i}/enrolment", json=body)
                    assert response.status_code == 201, (scheme, response.text)
        assert all(p not in server.log() for p in PEPPERS.values())  # never logged
    peppers = {name: Pepper.from_text(text) for name, text in PEPPERS.items()}
    stored = {name: _read(db, peppers[name]) for name, db in dbs.items()}
    for name, db in dbs.items():
        assert PEPPERS[name].encode() not in db.read_bytes()

    measured: dict[str, dict[str, float]] = {}
    for scheme in bodies:
        users = [f"{scheme}-{i}" for i in range(PEOPLE)]
        first = [stored["a"][u][0] for u in users]
        second = [stored["b"][u][0] for u in users]
        clear_a = [stored["a"][u][2] for u in users]
        clear_b = [stored["b"][u][2] for u in users]
        sketch = load_sketch(clear_a[0])
        assert {stored["a"][u][1] for u in users} == {peppers["a"].id}
        assert all(len(s) > len(c) + SEAL_TAG_BYTES for s, c in zip(first, clear_a, strict=True)), scheme
        assert not any(_parses(sketch, r) for r in first + second), scheme  # sealed: no record parses
        # No identical records, no common difference (the control shows both would be there).
        assert not set(first) & set(second), scheme
        assert set(Counter(_differences(first, second)).values()) == {1}, scheme
        if scheme in DETERMINISTIC:
            assert clear_a == clear_b, scheme  # without a pepper: equal bytes in both databases
        measured[scheme] = {"pepper": _d_sys(sketch, first, second, rng)}
        if scheme not in NO_CONTROL:
            measured[scheme]["db_and_pepper"] = _d_sys(sketch, clear_a, clear_b, rng)
    print("\nD<->sys per scheme (bins=10):", json.dumps(measured, indent=1))
    for scheme, values in measured.items():  # every scheme, the asymmetric ones included
        assert values["pepper"] <= 0.05, (scheme, values)
    for scheme in ("interval", "pinsketch", "code-offset"):
        assert measured[scheme]["db_and_pepper"] >= 0.9, (scheme, measured[scheme])  # the control links
    for scheme in ("asymmetric-s1", "asymmetric-s2", "asymmetric-s3"):  # and so do the asymmetric sketches
        assert measured[scheme]["db_and_pepper"] > measured[scheme]["pepper"], (scheme, measured[scheme])


def test_timing_does_not_reveal_enrolment_with_a_pepper(
    request: pytest.FixtureRequest, servers: list[ServerProcess], tmp_path: Path
) -> None:
    """The oracle test's timing harness on a peppered deployment: unsealing a record takes a few
    microseconds, and an unknown id pays one too (the store opens its decoy, ``SqlStore.begin_attempt``)."""
    import random

    from test_service_oracle import MAX_AUC, _timing_round

    env = {
        "SKETCHAUTH_API_KEYS": API_KEY,
        "SKETCHAUTH_ADMIN_KEYS": ADMIN_KEY,
        "SKETCHAUTH_HASH_PROFILE": "test",
        "SKETCHAUTH_PEPPER": PEPPERS["a"],
    }
    server = ServerProcess(tmp_path, env, db="sqlite:///service.db")
    servers.append(server)
    server.wait_ready()
    rng = random.Random(20261124)
    for round_ in range(2):  # a run stalled by a busy shared core is repeated once, as in the oracle test
        measured, median = _timing_round(server, rng, round_)
        print(f"pepper: AUC {measured:.3f}, median enrolled - unknown {median:+.3f} ms")
        if abs(measured - 0.5) <= MAX_AUC - 0.5:
            break
    assert abs(measured - 0.5) <= MAX_AUC - 0.5, f"AUC {measured:.3f} (median difference {median:+.3f} ms)"
