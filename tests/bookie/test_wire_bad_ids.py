"""Ids are validated on the wire: negative ledger ids, added entry ids below 0 (the journal's negative
markers such as a fence must never arrive as an entry), an entry header naming other ids than the request,
and read entry ids below -1 are refused with EBADREQ; the ledger they name is left as it was."""

from __future__ import annotations

import random

import pytest
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieSet
from tests.support.raw_client import MASTER_KEY, RawConnection, entry

FENCE_MARKER = -0x2000


@pytest.mark.parametrize("version", [2, 3])
async def test_bad_add_ids_are_refused(bookies: BookieSet, version: int) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[0].bookie_id, version) as conn:
        assert (await conn.add(ledger, FENCE_MARKER)).status == StatusCode.EBADREQ
        assert (await conn.add(-ledger, 0)).status == StatusCode.EBADREQ
        assert (await conn.add(ledger, 0)).status == StatusCode.EOK, "the ledger is not fenced by the marker"
    async with await RawConnection.open(bookies[0].bookie_id, version) as conn:
        assert (await conn.read(ledger, -5)).status == StatusCode.EBADREQ
        assert (await conn.read(-ledger, 0)).status == StatusCode.EBADREQ
        assert (await conn.read(ledger, 0)).status == StatusCode.EOK


async def test_entry_header_must_name_the_requested_ids(bookies: BookieSet) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[0].bookie_id, 3) as conn:
        other = entry(ledger + 1, 0, b"x")
        answer = await conn.call(m.AddRequest(conn.wire(), ledger, 0, MASTER_KEY, other))
        assert answer.status == StatusCode.EBADREQ
        assert (await conn.read(ledger + 1, 0)).status in (StatusCode.ENOLEDGER, StatusCode.ENOENTRY)
