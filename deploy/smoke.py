"""Smoke test of a built image, run by the image's own Python (``podman mount`` + ``chroot``, or
``podman run --entrypoint python3 IMAGE - < deploy/smoke.py`` where containers can run).

Checks, each failing loudly: the compiled backend is the default; a PinSketch enrolment through
the library verifies a close sample and refuses a far one; the service's ``db migrate``, and an
HTTP enrolment and verification through the real app on a fresh SQLite database (in-process
ASGI client: no socket needed). Prints one JSON line of what it saw.
"""

from __future__ import annotations

import json
import os
import secrets
import tempfile

from fastapi.testclient import TestClient
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings

import sketchauth
from sketchauth.cli import main as cli
from sketchauth.enrolment import enrol, hasher, verify
from sketchauth.sketches import PinSketch, backend

assert backend() == "native", f"the image runs the {backend()} backend, not the compiled one"

sketch = PinSketch(16, 8)
template = set(range(100, 164))
record = enrol(sketch, template, password_hasher=hasher("test"))
close = (template - {100, 101, 102}) | {7, 8, 9}
far = set(range(1000, 1064))
library = (
    verify(sketch, record, close, password_hasher=hasher("test")),
    verify(sketch, record, far, password_hasher=hasher("test")),
)
assert library == (True, False), library

workdir = tempfile.mkdtemp(prefix="sketchauth-smoke-")
url = f"sqlite:///{workdir}/smoke.db"
assert cli(["db", "migrate", "--db", url]) == 0
key = secrets.token_urlsafe(32)
settings = Settings(database_url=url, api_keys=(key,), hash_profile="test", allow_test_profile=True, access_log=False)
auth = {"Authorization": f"Bearer {key}"}
enrolment = {"scheme": "pinsketch", "params": {"m": 16, "t": 8}, "samples": [sorted(template)]}
with TestClient(create_app(settings)) as client:
    enrolled = client.post("/v1/users/smoke/enrolment", headers=auth, json=enrolment).status_code
    genuine = client.post("/v1/users/smoke/verification", headers=auth, json={"sample": sorted(close)}).json()
    impostor = client.post("/v1/users/smoke/verification", headers=auth, json={"sample": sorted(far)}).json()
service = (enrolled, genuine, impostor)
assert service == (201, {"verified": True}, {"verified": False}), service
print(
    json.dumps(
        {
            "version": sketchauth.__version__,
            "backend": backend(),
            "library": library,
            "uid": os.getuid(),
            "service": "ok",
        }
    )
)
