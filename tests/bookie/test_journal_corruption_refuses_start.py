"""A bookie whose journal has a damaged group followed by valid ones (acknowledged entries after the damage)
refuses to start, naming the journal file and the offset, instead of replaying up to the damage and
silently dropping the acknowledged entries after it."""

from __future__ import annotations

import random

import pytest
from bookie.protocol.codes import StatusCode
from bookie.storage import journal_format as jf

from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection


async def test_damaged_journal_group_refuses_start(bookie_factory: BookieFactory) -> None:
    # No checkpoint during the test: every acknowledged entry is only in the journal when the bookie dies.
    bookie = bookie_factory(1, flushInterval=3_600_000, journalMaxGroupWaitMSec=0)[0]
    ledger = random.randrange(1, 2**40)
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(6):
            assert (await conn.add(ledger, i, b"a" * 1000)).status == StatusCode.EOK
    bookie.kill()

    (path,) = [p for p in (bookie.journal_dir / "current").glob("*.txn") if p.stat().st_size > jf.HEADER_SIZE]
    data = bytearray(path.read_bytes())
    damaged = [r for r in jf.iter_journal(data) if r.kind is jf.Kind.ENTRY][2]
    data[damaged.end - 10] ^= 0xFF
    path.write_bytes(bytes(data))

    with pytest.raises(RuntimeError, match="exited"):
        bookie.start(timeout=60)
    log = bookie.log_path.read_text()
    assert path.name in log and "followed by a valid one" in log, bookie.tail_log()
