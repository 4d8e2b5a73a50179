"""The sketchauth enrolment/verification service: FastAPI app, settings and stores.

Nothing happens at import: :func:`sketchauth_service.app.create_app` builds the app from a
:class:`sketchauth_service.settings.Settings`; ``sketchauth serve`` runs it with uvicorn. The service uses
only the library's public API (``sketchauth.enrolment``, ``sketchauth.sketches.base``,
``sketchauth.mixing``, ``sketchauth.templates``, ``sketchauth.features``) and the library's
published parameter limits (module constants such as ``interval.MAX_N``); the library never
imports the service.

Modules: :mod:`.app` (factory, lifespan, body-size guard), :mod:`.settings` (pydantic-settings),
:mod:`.limits` (the request limits of one running service), :mod:`.requests` (request models built
per app from those limits, the offered schemes and pipelines), :mod:`.models` (response models,
apart from storage records), :mod:`.problems` (RFC 9457 errors, 415, the problem+json OpenAPI
declarations), :mod:`.schemes` (scheme table and parameter models), :mod:`.pipelines` (feature
pipelines offered by name),
:mod:`.authenticator` (enrol/verify work, off the event loop),
:mod:`.api` (one router per resource) and :mod:`.store` (SQLite / PostgreSQL repositories).
"""
