"""Fencing: a fencing read stops the old writer; recovery adds still get through."""

from __future__ import annotations

import random

import pytest
from bookie.protocol.codes import StatusCode

from tests.support.bookies import BookieFactory, BookieSet
from tests.support.raw_client import MASTER_KEY, RawConnection


@pytest.mark.parametrize("version", [2, 3])
async def test_fenced_ledger_refuses_normal_adds_and_accepts_recovery_adds(bookies: BookieSet, version: int) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[0].bookie_id, version) as writer, \
            await RawConnection.open(bookies[0].bookie_id, version) as recoverer:
        for i in range(3):
            assert (await writer.add(ledger, i)).status == StatusCode.EOK
        fenced = await recoverer.read(ledger, 2, fence=True, master_key=MASTER_KEY)
        assert fenced.status == StatusCode.EOK
        assert (await writer.add(ledger, 3)).status == StatusCode.EFENCED
        assert (await recoverer.add(ledger, 3, recovery=True)).status == StatusCode.EOK


async def test_fencing_read_without_master_key_is_unauthorized(bookies: BookieSet) -> None:
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[1].bookie_id, 3) as conn:
        await conn.add(ledger, 0)
        response = await conn.read(ledger, 0, fence=True, master_key=None)
    assert response.status == StatusCode.EUA


async def test_fencing_an_unknown_ledger_fences_it_for_later_writers(bookies: BookieSet) -> None:
    """Recovery fences every bookie of the ensemble, even one that never got an entry."""
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookies[2].bookie_id, 3) as conn:
        response = await conn.read(ledger, 0, fence=True, master_key=MASTER_KEY)
        assert response.status in (StatusCode.ENOENTRY, StatusCode.ENOLEDGER)
        assert (await conn.add(ledger, 0)).status == StatusCode.EFENCED


async def test_fence_survives_a_restart(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1)
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(cluster[0].bookie_id, 3) as conn:
        await conn.add(ledger, 0)
        await conn.read(ledger, 0, fence=True, master_key=MASTER_KEY)
    cluster[0].kill()
    cluster[0].start()
    async with await RawConnection.open(cluster[0].bookie_id, 3) as conn:
        assert (await conn.add(ledger, 1)).status == StatusCode.EFENCED
        assert (await conn.read(ledger, 0)).status == StatusCode.EOK
