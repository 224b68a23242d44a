"""aiohttp application serving BookKeeper's admin REST API.

The handlers only translate HTTP to calls on an ``AdminBackend`` (``bookie.http.backend``); they hold no bookie
logic, so the same paths and JSON shapes work for every backend feature (state, storage, metadata, GC,
autorecovery). The bookie's implementation is ``bookie.admin.AdminService``. Every application is built with
an ``AdminAuth`` (``bookie.http.auth``): which calls need a credential is decided there, for every route.
"""

from __future__ import annotations

import logging

from aiohttp import web

from bookie.http import (
    routes_autorecovery,
    routes_bookie,
    routes_entrylog_files,
    routes_entrylogs,
    routes_gc,
    routes_inspector,
    routes_ledger,
)
from bookie.http.auth import AdminAuth, auth_middleware
from bookie.http.backend import AdminBackend, AutorecoveryAdmin, InspectorBackend
from bookie.http.common import BadRequest, Handler, plain

log = logging.getLogger(__name__)


@web.middleware
async def errors_middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except BadRequest as exc:
        return plain(str(exc), status=400)
    except web.HTTPException:
        raise
    except Exception:  # an admin API answers 500, it never kills the bookie
        log.exception("REST %s %s failed", request.method, request.path)
        return plain("Internal error, see the bookie log", status=500)


def _app(auth: AdminAuth, table: dict[str, Handler]) -> web.Application:
    # The credential check is the outer middleware, so it audits the status the errors middleware answers.
    app = web.Application(middlewares=[auth_middleware(auth), errors_middleware])
    for path, handler in table.items():
        app.router.add_route("*", path, handler)
    return app


def build_app(backend: AdminBackend, auth: AdminAuth) -> web.Application:
    table: dict[str, Handler] = {}
    table.update(routes_bookie.routes(backend))
    table.update(routes_gc.routes(backend))
    table.update(routes_entrylogs.routes(backend))
    table.update(routes_entrylog_files.routes(backend))
    table.update(routes_ledger.routes(backend))
    if backend.autorecovery is not None:
        table.update(routes_autorecovery.routes(backend.autorecovery))
    return _app(auth, table)


def build_autorecovery_app(autorecovery: AutorecoveryAdmin, auth: AdminAuth) -> web.Application:
    """``/api/v1/autorecovery/*`` alone (``bookie autorecovery --http-port``), with the same credential check."""
    return _app(auth, routes_autorecovery.routes(autorecovery))


def build_inspector_app(backend: InspectorBackend, auth: AdminAuth) -> web.Application:
    """The inspector's API (``bookie inspect serve``): the explain endpoint and the entry-log files as a bookie
    serves them, with the same credential check, plus its heartbeat, readiness and metrics."""
    table: dict[str, Handler] = {}
    table.update(routes_inspector.routes(backend))
    table.update(routes_entrylogs.routes(backend))
    table.update(routes_entrylog_files.routes(backend))
    return _app(auth, table)
