"""Power cuts inside checkpoints: no acknowledged entry is lost when a checkpoint is interrupted at any step.

A checkpoint appends the write cache to entry logs, fsyncs them, writes their locations to the index, syncs
the ledger indexes and only then moves the journal mark (``lastMark``) past the entries, after which the
journals before the mark are trimmed. Here the power goes before a random file operation *in the ledger
directories* (entry-log writes, fsyncs and rolls, RocksDB writes and syncs, ``lastMark`` and ``lastId``
replacements) while clients pipeline adds to three new ledgers and the write cache (1 MiB) fills several times
a round. After the restart every acknowledged entry of every round reads back byte-identical.
"""

from __future__ import annotations

import random

from tests.durability.powercut import PowerCutBookie, Written, check_ledgers, write_until_cut

CUTS = 20
# Checkpoint file operations of one round without a cut: about 80. A cut before a random one of the first 60
# lands inside a checkpoint while adds are in flight.
OPS_RANGE = (1, 60)
IN_LEDGER_DIRS = r"/ledgers\d+/"


async def test_acknowledged_entries_survive_power_cuts_inside_checkpoints(powercut_bookie: PowerCutBookie) -> None:
    bookie = powercut_bookie
    bookie.configure()
    bookie.start()
    rnd = random.Random(1603)
    written = Written()
    every_ledger: list[int] = []
    cut_in_checkpoint = 0
    for _ in range(2 * CUTS):
        bookie.arm(rnd.randint(*OPS_RANGE), match=IN_LEDGER_DIRS)
        async with bookie.client() as bk:
            ledgers = await write_until_cut(bk, written, 3, rnd, 300)
        report = await bookie.cut()
        cut_in_checkpoint += bool(report["fired"])
        await bookie.restart()
        every_ledger += ledgers
        async with bookie.client() as bk:
            await check_ledgers(bk, written, ledgers, report)
        if cut_in_checkpoint >= CUTS:
            break
    assert cut_in_checkpoint >= CUTS, f"only {cut_in_checkpoint} cuts landed inside checkpoints"
    async with bookie.client() as bk:
        await check_ledgers(bk, written, every_ledger)
