"""Any byte stream through the request hot path, in any chunking, copied in or read straight into the stream's
buffer (as the bookie's connections receive): every frame is either handed back to Python
unchanged and in order, or it was an add the general path's decoder reads as a plain add of the ledger (right
master key, ids that agree) and storage now holds that entry; nothing crashes. Generated frames (adds, reads,
random bytes) and damaged copies of valid adds, against a real storage engine in this process."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from bookie._requests import RequestStream
from bookie.processor import RequestProcessor
from bookie.protocol import client_codec, codec
from bookie.protocol import messages as m
from bookie.protocol.framing import FrameReader, FrameTooLarge
from bookie.state import DiskThresholds, StateManager
from bookie.storage.engine import StorageEngine
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.storage.conftest import engine_conf
from tests.support.raw_client import MASTER_KEY, entry

LEDGER = 11


async def _registered(read_only: bool) -> None:
    """ZooKeeper registration stands out of this spec."""


@pytest_asyncio.fixture
async def processor(tmp_path: Path) -> AsyncIterator[RequestProcessor]:
    conf = engine_conf(tmp_path, journalMaxGroupWaitMSec=1)
    engine = StorageEngine(conf)
    await engine.start()
    await engine.add_entry(entry(LEDGER, 0, b"created"), MASTER_KEY)
    state = StateManager(DiskThresholds(0.95, 0.9, 0.95), _registered)
    yield RequestProcessor(conf, engine, state, lambda: (1 << 40, 1 << 41))
    await engine.close()


def _frames(seed: int) -> list[bytes]:
    rng = random.Random(seed)
    frames = []
    for i in range(60):
        entry_id = rng.randrange(1, 1 << 20)
        ledger = LEDGER if rng.random() < 0.8 else rng.randrange(1 << 30)
        wire = m.Wire.v3(rng.randrange(1 << 63)) if rng.random() < 0.7 else m.Wire(2, 0, rng.randrange(3))
        body = entry(ledger, entry_id, rng.randbytes(rng.randrange(200)))
        key = MASTER_KEY if rng.random() < 0.9 else rng.randbytes(20)
        add = client_codec.encode_request(m.AddRequest(wire, ledger, entry_id, key, body,
                                                       recovery=rng.random() < 0.05))[4:]
        roll = rng.random()
        if roll < 0.5:
            frames.append(add)
        elif roll < 0.75:  # a damaged add: flipped, cut or grown
            damaged = bytearray(add)
            for _ in range(rng.randint(1, 3)):
                pos = rng.randrange(len(damaged))
                if rng.random() < 0.7:
                    damaged[pos] ^= rng.randint(1, 255)
                else:
                    del damaged[pos:pos + rng.randint(1, 40)]
            frames.append(bytes(damaged))
        elif roll < 0.9:
            frames.append(client_codec.encode_request(m.ReadRequest(m.Wire.v3(i + 1), LEDGER, i))[4:])
        else:
            frames.append(rng.randbytes(rng.randrange(64)))
    return frames


def _takeable(frame: bytes) -> bool:
    """What the general path would store as a plain add of LEDGER (the hot path may take it, or not)."""
    try:
        r = codec.decode_request(frame)
    except codec.MalformedFrame:
        return False
    return (isinstance(r, m.AddRequest) and r.ledger_id == LEDGER and r.master_key == MASTER_KEY
            and not r.recovery and r.entry_id >= 0 and len(r.body) >= 32
            and int.from_bytes(r.body[:8], "big") == LEDGER
            and int.from_bytes(r.body[8:16], "big", signed=True) == r.entry_id
            and (r.wire.version == 2 or r.wire.protocol_version == 3))


def _deliver(stream: RequestStream, chunk: bytes, read_into: bool) -> None:
    """``chunk`` received: copied in (``feed``), or read into the stream's free space as a socket read is."""
    if not read_into:
        stream.feed(chunk)
        return
    while chunk:
        space = stream.receive_buffer()
        n = min(len(space), len(chunk))
        space[:n] = chunk[:n]
        stream.received(n)
        chunk = chunk[n:]


@pytest.mark.parametrize("read_into", [False, True], ids=["feed", "read into the buffer"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32), st.lists(st.integers(1, 700), min_size=1, max_size=20))
async def test_every_frame_is_taken_as_a_plain_add_or_handed_back_in_order(
        processor: RequestProcessor, read_into: bool, seed: int, cuts: list[int]) -> None:
    stream = RequestStream(1 << 20, processor.engine.write_path, processor.adds, processor.state,
                           processor.hot_adds, lambda *ids: None)
    stream.takes_adds = True
    stream.write = lambda data: None
    frames = _frames(seed)
    data = b"".join(len(f).to_bytes(4, "big") + f for f in frames)
    handed: list[bytes] = []
    pos = i = 0
    while pos < len(data):
        _deliver(stream, data[pos:pos + cuts[i % len(cuts)]], read_into)
        pos += cuts[i % len(cuts)]
        i += 1
        while (frame := stream.next_frame()) is not None:
            handed.append(frame)
    cache = processor.engine.dir_of(LEDGER).write_cache
    rest = iter(handed)
    expected_next = next(rest, None)
    for frame in frames:
        if frame == expected_next:
            expected_next = next(rest, None)
            continue
        assert _takeable(frame), "a frame neither handed back nor a plain add"
        r = codec.decode_request(frame)
        assert isinstance(r, m.AddRequest) and cache.get(LEDGER, r.entry_id) == bytes(r.body)
    assert expected_next is None, "frames handed back out of order, or not sent at all"
    assert len(handed) < len(frames), "the hot path took the plain adds"
    assert stream.buffered == 0 and not stream.has_frame


async def test_a_read_into_the_buffer_is_checked_as_it_arrives(processor: RequestProcessor) -> None:
    stream = RequestStream(1000, processor.engine.write_path, processor.adds, processor.state,
                           processor.hot_adds, lambda *ids: None)
    space = stream.receive_buffer()
    with pytest.raises(ValueError, match="free"):
        stream.received(len(space) + 1)
    space[:4] = (1001).to_bytes(4, "big")
    with pytest.raises(FrameTooLarge, match="exceeds the maximum of 1000"):
        stream.received(4)


def test_a_frame_length_over_the_maximum_is_refused_as_it_arrives() -> None:
    reader = FrameReader(1000)
    with pytest.raises(FrameTooLarge, match="exceeds the maximum of 1000"):
        reader.feed((1001).to_bytes(4, "big"))
    with pytest.raises(FrameTooLarge, match="negative frame length"):
        FrameReader(1000).feed(b"\xff\xff\xff\xff")
