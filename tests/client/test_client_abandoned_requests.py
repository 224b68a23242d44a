"""A request's outcome reaches whoever waits for it and no one else: a request that fails after its caller
stopped waiting (a speculative read answered by another bookie, an add of an entry already acknowledged)
logs nothing, and an answered request costs the connection no scheduled callback of its own."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from bookie.protocol import codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.silent_peer import connect, read


async def test_failed_requests_nobody_awaits_log_nothing(silent_bookie: tuple[str, int]) -> None:
    loop = asyncio.get_running_loop()
    reported: list[str] = []
    previous = loop.get_exception_handler()
    loop.set_exception_handler(lambda _, context: reported.append(context["message"]))
    try:
        conn = await connect(silent_bookie)
        for ledger in range(50):
            conn.send(read(ledger), 30.0)  # nobody keeps the future
        conn.close()  # fails every pending request
        await asyncio.sleep(0)
        gc.collect()
        assert reported == []
    finally:
        loop.set_exception_handler(previous)


async def test_an_answered_request_schedules_only_its_callers_callbacks(
        silent_bookie: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    conn = await connect(silent_bookie)
    futures = [conn.send(read(ledger), 30.0) for ledger in range(100)]
    await asyncio.sleep(0)  # the requests' write
    loop = asyncio.get_running_loop()
    scheduled = 0
    call_soon = loop.call_soon

    def counting_call_soon(callback: Any, *args: Any, **kwargs: Any) -> asyncio.Handle:
        nonlocal scheduled
        scheduled += 1
        return call_soon(callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_soon", counting_call_soon)
    answers = []
    for txn, ledger in enumerate(range(100), start=1):
        request = m.ReadRequest(m.Wire.v3(txn), ledger, 0)
        answers.append(codec.encode_response(request, m.ReadResponse(request.wire, StatusCode.ENOENTRY, ledger, 0)))
    conn.data_received(b"".join(answers))
    assert all(f.done() and f.result().status is StatusCode.ENOENTRY for f in futures)
    assert scheduled == 0, f"{scheduled} callbacks scheduled for 100 answers nobody waits on"
    conn.close()
