"""The FastAPI application: ``create_app(settings)`` builds it, nothing happens at import.

Building the app loads the feature pipelines of ``settings.pipelines_dir`` once (a bad file is a
:class:`~sketchauth_service.settings.SettingsError`: the service does not start). The lifespan opens the
store named by ``settings.database_url``, applies migrations, makes the argon2 dummy hash and
warms every offered scheme and pipeline (imports, field tables, compiled code) so the first
request is not slow. Admission control (:mod:`sketchauth_service.admission`) refuses a request beyond the
in-flight limits (``503``/``429`` with ``Retry-After``) before anything is read; a pure-ASGI guard
(:mod:`sketchauth_service.bodies`) then reads every body before it is parsed, whether or not the client sent
``Content-Length``: over ``max_body_bytes`` is 413, not received within ``body_timeout_seconds``
408; the routes decode it once, strictly (not UTF-8: 400; a repeated member name: 422), off the
event loop when large. Under ``sketchauth serve`` the HTTP protocol also times out unfinished
header sections and caps the open connections below the file-descriptor limit.

Run it with ``sketchauth serve`` (uvicorn), or ``uvicorn --factory sketchauth_service.app:app_from_env``.
"""

from __future__ import annotations

import inspect
import logging
import os
import shutil
import socket
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import sketchauth
from sketchauth_service.admission import Admission
from sketchauth_service.api import admin, factors, health, schemes, users
from sketchauth_service.api.deps import check_every_route_is_scoped, scope_alternatives
from sketchauth_service.api.errors import install_use_case_handlers
from sketchauth_service.authenticator import Authenticator
from sketchauth_service.bodies import ACCEPT_BACKLOG, BodySizeLimit, ProblemHTTPProtocol
from sketchauth_service.credentials import FailureThrottle, KeySource
from sketchauth_service.limits import RequestLimits
from sketchauth_service.observability import (
    METRICS,
    MULTIPROC_ENV,
    ProcessSampler,
    RequestLog,
    UserHasher,
    log_settings,
    logging_config,
    multiprocess_dir,
    route_of,
)
from sketchauth_service.pepper import check_database, peppered
from sketchauth_service.pipelines import LoadedPipeline, load_configured, warm_up_pipeline
from sketchauth_service.problems import install_problem_handlers, install_problem_openapi, problem_response
from sketchauth_service.requests import build_request_models
from sketchauth_service.schemes import available_schemes, warm_up
from sketchauth_service.settings import TEST_PROFILE_WARNING, Settings, SettingsError
from sketchauth_service.state import ServiceState
from sketchauth_service.store import LockoutPolicy, Store, StoreError, open_store

__all__ = ["BodySizeLimit", "ContainErrors", "StartupError", "app_from_env", "create_app", "preflight", "run_server"]

log = logging.getLogger("sketchauth.service")


class ContainErrors:
    """ASGI middleware: an unhandled exception ends here as a 500 problem, logged by type only.

    Starlette's outermost error middleware answers 500 and then *re-raises* the exception so
    the server can log it: uvicorn would print the traceback with the exception's message,
    and a message from deep in a decode could quote a sample, PIN or embedding value. This
    middleware sits inside it and swallows the exception after logging its type and the route
    template (never the path, which holds the user id).
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            # The route template, never the path: paths hold raw user ids.
            log.error("unhandled %s on %s %s", type(exc).__name__, scope.get("method"), route_of(scope))
            if not started:
                response = problem_response(
                    500, "internal-error", "the service failed to handle this request", instance=scope.get("path")
                )
                await response(scope, receive, send)


def operation_id(route: APIRoute) -> str:
    """A route's OpenAPI ``operationId``: its name (``enrol_user``, ``verify_user``, ``release_key``)."""
    return route.name


def _open(settings: Settings, store: Store | None) -> Store:
    if store is not None:
        return store
    return open_store(settings.database_url, postgres_schema=settings.postgres_schema, pool_size=8)


def _ready_store(settings: Settings, store: Store) -> Store:
    """Migrate ``store`` and check it against the peppers; the store to serve from (peppered)."""
    store.migrate()
    # pepper: refuse a database this deployment's peppers cannot read; wrap helpers from here on
    ring = settings.pepper_ring()
    check_database(store, ring, settings.deployment_id)
    return peppered(store, ring, settings)  # every record through the deployment's codec


class StartupError(SettingsError):
    """The service cannot start with this database or installation (one line: what and how to fix)."""


def preflight(settings: Settings) -> None:
    """What the workers would refuse at start, checked once before any starts (:class:`StartupError`).

    ``sketchauth serve`` runs it in the supervisor: the database opens and migrates, its records
    are readable with the configured peppers, and the backend's driver is installed. Each failure
    becomes one line naming the setting and the remedy instead of a traceback per worker.
    """
    where = settings.public_view()["database_url"]
    # The pool's own retry warnings would print once per try before the one line below.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    try:
        opened = _open(settings, None)
    except ImportError as exc:
        raise StartupError(
            f"SKETCHAUTH_DATABASE_URL names {where.split(':', 1)[0]}, whose driver is not installed "
            f"({exc.name or exc}): pip install 'sketchauth[postgres]'"
        ) from None
    except ValueError as exc:
        raise StartupError(f"SKETCHAUTH_DATABASE_URL: {exc}") from None
    except OSError as exc:
        raise StartupError(
            f"the database at {where} cannot be opened ({exc.strerror or type(exc).__name__}): check "
            "SKETCHAUTH_DATABASE_URL and that its directory exists and is writable"
        ) from None
    try:
        _ready_store(settings, opened)
    except SettingsError:
        raise
    except (ValueError, StoreError) as exc:  # the pepper checks (PepperSettingsError), a newer schema
        raise StartupError(str(exc)) from None
    except Exception as exc:
        raise StartupError(
            f"the database at {where} cannot be opened and migrated ({type(exc).__name__}): check "
            "SKETCHAUTH_DATABASE_URL, that the server runs and that this user may create tables"
        ) from None
    finally:
        opened.close()


def create_app(settings: Settings, *, store: Store | None = None, clock: Callable[[], float] = time.time) -> FastAPI:
    """The service app for ``settings`` (validated here: refuses to build without an API key).

    Pipelines are loaded here, once; ``SettingsError`` if their directory holds a bad file.

    ``store`` replaces the one the database URL names (tests); the app then does not close it.
    ``clock`` gives Unix time for throttling and audit (tests step it instead of sleeping).
    """
    settings.validate()
    pipelines = load_configured(settings)
    # One set of request models per app: the limits, schemes and pipelines it enforces are the
    # ones its OpenAPI document and GET /v1/schemes publish.
    models = build_request_models(RequestLimits.of(settings), available_schemes(), pipelines)
    keys = settings.key_source()
    _start_warnings(settings, keys)
    app = FastAPI(
        title="sketchauth",
        version=sketchauth.__version__,
        summary="Biometric enrolment and verification that stores only secure sketches and argon2id hashes.",
        lifespan=partial(_lifespan, _Parts(settings, store, clock, pipelines, keys)),
        # operationId = the endpoint's name: generated clients get enrol_user, not
        # enrol_user_v1_users_user_id_enrolment_post (route names are unique: a test checks).
        generate_unique_id_function=operation_id,
    )
    app.state.request_models = models
    install_problem_handlers(app)
    install_use_case_handlers(app)
    install_problem_openapi(app, scope_alternatives)
    for router in (
        users.build_router(models),
        factors.build_router(models),
        admin.router,
        schemes.router,
        health.router,
    ):
        app.include_router(router)
    check_every_route_is_scoped(app)
    _add_middlewares(app, settings)
    return app


def _start_warnings(settings: Settings, keys: KeySource) -> None:
    """Warn of what local mode lets through (no keys, short keys) and of the test hash profile."""
    if settings.dev_mode and not keys.ring.keys:
        log.warning("SKETCHAUTH_DEV_MODE without API keys: every caller is trusted; local use only")
    weak = [key.name for key in keys.ring.keys if key.weak]
    if weak:  # validate() lets them through in local mode only
        log.warning(
            "SKETCHAUTH_DEV_MODE: API keys shorter than 128 bits accepted (%s); local use only", ", ".join(weak)
        )
    if settings.insecure_hash_profile:
        log.warning(TEST_PROFILE_WARNING)


def _add_middlewares(app: FastAPI, settings: Settings) -> None:
    """The ASGI layers around the app, innermost first."""
    app.add_middleware(BodySizeLimit, limit=settings.max_body_bytes, timeout=settings.body_timeout_seconds)
    app.add_middleware(ContainErrors)  # outside the body guard: it sees every error of the app
    # Before any body is read: a refused request costs no parsing, no thread, no database call.
    app.add_middleware(Admission, limit=settings.max_in_flight, per_key=settings.max_in_flight_per_key)
    # Outermost: logs and counts every answer, the 413s, refusals and contained 500s included.
    app.add_middleware(RequestLog, hasher=UserHasher(settings.log_key), enabled=settings.access_log)


@dataclass(frozen=True, slots=True)
class _Parts:
    """What the lifespan builds the service state from."""

    settings: Settings
    store: Store | None
    clock: Callable[[], float]
    pipelines: dict[str, LoadedPipeline]
    keys: KeySource


async def _serving_state(parts: _Parts, opened: Store) -> ServiceState:
    """Migrate and check the store, make the authenticator, warm every scheme and pipeline."""
    settings = parts.settings
    serving = await run_in_threadpool(_ready_store, settings, opened)
    authenticator = await run_in_threadpool(
        partial(
            Authenticator,
            settings.hash_profile,
            concurrency=settings.effective_hash_threads(),
            pin_min_entropy=settings.pin_min_entropy,
        )
    )
    for spec in available_schemes():
        await run_in_threadpool(warm_up, spec)
    for loaded in parts.pipelines.values():
        await run_in_threadpool(warm_up_pipeline, loaded.pipeline)
    return ServiceState(
        settings=settings,
        store=serving,
        authenticator=authenticator,
        policy=LockoutPolicy(settings.lockout_threshold, settings.lockout_seconds, settings.disable_threshold),
        clock=parts.clock,
        pipelines=parts.pipelines,
        keys=parts.keys,
        throttle=FailureThrottle(settings.auth_failure_rate, settings.auth_failure_burst),
    )


@asynccontextmanager
async def _lifespan(parts: _Parts, app: FastAPI) -> AsyncIterator[None]:
    opened = _open(parts.settings, parts.store)
    sampler = ProcessSampler(METRICS).start() if multiprocess_dir() else None
    try:
        app.state.service = await _serving_state(parts, opened)
        if parts.settings.access_log:
            log_settings(parts.settings.public_view())
        yield
    finally:
        if sampler is not None:
            sampler.stop()
        serving: ServiceState | None = getattr(app.state, "service", None)
        if serving is not None:
            serving.authenticator.close()  # its hashing threads and their memory
        if parts.store is None:
            opened.close()


def _tcp_nodelay(sock: socket.socket) -> socket.socket:
    """The same listening socket, labelled ``IPPROTO_TCP`` and with ``TCP_NODELAY`` set.

    uvicorn's multi-worker mode binds ``socket.socket(family)``, whose ``proto`` is 0, and
    asyncio sets ``TCP_NODELAY`` only on accepted sockets whose ``proto`` is ``IPPROTO_TCP``.
    Without it Nagle's algorithm holds each response body until the client's delayed ACK of the
    headers: about 40 ms added to every request. Relabelling the socket (the label travels to
    the worker processes with it) and setting the option on the listener fixes that.
    """
    if sock.family not in (socket.AF_INET, socket.AF_INET6):
        return sock
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    relabelled = socket.socket(sock.family, sock.type, socket.IPPROTO_TCP, fileno=sock.detach())
    relabelled.set_inheritable(True)
    return relabelled


def run_server(settings: Settings, *, log_level: str = "info", access_log: bool = True) -> int:
    """Serve with uvicorn: ``settings.workers`` processes, each building the app from the environment.

    Workers are separate processes, so they read ``SKETCHAUTH_*`` again (the CLI exports its
    flags there first); ``settings`` gives the address and the number of workers.
    ``access_log=False`` turns the JSON request log off in every worker (``SKETCHAUTH_ACCESS_LOG=0``);
    uvicorn's own access log stays off either way, as it prints paths and so raw user ids.
    """
    if not access_log:
        os.environ["SKETCHAUTH_ACCESS_LOG"] = "0"
    shared = _metrics_dir(settings.workers)

    # start-up: uvicorn is loaded only by the process that serves (tests and tools build the app alone)
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        "sketchauth_service.app:app_from_env",
        factory=True,
        host=settings.host,
        port=settings.port,
        workers=settings.workers,
        log_level=log_level,
        log_config=logging_config(log_level),
        # uvicorn's access log prints paths, which hold raw user ids: the app writes its own
        # JSON request log instead (SKETCHAUTH_ACCESS_LOG, sketchauth_service.observability).
        access_log=False,
        http=ProblemHTTPProtocol,  # problem+json 400s, header timeout, connection cap
        backlog=ACCEPT_BACKLOG,  # also asyncio's accept batch: the descriptors the cap keeps free
    )
    server = uvicorn.Server(config)
    if settings.workers == 1:
        # One process: asyncio binds host:port itself, with IPPROTO_TCP.
        server.run()
        return 0 if server.started else 1
    supervisor_args: dict[str, Any] = {"sockets": [_tcp_nodelay(config.bind_socket())]}
    if "target" in inspect.signature(Multiprocess).parameters:  # uvicorn < 0.36 takes the target
        supervisor_args["target"] = server.run
    try:
        Multiprocess(config, **supervisor_args).run()
    finally:
        if shared is not None:
            shutil.rmtree(shared, ignore_errors=True)
    return 0


def _metrics_dir(workers: int) -> str | None:
    """A fresh directory for the workers' shared metrics (several workers), exported to them.

    Fresh at every start: files a previous run left would add its counts to this one's.
    """
    if workers == 1:
        os.environ.pop(MULTIPROC_ENV, None)
        return None
    shared = tempfile.mkdtemp(prefix="sketchauth-metrics-")
    os.environ[MULTIPROC_ENV] = shared
    return shared


def app_from_env() -> Any:
    """uvicorn factory: the app for ``Settings.from_env()`` (how ``sketchauth serve`` workers start).

    Also sets this worker's connection guards (:class:`~sketchauth_service.bodies.ProblemHTTPProtocol`):
    uvicorn builds the protocol per connection from its class, so the settings go there.
    """
    settings = Settings.from_env()
    ProblemHTTPProtocol.configure(settings.header_timeout_seconds, settings.max_connections)
    return create_app(settings)
