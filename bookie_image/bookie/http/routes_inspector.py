"""The inspector's own paths beside the shared explain and entry-log-file routes: ``/heartbeat``, ``/metrics`` and
``/api/v1/bookie/is_ready`` (503 naming what is missing: a ledger volume, ZooKeeper)."""

from __future__ import annotations

from aiohttp import web

from bookie.http.backend import InspectorBackend
from bookie.http.common import Handler, methods, plain


def routes(b: InspectorBackend) -> dict[str, Handler]:
    async def heartbeat(_: web.Request) -> web.Response:
        return plain("OK\n")

    async def metrics(_: web.Request) -> web.Response:
        body, content_type = b.metrics_text()
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def is_ready(_: web.Request) -> web.Response:
        problem = await b.readiness()
        if problem is None:
            return plain("OK")
        return plain(f"Inspector not ready: {problem}\n", status=503)

    return {"/heartbeat": methods(GET=heartbeat), "/metrics": methods(GET=metrics),
            "/api/v1/bookie/is_ready": methods(GET=is_ready)}
