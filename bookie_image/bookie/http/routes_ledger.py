"""/api/v1/ledger/{list,metadata,read,delete}."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bookie.http.backend import AdminBackend
from bookie.http.common import BadRequest, Handler, int_param, methods, plain, pretty

LEDGERS_PER_PAGE = 100
ENTRIES_PER_PAGE = 1000


def routes(b: AdminBackend) -> dict[str, Handler]:
    async def list_ledgers(request: web.Request) -> web.Response:
        print_meta = request.query.get("print_metadata") == "true"
        decode = request.query.get("decode_meta", "false") == "true"
        page = int_param(request, "page", 0)
        ids = sorted(await b.list_ledgers())
        if page > 0:
            ids = ids[(page - 1) * LEDGERS_PER_PAGE: page * LEDGERS_PER_PAGE]
        out: dict[str, Any] = {}
        for ledger_id in ids:
            if not print_meta:
                out[str(ledger_id)] = None
            elif decode:
                out[str(ledger_id)] = await b.ledger_metadata(ledger_id)
            else:  # BookKeeper prints the serialized metadata as text
                raw = await b.ledger_metadata_bytes(ledger_id)
                out[str(ledger_id)] = None if raw is None else raw.decode(errors="replace")
        return pretty(out)

    async def metadata(request: web.Request) -> web.Response:
        ledger_id = int_param(request, "ledger_id")
        meta = await b.ledger_metadata(ledger_id)
        if meta is None:
            return plain(f"Ledger {ledger_id} does not exist", status=404)
        return pretty({str(ledger_id): meta})

    async def read(request: web.Request) -> web.Response:
        ledger_id = int_param(request, "ledger_id")
        first = int_param(request, "start_entry_id", 0)
        last = int_param(request, "end_entry_id", -1)
        page = int_param(request, "page", 0)
        if page > 0:
            first = max(first, (page - 1) * ENTRIES_PER_PAGE)
            last = first + ENTRIES_PER_PAGE - 1 if last < 0 else min(last, first + ENTRIES_PER_PAGE - 1)
        if last >= 0 and last < first:
            raise BadRequest(f"end_entry_id {last} is before start_entry_id {first}")
        if await b.ledger_metadata(ledger_id) is None:
            return plain(f"Ledger {ledger_id} does not exist", status=404)
        return pretty(await b.read_ledger(ledger_id, first, last))

    async def delete(request: web.Request) -> web.Response:
        ledger_id = int_param(request, "ledger_id")
        if await b.ledger_metadata(ledger_id) is None:
            return plain(f"Ledger {ledger_id} does not exist", status=404)
        await b.delete_ledger(ledger_id)
        return pretty(f"Deleted ledger: {ledger_id}")

    return {
        "/api/v1/ledger/list": methods(GET=list_ledgers),
        "/api/v1/ledger/metadata": methods(GET=metadata),
        "/api/v1/ledger/read": methods(GET=read),
        "/api/v1/ledger/delete": methods(DELETE=delete),
    }
