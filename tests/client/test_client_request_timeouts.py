"""A request the bookie does not answer fails with ``BookieTimeout`` once its own timeout has passed, in
deadline order whatever the order of sending; a connection keeps one timer for all its pending requests,
not one per request."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest
from bookie.client.errors import BookieTimeout

from tests.support.silent_peer import connect, read


async def test_unanswered_requests_time_out_in_deadline_order(silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    loop = asyncio.get_running_loop()
    sent_at = loop.time()
    futures = {timeout: conn.send(read(ledger), timeout) for ledger, timeout in enumerate((0.6, 0.2, 0.4))}
    failed_in_order: list[float] = []
    for timeout, fut in futures.items():
        fut.add_done_callback(functools.partial(lambda t, _: failed_in_order.append(t), timeout))
    await asyncio.wait(futures.values())
    assert failed_in_order == [0.2, 0.4, 0.6]
    assert loop.time() - sent_at >= 0.6, "a request failed before its timeout"
    for timeout, fut in futures.items():
        error = fut.exception()
        assert isinstance(error, BookieTimeout)
        assert f"did not answer within {timeout:g}s" in str(error)
    assert conn.in_flight == 0
    conn.close()


async def test_one_timer_for_many_pending_requests(silent_bookie: tuple[str, int],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    conn = await connect(silent_bookie)
    loop = asyncio.get_running_loop()
    timers = 0
    call_at = loop.call_at

    def counting_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> asyncio.TimerHandle:
        nonlocal timers
        timers += 1
        return call_at(when, callback, *args, **kwargs)

    monkeypatch.setattr(loop, "call_at", counting_call_at)
    futures = [conn.send(read(ledger), 30.0) for ledger in range(200)]
    assert conn.in_flight == 200
    assert timers <= 1, f"{timers} timers scheduled for 200 pending requests"
    conn.close()
    for fut in futures:
        with pytest.raises(Exception, match="closed by the client"):
            await fut
