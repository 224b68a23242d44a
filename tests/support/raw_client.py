"""A bare connection speaking the bookie protocol, for tests that specify the server's answers.

No replication, retries or digests of its own: it sends exactly the request a test builds and returns the
decoded response, so tests can check status codes and edge cases byte by byte. Entries are packaged with
``bookie.protocol.entry`` like a real client would.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
from typing import Any

from bookie.protocol import client_codec
from bookie.protocol import messages as m
from bookie.protocol.entry import DigestType, digest_manager, generate_master_key, package_entry

PASSWORD = b"secret"
MASTER_KEY = generate_master_key(PASSWORD)
DIGEST = digest_manager(DigestType.CRC32C, PASSWORD)


def entry(ledger_id: int, entry_id: int, payload: bytes, lac: int | None = None) -> bytes:
    """An entry as a BookKeeper client packages it (CRC32C digest)."""
    last = entry_id - 1 if lac is None else lac
    return package_entry(DIGEST, ledger_id, entry_id, last, len(payload) * (entry_id + 1), payload)


class RawConnection:
    """One TCP connection; v3 requests carry increasing txn ids, v2 responses are matched in order."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, version: int) -> None:
        self.reader, self.writer, self.version = reader, writer, version
        self._txn = itertools.count(1)

    @classmethod
    async def open(cls, bookie_id: str, version: int = 3) -> RawConnection:
        host, port = bookie_id.rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        return cls(reader, writer, version)

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass

    async def __aenter__(self) -> RawConnection:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def wire(self, high_priority: bool = False) -> m.Wire:
        if self.version == 3:
            return m.Wire.v3(next(self._txn), high_priority)
        return m.Wire.v2(high_priority)

    async def send_raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def read_frame(self, within: float = 10) -> bytes:
        size = struct.unpack(">i", await asyncio.wait_for(self.reader.readexactly(4), within))[0]
        return await asyncio.wait_for(self.reader.readexactly(size), within)

    async def call(self, request: Any, within: float = 10) -> Any:
        await self.send_raw(client_codec.encode_request(request))
        return client_codec.decode_response(await self.read_frame(within), self.version)

    async def pipeline(self, requests: list[Any], within: float = 30) -> list[Any]:
        """Send all, then read as many responses (in arrival order)."""
        await self.send_raw(b"".join(client_codec.encode_request(r) for r in requests))
        return [client_codec.decode_response(await self.read_frame(within), self.version) for _ in requests]

    # --- shorthands
    async def add(self, ledger_id: int, entry_id: int, payload: bytes = b"x", *, key: bytes = MASTER_KEY,
                  recovery: bool = False, body: bytes | None = None) -> Any:
        data = body if body is not None else entry(ledger_id, entry_id, payload)
        return await self.call(m.AddRequest(self.wire(recovery), ledger_id, entry_id, key, data, recovery=recovery))

    async def read(self, ledger_id: int, entry_id: int, **kwargs: Any) -> Any:
        high = bool(kwargs.get("fence"))
        return await self.call(m.ReadRequest(self.wire(high), ledger_id, entry_id, **kwargs))
