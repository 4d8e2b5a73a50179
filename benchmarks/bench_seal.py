"""The record seal: ChaCha20-Poly1305 (pyca/cryptography) against the hand-made seal it replaced, same run.

Run::

    python benchmarks/bench_seal.py [--baseline REV] [--out benchmarks/results/seal-<date>.json]

The earlier seal (a SHAKE-256 keystream XORed in, then a keyed BLAKE2b-128 tag over
``nonce ‖ body``) is not in the tree any more: it is loaded, for this comparison only, from the
git revision ``--baseline`` names (default: the last commit whose ``sketchauth/pepper.py`` still
defines its keystream helper ``_xor_stream``), into a module of its own. Without git, the
baseline columns are left out.

What is measured, per size (64 B, 1 KiB, 4 KiB, 64 KiB, 16 MiB): seal (``wrap``)
and open (``unwrap``), median wall time of many runs (:func:`timing.median_ms`), old and new in the
same run;
then the service's whole-record codec (``RecordCodec.columns`` / ``.open``: canonical JSON,
associated data, AEAD) on an interval enrolment; the cost of testing one candidate pepper against
the pepper id and against a sealed record, now (argon2id, :data:`sketchauth.pepper.PEPPER_KDF`,
then HKDF) and under the legacy derivation (HKDF only), same run; and, where SoftHSM2 and
python-pkcs11 are installed, the record seal and open through a PKCS#11 token key
(:mod:`sketchauth_service.keyring`, AES-GCM in the token) next to the in-process seal,
interleaved in the same run (``token``: records per second each way and their ratio).
"""

# The measuring lambdas close over loop variables on purpose: each is timed inside its own loop
# iteration, never later.
# ruff: noqa: B023

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import ROOT, median_ms, provenance, write_result

from sketchauth.pepper import Pepper, associated_data, new_nonce, unwrap, wrap

SIZES = (64, 1024, 4096, 65536, 16 << 20)
SECRET = bytes(range(32))


def _baseline_revision() -> str | None:
    """The newest commit whose sketchauth/pepper.py still has the hand-made seal."""
    try:
        log = subprocess.run(
            ["git", "log", "--format=%H", "-S", "_xor_stream", "--", "sketchauth/pepper.py"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return None
    return f"{log[0]}^" if log else None


def _load_baseline(revision: str) -> Any:
    """The old ``sketchauth/pepper.py`` of ``revision`` as a module named ``old_pepper``."""
    source = subprocess.run(
        ["git", "show", f"{revision}:sketchauth/pepper.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_pepper.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("old_pepper", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_pepper"] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


def _us(fn: Any, size: int) -> float:
    budget = 0.5 if size <= 65536 else 3.0
    return 1000.0 * median_ms(fn, budget_seconds=budget, min_repeats=5, max_repeats=20000 if size <= 65536 else 12)


def _sizes(old: Any) -> list[dict[str, Any]]:
    new_pepper = Pepper(SECRET)
    old_pepper = old.Pepper(SECRET) if old is not None else None
    rows = []
    ad = associated_data(b"sketchauth/record", b"\x02", b"default", b"user-0001", bytes(8), new_pepper.id.encode())
    for size in SIZES:
        data = bytes(size)
        nonce = new_nonce()
        sealed = wrap(data, new_pepper, nonce, ad)
        row: dict[str, Any] = {
            "bytes": size,
            "chacha20poly1305_seal_us": _us(lambda: wrap(data, new_pepper, nonce, ad), size),
            "chacha20poly1305_open_us": _us(lambda: unwrap(sealed, new_pepper, nonce, ad), size),
        }
        if old is not None:
            old_nonce = bytes(16)
            old_sealed = old.wrap(data, old_pepper, old_nonce)
            row["old_seal_us"] = _us(lambda: old.wrap(data, old_pepper, old_nonce), size)
            row["old_open_us"] = _us(lambda: old.unwrap(old_sealed, old_pepper, old_nonce), size)
            row["speedup_seal"] = row["old_seal_us"] / row["chacha20poly1305_seal_us"]
            row["speedup_open"] = row["old_open_us"] / row["chacha20poly1305_open_us"]
        rows.append(row)
        print({k: round(v, 2) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    return rows


def _record() -> Any:
    """An interval enrolment as the service stores it (what a verification opens)."""
    from sketchauth_service.store.base import NewEnrolment

    from sketchauth.enrolment import enrol, hasher
    from sketchauth.sketches.interval import IntervalSketch

    sketch = IntervalSketch(n=1 << 20, v=50, features=4)
    enrolment = enrol(sketch, [987_651, 876_541, 765_431, 654_321], password_hasher=hasher("owasp"))
    return NewEnrolment(
        "user-0001",
        "interval",
        sketch.params(),
        enrolment.helper,
        enrolment.secret_hash,
        enrolment.report.to_dict(),
        False,
        key_params=enrolment.key_params,
    )


def _codec() -> dict[str, Any]:
    """The service's whole-record seal on an interval enrolment (what a verification opens)."""
    from sketchauth_service.store.records import Content, RecordCodec

    record = _record()
    codec = RecordCodec(Pepper(SECRET))
    clear = RecordCodec()
    columns = codec.columns("user-0001", Content.of(record), 3)
    row = columns.row("user-0001")
    plain = clear.columns("user-0001", Content.of(record), 3)
    clear_row = plain.row("user-0001")
    return {
        "sealed_record_bytes": len(columns.helper),
        "codec_seal_us": _us(lambda: codec.columns("user-0001", Content.of(record), 3), 64),
        "codec_open_us": _us(lambda: codec.open(row), 64),
        "codec_open_clear_us": _us(lambda: clear.open(clear_row), 64),
    }


def _pepper_tests(record_bytes: int) -> dict[str, Any]:
    """One candidate pepper tested the attacker's cheapest way: against the id, and against a sealed record.

    Only what each test needs. Now: one argon2id (``PEPPER_KDF``) then one HKDF (the id) or one
    HKDF and one AEAD (a record of ``record_bytes``, the smallest the service seals). Legacy (the
    derivation before the memory-hard step): one HKDF and one AEAD over the id's 1 KiB block.
    """
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305

    from sketchauth.pepper import PEPPER_KDF, kdf

    real = Pepper(SECRET)
    nonce, ad = new_nonce(), associated_data(b"record")
    sealed = wrap(bytes(record_bytes - 16), real, nonce, ad)
    candidate = bytes(range(1, 33))
    block = bytes(1024)
    legacy_salt = b"sketchauth/pepper/v2"

    def against_id() -> bool:
        master = PEPPER_KDF.stretch(candidate)  # no cache: each candidate is new
        return kdf(master, info=b"pepper id", length=8).hex() == real.id

    def against_seal() -> bool:
        try:
            key = kdf(PEPPER_KDF.stretch(candidate), info=b"record seal key")
            ChaCha20Poly1305(key).decrypt(nonce, sealed, ad)
        except InvalidTag:
            return False
        return True

    def against_legacy_id() -> bool:
        key = kdf(candidate, info=b"pepper id key", salt=legacy_salt)
        tag = ChaCha20Poly1305(key).encrypt(bytes(12), block, b"sketchauth/pepper-id/v2")[-16:]
        return tag[:8].hex() == real.legacy_id

    def slow(fn: Any) -> float:
        return 1000.0 * median_ms(fn, budget_seconds=0.0, min_repeats=5, max_repeats=5)

    by_id = slow(against_id)
    return {
        "record_bytes": record_bytes,
        "kdf": {
            "algorithm": "argon2id",
            "time_cost": PEPPER_KDF.time_cost,
            "memory_kib": PEPPER_KDF.memory_kib,
            "parallelism": PEPPER_KDF.parallelism,
        },
        "test_pepper_by_id_us": by_id,
        "test_pepper_by_seal_us": slow(against_seal),
        "test_pepper_by_legacy_id_us": _us(against_legacy_id, 64),
        "guess_seconds": by_id / 1e6,
    }


def _token_rows(record: Any) -> dict[str, Any] | None:
    """Seal and open of the service's record through a SoftHSM2 token key next to the in-process pepper, interleaved."""
    import os
    import shutil

    module = next((m for m in _SOFTHSM if Path(m).is_file()), None)
    if module is None or shutil.which("softhsm2-util") is None or importlib.util.find_spec("pkcs11") is None:
        print("token: SoftHSM2 or python-pkcs11 not installed; left out", flush=True)
        return None
    from sketchauth_service.keyring import TokenSettings, generate_token_key, open_token_key
    from sketchauth_service.store.records import Content, RecordCodec

    home = Path(tempfile.mkdtemp())
    (home / "tokens").mkdir()
    (home / "softhsm2.conf").write_text(f"directories.tokendir = {home / 'tokens'}\nobjectstore.backend = file\n")
    os.environ["SOFTHSM2_CONF"] = str(home / "softhsm2.conf")
    init = ["softhsm2-util", "--init-token", "--free", "--label", "bench", "--pin", "1234", "--so-pin", "5678"]
    subprocess.run(init, check=True, capture_output=True)
    settings = TokenSettings(module, "bench", "1234", "records")
    generate_token_key(settings)
    codecs = {"pepper": RecordCodec(Pepper(SECRET)), "token": RecordCodec(open_token_key(settings))}
    content = Content.of(record)
    rows = {name: c.columns("user-0001", content, 3).row("user-0001") for name, c in codecs.items()}
    times: dict[str, list[float]] = {f"{n}_{op}": [] for n in codecs for op in ("seal", "open")}
    for _ in range(7):  # interleaved rounds: both sides see the same load
        for name, codec in codecs.items():
            times[f"{name}_seal"].append(_us(lambda: codec.columns("user-0001", content, 3), 64))
            times[f"{name}_open"].append(_us(lambda: codec.open(rows[name]), 64))
    median = {k: sorted(v)[len(v) // 2] for k, v in times.items()}
    result: dict[str, Any] = {
        "module": module,
        "record_bytes": len(rows["token"][3]),
        **{f"{k}_us": v for k, v in median.items()},
    }
    for op in ("seal", "open"):
        result[f"token_over_pepper_{op}"] = median[f"token_{op}"] / median[f"pepper_{op}"]
        result[f"token_{op}_per_second"] = 1e6 / median[f"token_{op}"]
        result[f"pepper_{op}_per_second"] = 1e6 / median[f"pepper_{op}"]
    print({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}, flush=True)
    return result


_SOFTHSM = ("/usr/lib/softhsm/libsofthsm2.so", "/usr/lib/x86_64-linux-gnu/softhsm/libsofthsm2.so")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", help="git revision holding the old seal (default: found by git log -S)")
    parser.add_argument("--out", default=None, help="result JSON (default benchmarks/results/seal-<date>.json)")
    args = parser.parse_args(argv)
    revision = args.baseline or _baseline_revision()
    old = _load_baseline(revision) if revision else None
    result = provenance("bench_seal")
    result["baseline_revision"] = revision
    result["sizes"] = _sizes(old)
    result["record_codec"] = _codec()
    result["pepper_guess"] = _pepper_tests(result["record_codec"]["sealed_record_bytes"])
    print({"pepper_guess": result["pepper_guess"]}, flush=True)
    result["token"] = _token_rows(_record())
    out = args.out or ROOT / "benchmarks" / "results" / f"seal-{datetime.now(UTC):%Y%m%d}.json"
    write_result(out, result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
