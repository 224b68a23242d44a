"""Streams run on the session's real bookies and ZooKeeper; every test gets its own streams root."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
from bookie.streams import Streams

from tests.streams.stream_support import Clock
from tests.support.bookies import BookieSet


@pytest.fixture
def streams_root() -> str:
    return f"/streams-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def streams(bookies: BookieSet, streams_root: str, clock: Clock) -> AsyncIterator[Streams]:
    async with Streams(bookies.zk_connect, ledgers_root=bookies.ledgers_root, streams_root=streams_root,
                       clock=clock) as s:
        yield s
