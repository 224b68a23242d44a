"""Power cuts under write load: every acknowledged entry is readable after the restart, by our client and by
Apache BookKeeper's.

Each cut comes before a random file operation of the bookie (journal appends and fsyncs, journal rolls,
checkpoints, entry-log rolls, index writes) while clients pipeline adds to three new ledgers; everything the
bookie had not made durable is then dropped, as a power cut drops the page cache. After the restart each of
those ledgers is recovered (fenced and closed) and read whole: no acknowledged entry may be missing or
different, and the ledger may not end before its last acknowledged entry. At the end every ledger of every
round is read again, by both clients: later cuts must not have damaged earlier data.

The test runs twice: once with cuts that drop every unsynced write, once with cuts that keep a random subset of
the dirty 4 KiB pages (a disk that wrote dirty pages back in any order before the power went: torn journal
groups, entry logs and index files with holes or stray later pages). Each such cut's seed is in the failure
message, to replay it.
"""

from __future__ import annotations

import random

import pytest

from tests.durability.powercut import (
    PowerCutBookie,
    Written,
    check_ledgers,
    check_with_java,
    write_until_cut,
)

CUTS = 20
# Changing file operations of one round's workload without a cut: about 250 (3 ledgers x 300 adds). A cut
# before a random one of the first 200 lands while adds are in flight.
OPS_RANGE = (1, 200)


@pytest.mark.parametrize("pages", ["all-lost", "random-subset-kept"])
async def test_acknowledged_adds_survive_power_cuts(powercut_bookie: PowerCutBookie, pages: str) -> None:
    bookie = powercut_bookie
    bookie.configure()
    bookie.start()
    rnd = random.Random(1601 if pages == "all-lost" else 1606)
    written = Written()
    every_ledger: list[int] = []
    cut_during_writes = 0
    for _ in range(2 * CUTS):
        bookie.arm(rnd.randint(*OPS_RANGE))
        async with bookie.client() as bk:
            ledgers = await write_until_cut(bk, written, 3, rnd, 300)
        report = await bookie.cut(seed=rnd.randrange(2**32) if pages == "random-subset-kept" else None)
        cut_during_writes += bool(report["fired"])
        await bookie.restart()
        async with bookie.client() as bk:
            await check_ledgers(bk, written, ledgers, report)
        every_ledger += ledgers
        if cut_during_writes >= CUTS:
            break
    assert cut_during_writes >= CUTS, f"only {cut_during_writes} cuts landed while adds were in flight"
    assert sum(map(len, written.acked.values())) > CUTS * 10, "the rounds acknowledged too little to prove much"
    if pages == "random-subset-kept":
        tore = sum(1 for cut in bookie.cuts if cut["pages_kept"] and cut["bytes_lost"])
        assert tore >= CUTS // 2, f"only {tore} cuts kept some dirty pages and lost others"
    async with bookie.client() as bk:
        await check_ledgers(bk, written, every_ledger)
    await check_with_java(bookie, written, every_ledger)
