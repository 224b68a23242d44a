"""A storage engine, request processor and bookie state in the test's process, with the request hot path
(``bookie._requests.RequestStream``) in front of them as a connection would have it: for specifications of the
hot path and of what it must agree on with the general path. ZooKeeper registration is out of their scope (the
bookie's state records its transitions instead)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie._requests import RequestStream
from bookie.processor import RequestProcessor
from bookie.protocol import client_codec, codec
from bookie.protocol import messages as m
from bookie.state import DiskThresholds, StateManager
from bookie.storage.engine import StorageEngine

from tests.storage.conftest import engine_conf
from tests.support.raw_client import MASTER_KEY, entry
from tests.support.waiting import eventually


@dataclass
class HotPathBookie:
    engine: StorageEngine
    processor: RequestProcessor
    state: StateManager
    written: list[bytes] = field(default_factory=list)
    failed: list[tuple[int, ...]] = field(default_factory=list)

    def stream(self) -> RequestStream:
        """A connection's stream, authenticated (it may take adds), writing its answers to ``written``."""
        stream = RequestStream(1 << 20, self.engine.write_path, self.processor.adds, self.state,
                               self.processor.hot_adds, lambda *ids: self.failed.append(ids))
        stream.write = self.written.append
        stream.takes_adds = True
        return stream

    async def answers(self, count: int) -> list[m.AddResponse]:
        """The first ``count`` answers written (waits for the journal to make their adds durable)."""
        async def written() -> bool:
            return sum(len(frames(w)) for w in self.written) >= count

        await eventually(written, f"{count} answers written")
        answers = [client_codec.decode_response(f) for w in self.written for f in frames(w)]
        assert all(isinstance(a, m.AddResponse) for a in answers), answers
        return answers  # type: ignore[return-value]


async def _registered(read_only: bool) -> None:
    """ZooKeeper registration stands out of these specifications."""


async def hot_path_bookie(base: Path, **conf: Any) -> AsyncIterator[HotPathBookie]:
    """A started bookie under ``base`` (configuration overrides as BookKeeper keys), closed after the test."""
    config = engine_conf(base, journalMaxGroupWaitMSec=2, **conf)
    engine = StorageEngine(config)
    await engine.start()
    state = StateManager(DiskThresholds(0.95, 0.9, 0.95), _registered)
    processor = RequestProcessor(config, engine, state, lambda: (1 << 40, 1 << 41))
    yield HotPathBookie(engine, processor, state)
    await engine.close()


def frames(data: bytes) -> list[bytes]:
    """The frames (without their length prefix) of bytes written to a connection."""
    out, pos = [], 0
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        out.append(data[pos + 4:pos + 4 + n])
        pos += 4 + n
    return out


def add_frame(ledger: int, entry_id: int, *, version: int = 3, txn: int = 0, key: bytes = MASTER_KEY,
              **fields: Any) -> bytes:
    """An add request as a client sends it (a 100-byte entry unless ``body`` is given)."""
    wire = m.Wire.v3(txn or entry_id + 1) if version == 3 else m.Wire.v2()
    body = fields.pop("body", None) or entry(ledger, entry_id, b"p" * 100)
    return client_codec.encode_request(m.AddRequest(wire, ledger, entry_id, key, body, **fields))


def drain(stream: RequestStream) -> list[m.Request]:
    """What the hot path hands back to the general path, decoded."""
    handed = []
    while (frame := stream.next_frame()) is not None:
        handed.append(codec.decode_request(frame))
    return handed
