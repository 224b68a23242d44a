"""A TCP peer that reads every request and never answers (a bookie stuck behind a full disk), and a raw
client connection to it, for the client's specifications of requests nobody answers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from bookie.client.connection import BookieConnection
from bookie.protocol import messages as m


@pytest.fixture
async def silent_bookie() -> AsyncIterator[tuple[str, int]]:
    async def swallow(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await reader.read(65536):
            pass
        writer.close()

    server = await asyncio.start_server(swallow, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    yield host, port
    server.close()
    await server.wait_closed()


async def connect(address: tuple[str, int]) -> BookieConnection:
    """A v3 connection to ``address``."""
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_connection(lambda: BookieConnection(f"{address[0]}:{address[1]}", 3, 1 << 20),
                                           *address)
    return conn


def read(ledger_id: int) -> Any:
    """The ``make`` argument of ``BookieConnection.send`` for a read of entry 0 of ``ledger_id``."""
    return lambda wire: m.ReadRequest(wire, ledger_id, 0)
