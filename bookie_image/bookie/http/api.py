"""aiohttp application serving BookKeeper's admin REST API (reference section 8).

The handlers only translate HTTP to calls on an ``AdminBackend``; they hold no bookie logic, so the same
paths and JSON shapes work for every backend feature (state, storage, metadata, GC, autorecovery).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

from aiohttp import web

log = logging.getLogger(__name__)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class AdminBackend(Protocol):
    """What the REST API needs from a bookie. Implemented by ``bookie.server.BookieServer``."""

    bookie_id: str

    def server_config(self) -> dict[str, Any]: ...
    def update_server_config(self, values: dict[str, Any]) -> None: ...
    def state_json(self) -> dict[str, Any]: ...
    def is_ready(self) -> bool: ...
    async def set_read_only(self, read_only: bool) -> None: ...
    def disk_space(self) -> tuple[int, int]: ...
    async def sanity_check(self) -> bool: ...
    def last_log_mark(self) -> tuple[int, int]: ...
    def list_disk_files(self) -> dict[str, list[str]]: ...
    def metrics_text(self) -> tuple[bytes, str]: ...
    async def cluster_info(self) -> dict[str, Any]: ...
    async def list_bookies(self, read_only: bool) -> list[str]: ...
    async def bookie_disk_info(self) -> dict[str, tuple[int, int]]: ...
    async def list_ledgers(self) -> list[int]: ...
    async def ledger_metadata(self, ledger_id: int) -> dict[str, Any] | None: ...
    async def ledger_metadata_bytes(self, ledger_id: int) -> bytes | None: ...
    async def read_ledger(self, ledger_id: int, first: int, last: int) -> dict[str, str]: ...
    async def delete_ledger(self, ledger_id: int) -> None: ...
    gc: Any          # bookie.gc controller or None until GC is configured
    autorecovery: Any  # autorecovery admin or None when not running


def pretty(data: Any, status: int = 200) -> web.Response:
    """Jackson's pretty printer style: indented JSON."""
    return web.Response(text=json.dumps(data, indent=2), status=status, content_type="application/json")


def plain(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/plain")


class BadRequest(Exception):
    """A request the API refuses, with a message naming the problem (answered with 400)."""


async def json_body(request: web.Request, *, required: bool = False) -> dict[str, Any]:
    text = await request.text()
    if not text.strip():
        if required:
            raise BadRequest("request body is empty; expected a JSON object")
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object")
    return data


def int_param(request: web.Request, name: str, default: int | None = None) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        if default is None:
            raise BadRequest(f"missing query parameter {name}")
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"query parameter {name} must be an integer, got {raw!r}") from None


def bool_value(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise BadRequest(f"{name} must be true or false, got {value!r}")


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


def methods(**by_method: Handler) -> Handler:
    """Route one path by method; others get 405 like BookKeeper's services."""

    async def dispatch(request: web.Request) -> web.StreamResponse:
        handler = by_method.get(request.method) or by_method.get("ANY")
        if handler is None:
            return plain(f"Method {request.method} not allowed", status=405)
        return await handler(request)

    return dispatch


def build_app(backend: AdminBackend) -> web.Application:
    from bookie.http import routes_bookie, routes_entrylogs, routes_gc, routes_ledger

    app = web.Application(middlewares=[errors_middleware])
    table: dict[str, Handler] = {}
    table.update(routes_bookie.routes(backend))
    table.update(routes_gc.routes(backend))
    table.update(routes_entrylogs.routes(backend))
    table.update(routes_ledger.routes(backend))
    autorecovery = getattr(backend, "autorecovery_routes", None)
    if autorecovery is not None:
        table.update(autorecovery())
    for path, handler in table.items():
        app.router.add_route("*", path, handler)
    return app
