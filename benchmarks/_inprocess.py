"""Source text the service benchmarks' child scripts share: in-process ASGI verification requests.

:mod:`benchmarks.bench_service_instructions` and :mod:`benchmarks.bench_service_cache` each run
a child Python (``python -c``) that drives the app with hand-made ASGI messages — no socket, no
client — so that what is counted or timed is the request path alone. The child's text is composed
in the parent from these pieces (the instruction count runs it from other checkouts too, which
need not have this module).
"""

from __future__ import annotations

#: The 16 users and their verification bodies (needs ``json``; defines ``KEY``, ``people``, ``bodies``).
PEOPLE = r"""
from benchmarks.bench_service import bare_app, population
KEY = "k" * 40
people = population(16, 64)
bodies = [json.dumps({"sample": genuine}).encode() for _, genuine in people]
"""

#: ``request(app, i)``: the coroutine of one verification of user ``u{i % 16}`` through ``app``
#: (its answer must be ``{"verified":true}``).
REQUEST = r"""
def request(app, i):
    body = bodies[i % 16]
    path = f"/v1/users/u{i % 16}/verification"
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "", "state": {},
             "headers": [(b"host", b"127.0.0.1"), (b"authorization", f"Bearer {KEY}".encode()),
                         (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8000)}
    sent = []
    async def receive():
        if not sent:
            sent.append(True)
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()
    answers = []
    async def send(message):
        answers.append(message)
    async def run():
        await app(scope, receive, send)
        if answers[0]["status"] != 200 or answers[1]["body"] != b'{"verified":true}':
            raise RuntimeError(f"unexpected answer: {answers}")
    return run()
"""

#: The service on SQLite (test hash profile, no lockout, no access log), the 16 users enrolled, then
#: ``prepare(client)`` and ``measure(app)`` on the app's own loop (needs ``DATABASE``, ``prepare``
#: and ``measure``).
SERVICE = r"""
from fastapi.testclient import TestClient
from sketchauth_service.app import create_app
from sketchauth_service.settings import Settings
tmp = tempfile.mkdtemp()
settings = Settings(database_url=f"sqlite:///{tmp}/{DATABASE}", api_keys=(KEY,), hash_profile="test",
                    allow_test_profile=True, lockout_threshold=10**6, disable_threshold=10**6, access_log=False)
auth = {"Authorization": f"Bearer {KEY}"}
with TestClient(create_app(settings)) as client:
    for i, (template, _) in enumerate(people):
        enrol = {"scheme": "interval", "params": {"n": 256, "v": 8, "features": 64}, "samples": [template]}
        assert client.post(f"/v1/users/u{i}/enrolment", headers=auth, json=enrol).status_code == 201
    prepare(client)
    client.portal.call(measure, client.app)
"""
