"""Power cuts while ledgers are being fenced: a fence the bookie acknowledged holds after the cut, and after
every later one.

Each round writes two entries to each of eight new ledgers, then fences them one by one (a fencing read, as
recovery does) while another connection keeps adding to a ledger of its own, so the journal, checkpoints and
the ledger index are busy; the power goes before a random file operation. The bookie has two ledger
directories, so fences land in a directory that has cached entries and in one that has none. After each
restart, every ledger whose fencing read was answered EOK, in this round or any earlier one, refuses a
writer's add with EFENCED.
"""

from __future__ import annotations

import asyncio
import contextlib
import random

from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode

from tests.durability.powercut import PowerCutBookie
from tests.support.raw_client import MASTER_KEY, RawConnection, entry

CUTS = 20
TARGETS = 8
# A cut before one of the round's first 50 changing file operations mostly lands while the fences are being
# acknowledged (the load makes about 15 a fence); rounds where it came before the first or after the last
# acknowledged fence are not counted.
OPS_RANGE = (1, 50)


async def _load(bookie_id: str, ledger: int, rnd: random.Random) -> None:
    """Pipelined adds to ``ledger`` until the connection dies."""
    conn = await RawConnection.open(bookie_id)
    try:
        for first in range(0, 1_000_000, 10):
            batch = [m.AddRequest(conn.wire(), ledger, i, MASTER_KEY, entry(ledger, i, rnd.randbytes(4000)))
                     for i in range(first, first + 10)]
            await conn.pipeline(batch)
    except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
        return
    finally:
        with contextlib.suppress(Exception):
            await conn.close()


async def _fence_all(bookie_id: str, targets: list[int], fenced: set[int], rnd: random.Random) -> None:
    """Fence each target in turn; record those whose fencing read was answered EOK."""
    try:
        async with await RawConnection.open(bookie_id) as conn:
            for ledger in targets:
                response = await conn.read(ledger, 0, fence=True, master_key=MASTER_KEY)
                if response.status == StatusCode.EOK:
                    fenced.add(ledger)
                await asyncio.sleep(rnd.uniform(0, 0.03))
    except (ConnectionError, asyncio.IncompleteReadError, TimeoutError):
        return


async def test_acknowledged_fences_survive_power_cuts(powercut_bookie: PowerCutBookie) -> None:
    bookie = powercut_bookie
    bookie.configure(ledger_dirs=2)
    bookie.start()
    rnd = random.Random(1602)
    fenced: set[int] = set()
    cut_while_fencing = 0
    for _ in range(2 * CUTS):
        targets = [rnd.randrange(1, 2**40) for _ in range(TARGETS)]
        async with await RawConnection.open(bookie.bookie.bookie_id) as conn:
            for ledger in targets:
                for i in range(2):
                    assert (await conn.add(ledger, i, rnd.randbytes(100))).status == StatusCode.EOK
        before = len(fenced)
        bookie.arm(rnd.randint(*OPS_RANGE))
        await asyncio.gather(_load(bookie.bookie.bookie_id, rnd.randrange(1, 2**40), rnd),
                             _fence_all(bookie.bookie.bookie_id, targets, fenced, rnd))
        report = await bookie.cut()
        cut_while_fencing += bool(report["fired"]) and before < len(fenced) < before + TARGETS
        await bookie.restart()
        async with await RawConnection.open(bookie.bookie.bookie_id) as conn:
            for ledger in sorted(fenced):
                status = (await conn.add(ledger, 2, rnd.randbytes(10))).status
                assert status == StatusCode.EFENCED, f"ledger {ledger}: fence acknowledged, then {status}; {report}"
        if cut_while_fencing >= CUTS:
            break
    assert cut_while_fencing >= CUTS, f"only {cut_while_fencing} cuts landed between acknowledged fences"
