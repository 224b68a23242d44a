"""A request sent with a callback (how a ledger sends its appends) gets its answer the moment the answer is
read, in the order answers arrive, with no future and no scheduled callback in between; a failure reaches the
callback one loop iteration later, so a sender that sends again from its callback finds the connection
already closed; and a callback that raises does not cost the other requests their answers."""

from __future__ import annotations

import asyncio
import logging

import pytest
from bookie.client.errors import BookieUnavailable
from bookie.protocol import codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.silent_peer import connect, read


def answers_to(ledgers: range) -> bytes:
    """The bookie's ENOENTRY answers to reads of entry 0 of ``ledgers``, sent with txn ids from 1 in order."""
    frames = []
    for txn, ledger in enumerate(ledgers, start=1):
        request = m.ReadRequest(m.Wire.v3(txn), ledger, 0)
        frames.append(codec.encode_response(request, m.ReadResponse(request.wire, StatusCode.ENOENTRY, ledger, 0)))
    return b"".join(frames)


async def test_answers_reach_their_callbacks_as_they_are_read(silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    outcomes: list[m.Response | BaseException] = []
    for ledger in range(5):
        conn.send_then(read(ledger), 30.0, outcomes.append)
    conn.data_received(answers_to(range(5)))
    assert [o.ledger_id for o in outcomes if isinstance(o, m.ReadResponse)] == [0, 1, 2, 3, 4]
    assert conn.in_flight == 0
    conn.close()


async def test_a_failure_reaches_the_callback_on_the_next_loop_iteration(silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    outcomes: list[m.Response | BaseException] = []
    for ledger in range(3):
        conn.send_then(read(ledger), 30.0, outcomes.append)
    conn.close()
    assert outcomes == [], "failed while the connection was closing"
    await asyncio.sleep(0)
    assert len(outcomes) == 3 and all(isinstance(o, BookieUnavailable) for o in outcomes)
    conn.send_then(read(3), 30.0, outcomes.append)  # sending again: the connection is closed
    await asyncio.sleep(0)
    assert isinstance(outcomes[3], BookieUnavailable) and "closed" in str(outcomes[3])


async def test_a_callback_that_raises_leaves_the_other_answers_delivered(
        silent_bookie: tuple[str, int], caplog: pytest.LogCaptureFixture) -> None:
    conn = await connect(silent_bookie)
    answered: list[int] = []

    def record(outcome: m.Response | BaseException) -> None:
        assert isinstance(outcome, m.ReadResponse)
        if outcome.ledger_id == 1:
            raise RuntimeError("a bug in the sender")
        answered.append(outcome.ledger_id)

    for ledger in range(3):
        conn.send_then(read(ledger), 30.0, record)
    with caplog.at_level(logging.ERROR, logger="bookie.client.connection"):
        conn.data_received(answers_to(range(3)))
    assert answered == [0, 2]
    assert "a bug in the sender" in caplog.text
    assert not conn.closed
    conn.close()
