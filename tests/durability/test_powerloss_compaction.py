"""Power cuts inside compactions, in both of BookKeeper's modes: no live entry is lost, and duplicates stay
within what the mode allows.

Each round writes a live and a dead ledger (closed, so nothing is left to replay or recover), deletes the dead
one, and forces a GC cycle whose compaction is cut before a random file operation in the ledger directory.
Every other cut keeps a random subset of the dirty pages instead of none (copies half written, logs with
holes). After each restart every live ledger of every round reads back byte-identical and no compaction file is
left over. At the end GC runs twice more (the second cycle deletes the logs the first one retired), and then:

- transactional (``useTransactionalCompaction=true``, our default: a ``.compacting`` copy committed by its
  ``.compacted`` name, linked in, indexed, the old log retired; start-up recovery finishes committed
  compactions and drops the others): every live entry is stored in exactly one entry log.
- into the current log (``false``, BookKeeper's default): copies are appended to the current entry log and
  fsynced batch by batch, ``compactionMaxOutstandingRequests`` at a time, before the index is pointed at them.
  A cut after a batch's fsync and before its index update leaves that batch's copies on disk, referenced by
  nothing; the index still names the old log, so the next compaction of it copies those entries again. The
  stray copies sit in a log whose ledger map counts them as live (their ledger is), so GC reclaims them only
  when that log is compacted or the ledger deleted: they may outlive the GC cycles that follow. What holds is
  the bound: each cut strands at most one batch, so the live entries' extra copies number at most
  ``batch x cuts that landed in a GC cycle``, and every live entry is still stored at least once.
"""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Iterator
from typing import Any

import aiohttp
from bookie.client import BookKeeper
from bookie.storage import entrylog_format as ef

from tests.durability.powercut import PowerCutBookie
from tests.gc.gcutil import COMPACTION_MODES, gc_now, past_a_checkpoint, read_all, rest, write_ledger

CUTS = 20
IN_LEDGER_DIRS = r"/ledgers\d+/"
# A forced GC cycle of one round makes about 40-70 changing file operations in the ledger directory
# (compactions, log deletions, the checkpoints meanwhile); a cut before one of the first 35 lands in it.
OPS_RANGE = (1, 35)
GC_CONF = {"flushInterval": 200, "gcWaitTime": 600000, "gcEntryLogDeletionPauseMs": 0,
           "compactionRateByEntries": 100000, "compactionReadRateByBytes": 0}
# Copies per fsync-then-index batch of the non-transactional mode: a live ledger's 60 entries take three
# batches, so cuts land between batches as well as inside one.
BATCH = 20


@COMPACTION_MODES
async def test_live_entries_survive_power_cuts_inside_compactions(powercut_bookie: PowerCutBookie,
                                                                  transactional: bool) -> None:
    bookie = powercut_bookie
    bookie.configure(**GC_CONF, useTransactionalCompaction=transactional, compactionMaxOutstandingRequests=BATCH)
    bookie.start()
    rnd = random.Random(1604 if transactional else 1605)
    live: dict[int, list[bytes]] = {}
    cut_in_gc = 0
    for round_ in range(2 * CUTS):
        async with bookie.client() as bk:
            await _write_live_and_dead(bk, bookie, live, seed=round_ * 10)
        bookie.arm(rnd.randint(*OPS_RANGE), match=IN_LEDGER_DIRS)
        gc_started = await _force_gc_unless_cut(bookie)
        if gc_started:
            await _gc_over_or_cut(bookie)
        report = await bookie.cut(seed=rnd.randrange(2**32) if round_ % 2 else None)
        cut_in_gc += bool(report["fired"]) and gc_started
        await bookie.restart()
        current = bookie.ledger_dirs[0] / "current"
        leftovers = [p.name for p in current.iterdir() if p.name.endswith((".compacting", ".compacted"))]
        assert leftovers == [], f"compaction files left after recovery: {leftovers}; {report}"
        async with bookie.client() as bk:
            for lid, payloads in live.items():
                assert await read_all(bk, lid) == payloads, f"live ledger {lid} lost or changed; {report}"
        if cut_in_gc >= CUTS:
            break
    assert cut_in_gc >= CUTS, f"only {cut_in_gc} cuts landed in a GC cycle"
    await gc_now(bookie.bookie)
    await gc_now(bookie.bookie)  # the second cycle deletes the logs the first one retired
    copies = _stored_copies(bookie)
    for lid, payloads in live.items():
        for eid in range(len(payloads)):
            assert copies[(lid, eid)] >= 1, f"ledger {lid} entry {eid} is in no entry log"
    extra = {key: n - 1 for key, n in copies.items() if key[0] in live and n > 1}
    if transactional:
        assert extra == {}, f"live entries stored more than once: {_sample(extra)}"
    else:
        assert sum(extra.values()) <= BATCH * cut_in_gc, \
            f"{sum(extra.values())} extra copies after {cut_in_gc} cuts: more than one batch each; {_sample(extra)}"


def _sample(extra: dict[Any, int]) -> dict[Any, int]:
    return dict(list(extra.items())[:10])


async def _write_live_and_dead(bk: BookKeeper, bookie: PowerCutBookie, live: dict[int, list[bytes]],
                               seed: int) -> None:
    """A live and a dead ledger one after the other, so they share entry logs; the dead one deleted. Returns once
    the bookie has checkpointed them: nothing left to replay, so a replay adds no copies."""
    lid, payloads = await write_ledger(bk, 60, 2048, seed)
    live[lid] = payloads
    gone, _ = await write_ledger(bk, 110, 2048, seed + 1)
    await bk.delete_ledger(gone)
    await past_a_checkpoint(bookie.bookie)


async def _force_gc_unless_cut(bookie: PowerCutBookie, within: float = 10) -> bool:
    """Ask for a forced GC cycle; False when the power went before the bookie took the request. A checkpoint
    (every flushInterval, even when idle: it rewrites lastMark) also makes file operations in the ledger
    directory, and one may come between arming the cut and the request: that cut did not land in a GC cycle."""
    try:
        await rest("PUT", f"{bookie.bookie.http_url}/api/v1/bookie/gc", {"forceMajor": True, "forceMinor": True})
    except aiohttp.ClientError:
        deadline = asyncio.get_running_loop().time() + within
        while bookie.bookie.running:  # a refusal is only a power cut if the bookie is dying
            assert asyncio.get_running_loop().time() < deadline, "the bookie refused a GC request and still runs"
            await asyncio.sleep(0.05)
        return False
    return True


async def _gc_over_or_cut(bookie: PowerCutBookie, within: float = 60) -> None:
    """Until the forced GC cycle is over, or the power went (the bookie is dead)."""
    url = f"{bookie.bookie.http_url}/api/v1/bookie/gc"
    deadline = asyncio.get_running_loop().time() + within
    while bookie.bookie.running:
        try:
            if (await rest("GET", url))["is_in_force_gc"] != "true":
                return
        except aiohttp.ClientError:
            continue  # the bookie is dying: the loop condition sees it
        assert asyncio.get_running_loop().time() < deadline, "the forced GC cycle did not end"
        await asyncio.sleep(0.05)


def _stored_copies(bookie: PowerCutBookie) -> Counter[tuple[int, int]]:
    """(ledger, entry) -> how many entry logs hold a record of it."""
    found: Counter[tuple[int, int]] = Counter()
    current = bookie.ledger_dirs[0] / "current"
    for path in current.iterdir():
        if ef.parse_log_file_name(path.name) is not None:
            found.update((rec.ledger_id, rec.entry_id) for rec in _records(path.read_bytes()))
    return found


def _records(data: bytes) -> Iterator[ef.Record]:
    """The records of a log up to the first that does not parse: a log the power cut left unfinalized may end
    in pages of records that were never made durable, some reached the disk and some not."""
    try:
        yield from ef.iter_records(data)
    except ef.CorruptRecord:
        return
