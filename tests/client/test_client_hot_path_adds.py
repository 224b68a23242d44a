"""A ledger's v3 adds take the client's hot path (``BookieConnection.send_add``): encoded byte for byte as the
codec would, answered through their callbacks with the status code the moment the answer is read, in any
order and mixed with other requests (whose answers are decoded as before, in the order they came), or refused
with a bare status (the header and EUA, no add answer); an add the bookie does not answer fails with
``BookieTimeout`` after its timeout, and the adds of a connection that closes fail with ``BookieUnavailable``
one loop iteration later. A v2 connection sends them through the codec and tells its callbacks the same way."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from bookie.client.connection import BookieConnection
from bookie.client.errors import BookieTimeout, BookieUnavailable
from bookie.protocol import client_codec, codec
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.silent_peer import connect, read
from tests.support.waiting import eventually

KEY = b"k" * 20
BODY = b"e" * 64


def add_answer(txn: int, ledger: int, entry: int, status: StatusCode = StatusCode.EOK) -> bytes:
    request = m.AddRequest(m.Wire.v3(txn), ledger, entry, KEY, BODY)
    return codec.encode_response(request, m.AddResponse(request.wire, status, ledger, entry))


def recorder(outcomes: list[tuple[int, int | BaseException]]) -> tuple[Any, ...]:
    """A callback tuple: ``record(entry, outcome)`` appends (entry, outcome)."""
    return (lambda entry, outcome: outcomes.append((entry, outcome)),)


async def test_adds_are_encoded_as_the_codec_encodes_them(silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    conn.stream.send_add(7, 3, KEY, BODY, (*recorder([]), 3), 1e9)
    sent = conn.stream.take_output()
    assert sent == client_codec.encode_request(m.AddRequest(m.Wire.v3(1), 7, 3, KEY, BODY))
    conn.close()


async def test_answers_reach_their_callbacks_in_any_order_among_other_answers(
        silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    outcomes: list[tuple[int, int | BaseException]] = []
    record = recorder(outcomes)
    for entry in range(500):
        conn.send_add(9, entry, KEY, BODY, (*record, entry), 30.0)
    read_future = conn.send(read(4), 30.0)  # txn 501
    answers = [add_answer(entry + 1, 9, entry) for entry in range(500)]
    random.Random(5).shuffle(answers)
    read_answer = codec.encode_response(m.ReadRequest(m.Wire.v3(501), 4, 0),
                                        m.ReadResponse(m.Wire.v3(501), StatusCode.ENOENTRY, 4, 0))
    stream = b"".join(answers[:250]) + read_answer + b"".join(answers[250:])
    for start in range(0, len(stream), 700):
        conn.data_received(stream[start:start + 700])
    assert sorted(entry for entry, _ in outcomes) == list(range(500)), "each answered once"
    assert {outcome for _, outcome in outcomes} == {int(StatusCode.EOK)}
    response = await read_future
    assert isinstance(response, m.ReadResponse) and response.status is StatusCode.ENOENTRY
    assert conn.in_flight == 0
    conn.close()


async def test_an_error_status_reaches_the_callback(silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    outcomes: list[tuple[int, int | BaseException]] = []
    conn.send_add(9, 0, KEY, BODY, (*recorder(outcomes), 0), 30.0)
    conn.data_received(add_answer(1, 9, 0, StatusCode.EFENCED))
    assert outcomes == [(0, int(StatusCode.EFENCED))]
    conn.close()


async def test_a_refusal_with_a_bare_status_reaches_the_callback(silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    outcomes: list[tuple[int, int | BaseException]] = []
    conn.send_add(9, 0, KEY, BODY, (*recorder(outcomes), 0), 30.0)
    # What a bookie answers an unauthenticated client: the request's header and EUA, no addResponse.
    conn.data_received(codec.encode_refusal(m.AddRequest(m.Wire.v3(1), 9, 0, KEY, BODY), StatusCode.EUA))
    assert outcomes == [(0, int(StatusCode.EUA))]
    assert conn.in_flight == 0
    conn.close()


async def test_an_unanswered_add_times_out(silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    outcomes: list[tuple[int, int | BaseException]] = []
    loop = asyncio.get_running_loop()
    sent_at = loop.time()
    conn.add_timeout_s = 0.3  # as the client configures a connection: every ledger add's timeout
    conn.send_add(9, 0, KEY, BODY, (*recorder(outcomes), 0), 0.3)

    async def failed() -> bool:
        return bool(outcomes)

    await eventually(failed, "the add failed")
    assert loop.time() - sent_at >= 0.3
    ((entry, error),) = outcomes
    assert entry == 0 and isinstance(error, BookieTimeout) and "did not answer within 0.3s" in str(error)
    assert conn.in_flight == 0
    conn.close()


async def test_the_adds_of_a_closed_connection_fail_on_the_next_iteration(silent_bookie: tuple[str, int]) -> None:
    conn = await connect(silent_bookie)
    outcomes: list[tuple[int, int | BaseException]] = []
    for entry in range(3):
        conn.send_add(9, entry, KEY, BODY, (*recorder(outcomes), entry), 30.0)
    conn.close()
    assert outcomes == [], "failed while the connection was closing"
    await asyncio.sleep(0)
    assert sorted(entry for entry, _ in outcomes) == [0, 1, 2]
    assert all(isinstance(outcome, BookieUnavailable) for _, outcome in outcomes)


async def test_a_v2_connection_sends_them_through_the_codec(silent_bookie: tuple[str, int]) -> None:
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_connection(
        lambda: BookieConnection(f"{silent_bookie[0]}:{silent_bookie[1]}", 2, 1 << 20), *silent_bookie)
    outcomes: list[tuple[int, int | BaseException]] = []
    conn.send_add(9, 0, KEY, BODY, (*recorder(outcomes), 0), 30.0)
    request = m.AddRequest(m.Wire.v2(), 9, 0, KEY, BODY)
    conn.data_received(codec.encode_response(request, m.AddResponse(request.wire, StatusCode.EOK, 9, 0)))
    assert outcomes == [(0, int(StatusCode.EOK))]
    conn.close()


def test_a_callback_must_be_a_tuple() -> None:
    from bookie.client._native import ClientStream

    with pytest.raises(TypeError, match="callback must be a tuple"):
        ClientStream(1 << 20).send_add(1, 0, KEY, BODY, print, 1.0)  # type: ignore[arg-type]
