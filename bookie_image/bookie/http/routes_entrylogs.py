"""``GET /api/v1/bookie/entry_logs``: our own explain endpoint (not in BookKeeper), see docs/gc.md.

Lists the entry logs of every ledger directory, oldest first, with size, usage, age, the live ledgers that
pin each one and GC's verdict, so an operator sees at once why a months-old log is still on disk.
"""

from __future__ import annotations

from aiohttp import web

from bookie.http.backend import EntryLogsBackend, ExplainUnavailable
from bookie.http.common import Handler, int_param, methods, plain, pretty


def routes(b: EntryLogsBackend) -> dict[str, Handler]:
    async def entry_logs(request: web.Request) -> web.Response:
        if b.gc is None:
            return plain("Garbage collection is not available on this bookie", status=501)
        try:
            return pretty(await b.gc.explain(int_param(request, "limit", 0)))
        except ExplainUnavailable as exc:
            return plain(f"Cannot explain the entry logs now: {exc}\n", status=503)

    return {"/api/v1/bookie/entry_logs": methods(GET=entry_logs)}
