"""The request hot path (``bookie._requests.RequestStream``) takes an add straight to storage only when the
general path would have stored it the same way: the ledger is known here with the same master key, not fenced,
the bookie writable, the connection authenticated, the ids valid, limits not reached. An add that finds its
write cache full is held, with the adds behind it, until a checkpoint swaps the caches or the throttle time has
passed. Every other frame is handed back unchanged and in the order it arrived; the adds it takes are answered
once durable, with the bytes the general path writes, the answers of one journal group in one write.

A real storage engine and request processor in this process (tests/support/request_stream.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from bookie._requests import RequestStream
from bookie.processor import RequestProcessor
from bookie.protocol import client_codec, codec
from bookie.protocol import messages as m

from tests.support.raw_client import MASTER_KEY, entry
from tests.support.request_stream import HotPathBookie, add_frame, drain, frames, hot_path_bookie
from tests.support.waiting import eventually

LEDGER = 7


@pytest_asyncio.fixture
async def bookie(tmp_path: Path) -> AsyncIterator[HotPathBookie]:
    async for started in hot_path_bookie(tmp_path):
        yield started


async def _create_ledger(bookie: HotPathBookie) -> None:
    """The first add of a ledger creates it on the general path (and journals its master key)."""
    await bookie.engine.add_entry(entry(LEDGER, 0, b"first"), MASTER_KEY)


def _added_ids(requests: list[m.Request]) -> list[int]:
    """The entry ids of the adds among ``requests``."""
    return [r.entry_id for r in requests if isinstance(r, m.AddRequest)]


async def test_adds_of_a_known_ledger_are_taken_and_answered_as_the_general_path_would(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    stream = bookie.stream()
    stream.feed(b"".join(add_frame(LEDGER, i) for i in range(1, 201)))
    assert drain(stream) == [] and stream.pending == 200
    answers = await bookie.answers(200)
    assert sorted(r.entry_id for r in answers) == list(range(1, 201))
    expected = {codec.encode_add_ok(m.AddRequest(m.Wire.v3(i + 1), LEDGER, i, MASTER_KEY, b"")) for i in range(1, 201)}
    assert {len(f).to_bytes(4, "big") + f for w in bookie.written for f in frames(w)} == expected
    assert len(bookie.written) < 200, "the answers of a journal group leave in one write"
    assert await bookie.engine.read_entry(LEDGER, 200) == entry(LEDGER, 200, b"p" * 100)
    assert bookie.engine.last_add_confirmed(LEDGER) == 199 and stream.pending == 0
    assert bookie.processor.adds.count == 0


async def test_v2_adds_are_taken_too(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    stream = bookie.stream()
    stream.feed(b"".join(add_frame(LEDGER, i, version=2) for i in range(1, 11)))
    assert drain(stream) == []
    answers = await bookie.answers(10)
    assert {(r.status, r.entry_id) for r in answers} == {(m.StatusCode.EOK, i) for i in range(1, 11)}


async def test_the_first_add_of_a_ledger_goes_to_the_general_path(bookie: HotPathBookie) -> None:
    stream = bookie.stream()
    stream.feed(add_frame(LEDGER, 0))
    (handed,) = drain(stream)
    assert isinstance(handed, m.AddRequest) and handed.entry_id == 0


@pytest.mark.parametrize("change", ["fenced", "other key", "recovery", "header names another entry", "read-only",
                                    "unauthenticated", "closing"])
async def test_adds_the_general_path_must_decide_are_handed_back(bookie: HotPathBookie, change: str) -> None:
    await _create_ledger(bookie)
    stream = bookie.stream()
    fields: dict[str, Any] = {}
    if change == "fenced":
        await bookie.engine.fence(LEDGER, MASTER_KEY)
    elif change == "other key":
        fields["key"] = b"k" * 20
    elif change == "recovery":
        fields["recovery"] = True
    elif change == "header names another entry":
        fields["body"] = entry(LEDGER, 99, b"p")
    elif change == "read-only":
        await bookie.state.set_manual(True)
    elif change == "unauthenticated":
        stream.takes_adds = False
    elif change == "closing":
        bookie.engine.write_path.closed = True
    stream.feed(add_frame(LEDGER, 1, **fields))
    (handed,) = drain(stream)
    assert isinstance(handed, m.AddRequest) and handed.entry_id == 1
    assert stream.pending == 0 and bookie.engine.dir_of(LEDGER).write_cache.get(LEDGER, 1) is None


def _fill_cache(bookie: HotPathBookie) -> None:
    """The ledger's write cache left with no room for another add (filled directly: no checkpoint starts)."""
    cache = bookie.engine.dir_of(LEDGER).write_cache
    cache.put(LEDGER + 1, 0, b"f" * (cache.max_bytes - cache.size))


async def test_an_add_finding_the_write_cache_full_is_held_until_the_caches_swap(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    _fill_cache(bookie)
    stream = bookie.stream()
    read = client_codec.encode_request(m.ReadRequest(m.Wire.v3(500), LEDGER, 0))
    stream.feed(add_frame(LEDGER, 1) + read + add_frame(LEDGER, 2))
    (handed,) = drain(stream)
    assert isinstance(handed, m.ReadRequest), "a read behind the held add goes on"
    assert stream.held == 2 and stream.pending == 0, "the add behind the held one waits behind it"
    assert bookie.processor.adds.count == 2, "held adds count as adds in progress"
    assert stream.retry_held() is None and stream.held == 2, "no room yet"
    await bookie.engine.checkpoint()
    assert stream.retry_held() is None and stream.held == 0 and stream.pending == 2
    answers = await bookie.answers(2)
    assert [(a.status, a.entry_id) for a in answers] == [(m.StatusCode.EOK, 1), (m.StatusCode.EOK, 2)]
    assert bookie.processor.adds.count == 0
    assert await bookie.engine.read_entry(LEDGER, 2) == entry(LEDGER, 2, b"p" * 100)


async def test_a_held_add_is_refused_as_throttled_after_the_throttle_time(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    _fill_cache(bookie)
    stream = RequestStream(1 << 20, bookie.engine.write_path, bookie.processor.adds, bookie.state,
                           bookie.processor.hot_adds, lambda *ids: bookie.failed.append(ids), 0)
    stream.write = bookie.written.append
    stream.takes_adds = True
    stream.feed(add_frame(LEDGER, 1, txn=77))
    assert drain(stream) == [] and stream.held == 1
    assert stream.retry_held() is None
    assert bookie.failed == [(3, 3, 77, LEDGER, 1, 1)], "answered as throttled (version, txn, ids, throttled)"
    assert stream.held == 0 and bookie.processor.adds.count == 0
    assert bookie.engine.dir_of(LEDGER).write_cache.get(LEDGER, 1) is None


async def test_a_held_add_the_general_path_must_now_decide_is_handed_back(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    _fill_cache(bookie)
    stream = bookie.stream()
    stream.feed(add_frame(LEDGER, 1))
    assert drain(stream) == [] and stream.held == 1
    await bookie.engine.fence(LEDGER, MASTER_KEY)
    frame = stream.retry_held()
    assert frame is not None and _added_ids([codec.decode_request(frame)]) == [1]
    assert stream.held == 0 and bookie.processor.adds.count == 0, "the general path counts it from here"


async def test_a_closed_connections_held_adds_are_dropped(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    _fill_cache(bookie)
    stream = bookie.stream()
    stream.feed(b"".join(add_frame(LEDGER, i) for i in range(1, 4)))
    assert drain(stream) == [] and stream.held == 3
    stream.drop_held()
    assert stream.held == 0 and bookie.processor.adds.count == 0


async def test_other_requests_are_handed_back_in_the_order_they_came(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    stream = bookie.stream()
    read = client_codec.encode_request(m.ReadRequest(m.Wire.v3(500), LEDGER, 0))
    stream.feed(add_frame(LEDGER, 1) + read + add_frame(LEDGER, 2))
    first = stream.next_frame()
    assert first is not None and isinstance(codec.decode_request(first), m.ReadRequest)
    assert stream.pending == 1, "the add before the read was taken before the read was handed back"
    assert stream.next_frame() is None and stream.pending == 2


async def test_the_in_progress_limit_pauses_and_the_pending_limit_refuses(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    adds = bookie.processor.adds
    adds.in_progress_limit = 5
    stream = bookie.stream()
    stream.feed(b"".join(add_frame(LEDGER, i) for i in range(1, 11)))
    assert stream.next_frame() is None and stream.has_frame and stream.pending == 5, "paused at the limit"
    adds.in_progress_limit, adds.pending_limit = 0, 5
    assert 6 in _added_ids(drain(stream)), "over the pending limit: for the processor to refuse and count"


async def test_an_answer_for_a_closed_connection_is_dropped_and_its_slot_freed(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    stream = bookie.stream()
    stream.feed(add_frame(LEDGER, 1))
    assert drain(stream) == []
    stream.write = None

    async def durable() -> bool:
        return stream.pending == 0

    await eventually(durable, "the add durable")
    assert bookie.written == [] and bookie.processor.adds.count == 0
    assert bookie.engine.last_add_confirmed(LEDGER) == 0, "the add itself is durable"


async def test_the_hot_paths_adds_are_counted_in_the_add_statistics(bookie: HotPathBookie) -> None:
    await _create_ledger(bookie)
    stream = bookie.stream()
    stream.feed(b"".join(add_frame(LEDGER, i) for i in range(1, 51)))
    drain(stream)
    await bookie.answers(50)
    before = bookie.processor.stats.add.ok.count
    bookie.processor.drain_stats()
    assert bookie.processor.stats.add.ok.count == before + 50
    assert bookie.processor.stats.write_bytes == 50 * len(entry(LEDGER, 1, b"p" * 100))


async def test_a_live_stream_refuses_to_be_initialized_again(bookie: HotPathBookie) -> None:
    # A second __init__ would swap the stream's reader, counters and statistics under the adds it has in flight.
    await _create_ledger(bookie)
    stream = bookie.stream()
    stream.feed(b"".join(add_frame(LEDGER, i) for i in range(1, 51)))
    assert drain(stream) == [] and stream.pending == 50
    other = RequestProcessor(bookie.processor.conf, bookie.engine, bookie.state, lambda: (1 << 40, 1 << 41))
    with pytest.raises(RuntimeError, match="already initialized"):
        RequestStream.__init__(stream, 1 << 20, bookie.engine.write_path, other.adds, bookie.state,
                               other.hot_adds, lambda *ids: None)
    assert sorted(r.entry_id for r in await bookie.answers(50)) == list(range(1, 51))
    assert stream.pending == 0 and bookie.processor.adds.count == 0


async def test_the_frame_buffer_cannot_be_fed_while_next_frame_reads_it(bookie: HotPathBookie) -> None:
    # next_frame holds pointers into the reader's buffer while it calls into Python (here the state's read_only):
    # a feed from there could move the buffer under them, so it is refused, and the frames stay as they were.
    await _create_ledger(bookie)
    fed: list[BaseException] = []

    class FeedingState:
        @property
        def read_only(self) -> bool:
            try:
                stream.feed(b"\0" * (1 << 20))  # enough to make the reader grow its buffer
            except RuntimeError as exc:
                fed.append(exc)
            return False

    stream = RequestStream(1 << 20, bookie.engine.write_path, bookie.processor.adds, FeedingState(),
                           bookie.processor.hot_adds, lambda *ids: None)
    stream.write = bookie.written.append
    stream.takes_adds = True
    stream.feed(b"".join(add_frame(LEDGER, i) for i in range(1, 11)))
    assert drain(stream) == [] and stream.pending == 10
    assert len(fed) == 1 and "cannot be written while next_frame reads it" in str(fed[0])
    assert sorted(r.entry_id for r in await bookie.answers(10)) == list(range(1, 11))
