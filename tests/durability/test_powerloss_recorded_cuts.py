"""Power cuts that once lost acknowledged data or kept the bookie from starting, replayed one by one.

Each was found by the random cuts of the other power-loss tests and is kept here as the exact cut that showed
it, so the fix stays proven: the test fails on the code before it.
"""

from __future__ import annotations

import random

from bookie.storage import journal_format as jf

from tests.durability.powercut import PowerCutBookie, Written, check_ledgers, until, write_until_cut


async def test_cut_right_after_the_first_start_leaves_a_bookie_that_starts(powercut_bookie: PowerCutBookie) -> None:
    # The directories a new bookie creates (journal, ledgers, current/) and its cookie files (VERSION) were
    # created without an fsync of their parent directories: after a cut ZooKeeper had the bookie's cookie
    # but its directories had none, and the bookie refused to start (CookieMismatch), its data unreachable.
    bookie = powercut_bookie
    bookie.configure()
    bookie.start()
    written = Written()
    async with bookie.client() as bk:
        ledgers = await write_until_cut(bk, written, 1, random.Random(1), 20)
    assert ledgers, "nothing was written before the cut"
    await bookie.cut()
    await bookie.restart()
    async with bookie.client() as bk:
        await check_ledgers(bk, written, ledgers)


async def test_cut_after_the_journal_was_trimmed_keeps_checkpointed_entries(powercut_bookie: PowerCutBookie) -> None:
    # A checkpoint wrote entry logs and lastMark whose names were never made durable (no fsync of their
    # directory), then trimmed the journals before the mark, and the next journal file's creation made those
    # deletions durable. After the cut the mark was gone, the journal that held the entries too, and so were
    # the entry logs' names: a new entry log took the old one's id, and reads of checkpointed entries found
    # other entries where the index pointed (EIO).
    bookie = powercut_bookie
    bookie.configure(journalMaxBackups=0)
    bookie.start()
    first_journal = min(_journal_ids(bookie))
    written = Written()
    rnd = random.Random(2)
    async with bookie.client() as bk:
        checkpointed = await write_until_cut(bk, written, 2, rnd, 300)
    await until(lambda: first_journal not in _journal_ids(bookie), 60, "the first journal trimmed")
    # Past another roll: the new journal file's creation fsyncs the journal directory, trim included.
    async with bookie.client() as bk:
        later = await write_until_cut(bk, written, 2, rnd, 300)
    assert checkpointed and later, "nothing was written on one side of the trim"
    await bookie.cut()
    await bookie.restart()
    async with bookie.client() as bk:
        await check_ledgers(bk, written, checkpointed + later)


def _journal_ids(bookie: PowerCutBookie) -> list[int]:
    names = (p.name for p in (bookie.journal_dir / "current").iterdir())
    return [i for i in map(jf.parse_journal_file_name, names) if i is not None]
