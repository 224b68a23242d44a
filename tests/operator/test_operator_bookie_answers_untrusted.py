"""The operator does not trust a bookie's answers: a bookie whose admin API (a real aiohttp server on loopback)
answers 100 MB, a compressed body, garbage, or values of the wrong type or range is marked Unknown in the
status, with the reason, while the reconcile goes on and the other bookies stay Writable. The operator reads
at most ``MAX_ANSWER_BYTES`` of an answer: the bytes the server got out and the operator's peak allocations
during the reconcile stay far below the 100 MB offered."""

from __future__ import annotations

import json
import tracemalloc
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from bookie_operator.bookie_client import MAX_ANSWER_BYTES, BookieAdmin
from bookie_operator.reconcile.ports import AdminTls, BookieAdminApi

from tests.operator.fakes import World, cluster_spec

OFFERED = 100 * 1024 * 1024
CHUNK = 64 * 1024
HOSTILE_IP = "10.0.0.2"   # ordinal 1 of the World's pods: its admin API is the hostile server
Answer = bytes | Callable[[web.Request, "Hostile"], Awaitable[web.StreamResponse]]
SANE = {"/api/v1/bookie/state": {"readOnly": False}, "/api/v1/bookie/info": {"freeSpace": 70, "totalSpace": 100},
        "/api/v1/bookie/gc": {"is_in_force_gc": "false"}, "/api/v1/bookie/gc_details": []}


@dataclass
class Hostile:
    """Answers ``path`` with ``answer`` (bytes, or a handler), every other path sanely; counts what it sent."""

    path: str
    answer: Answer
    sent: int = 0
    requests: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request.path)
        if request.path != self.path:
            return web.json_response(SANE.get(request.path, {}))
        if isinstance(self.answer, bytes):
            return web.Response(body=self.answer, content_type="application/json")
        return await self.answer(request, self)


async def stream_100_mb(request: web.Request, hostile: Hostile) -> web.StreamResponse:
    """Chunked, no Content-Length: only reading shows the size."""
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    await resp.prepare(request)
    chunk = b"[" + b"1," * (CHUNK // 2 - 1) + b"1"
    try:
        while hostile.sent < OFFERED:
            await resp.write(chunk)
            hostile.sent += len(chunk)
    except (ConnectionError, aiohttp.ClientConnectionResetError):
        pass  # the operator closed the connection
    return resp


async def announce_100_mb(request: web.Request, hostile: Hostile) -> web.StreamResponse:
    resp = web.StreamResponse(headers={"Content-Type": "application/json"})
    resp.content_length = OFFERED
    await resp.prepare(request)
    try:
        while hostile.sent < OFFERED:
            await resp.write(b" " * CHUNK)
            hostile.sent += CHUNK
    except (ConnectionError, aiohttp.ClientConnectionResetError):
        pass
    return resp


async def gzip_bomb(request: web.Request, hostile: Hostile) -> web.StreamResponse:
    """100 KB on the wire, 100 MB inflated (compressed a chunk at a time: the server holds no 100 MB either)."""
    deflate = zlib.compressobj(wbits=31)   # the gzip container
    blank = b" " * CHUNK
    body = b"".join(deflate.compress(blank) for _ in range(OFFERED // CHUNK)) + deflate.flush()
    hostile.sent = len(body)
    return web.Response(body=body, headers={"Content-Type": "application/json", "Content-Encoding": "gzip"})


def js(value: Any) -> bytes:
    return json.dumps(value).encode()


UNKNOWN: dict[str, tuple[str, Answer, str]] = {
    "100 MB streamed": ("/api/v1/bookie/state", stream_100_mb, f"larger than the {MAX_ANSWER_BYTES} bytes"),
    "100 MB announced": ("/api/v1/bookie/state", announce_100_mb, f"{OFFERED} bytes announced"),
    "gzip bomb": ("/api/v1/bookie/info", gzip_bomb, "compressed (gzip)"),
    "garbage": ("/api/v1/bookie/state", b"\x00\xff<html>not json", "not JSON"),
    "deep nesting": ("/api/v1/bookie/state", b"[" * 200_000 + b"]" * 200_000, "not JSON"),
    "not an object": ("/api/v1/bookie/state", js([1, 2]), "not a JSON object"),
    "readOnly not a bool": ("/api/v1/bookie/state", js({"readOnly": "no"}), "readOnly is 'no', not a boolean"),
    "freeSpace a string": ("/api/v1/bookie/info", js({"freeSpace": "lots", "totalSpace": 100}),
                           "freeSpace is 'lots', not an integer"),
    "freeSpace missing": ("/api/v1/bookie/info", js({"totalSpace": 100}), "freeSpace is missing"),
    "freeSpace negative": ("/api/v1/bookie/info", js({"freeSpace": -1, "totalSpace": 100}), "freeSpace is '-1'"),
    "totalSpace huge": ("/api/v1/bookie/info", b'{"freeSpace": 1, "totalSpace": 1e400}', "totalSpace is 'inf'"),
    "free above total": ("/api/v1/bookie/info", js({"freeSpace": 200, "totalSpace": 100}),
                         "freeSpace 200 > totalSpace 100"),
}


@pytest.fixture
async def session() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession() as s:
        yield s


async def serve(hostile: Hostile) -> tuple[web.AppRunner, int]:
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", hostile.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, int(port)


async def reconcile_with(hostile: Hostile, session: aiohttp.ClientSession) -> World:
    """Two reconciles of a three-bookie cluster whose second bookie's admin API is ``hostile``."""
    runner, server_port = await serve(hostile)
    try:
        w = World()
        w.kube.create_cluster("bk", cluster_spec())

        def admin_for(host: str, port: int, token: str | None, tls: AdminTls | None = None) -> BookieAdminApi:
            if host == HOSTILE_IP:
                return BookieAdmin(session, "127.0.0.1", server_port, token=token)
            return w._admin_for(host, port, token, tls)

        w.operator.admin_for = admin_for
        await w.tick()
        await w.tick()
        return w
    finally:
        await runner.cleanup()


def bookie_status(w: World, ordinal: int) -> dict[str, Any]:
    return next(b for b in w.status["bookies"] if b["ordinal"] == ordinal)


@pytest.mark.parametrize("case", list(UNKNOWN))
async def test_a_bad_answer_marks_that_bookie_unknown_with_the_reason(case: str,
                                                                      session: aiohttp.ClientSession) -> None:
    path, answer, reason = UNKNOWN[case]
    hostile = Hostile(path, answer)
    tracemalloc.start()
    try:
        w = await reconcile_with(hostile, session)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert path in hostile.requests
    status = bookie_status(w, 1)
    assert status["state"] == "Unknown"
    assert reason in status["unknownReason"] and path in status["unknownReason"]
    assert [bookie_status(w, o)["state"] for o in (0, 2)] == ["Writable", "Writable"]
    assert "unknownReason" not in bookie_status(w, 0)
    # Bounded by what was read, not by what was offered: the socket buffers hold what was sent and not read.
    assert hostile.sent < OFFERED // 2
    assert peak < 16 * MAX_ANSWER_BYTES, f"{peak} bytes allocated at the peak"


async def test_out_of_range_compaction_times_and_counters_are_not_used(session: aiohttp.ClientSession) -> None:
    """A time no datetime can hold (the status would fail to render) leaves the GC figures out, not the bookie."""
    details = [{"lastMajorCompactionTime": 10**30, "majorCompactionCounter": 1, "minorCompactionCounter": 1}]
    w = await reconcile_with(Hostile("/api/v1/bookie/gc_details", js(details)), session)
    status = bookie_status(w, 1)
    assert status["state"] == "Writable" and status["diskUsedFraction"] == 0.3
    assert "lastCompactionTime" not in status and "majorCompactions" not in status
