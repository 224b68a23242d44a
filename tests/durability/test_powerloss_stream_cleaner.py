"""Power cuts while a stream is cleaned: the bookie loses power in the middle of a cleaner pass and a retention
run (both clients), and the stream keeps its contract.

Each round writes a keyed stream (``compact,delete``) in two parts: an old one whose ledgers closed longer
than ``retention_ms`` ago, and a new one that has not expired. A cleaner pass (map, rewrite into new ledgers,
swap, old ledgers deleted) and a retention run (expired head ledgers deleted) then run against the stream, in
either order, while the bookie holding all its ledgers is cut before a random file operation of its (half
the cuts drop every unsynced write, half keep a random subset of the dirty pages). The clients fail as their
bookie goes; the bookie is restarted, the dead clients' sessions closed, and cleaning and retention run again
until the stream is fully compacted. Then, for this round's stream and every earlier one:

- positions are strictly increasing: no record is read twice;
- retention removed nothing it should keep: the stream starts no later than the first unexpired ledger did
  before the run, and from there on the stream holds exactly the compaction of the records written there
  (the latest value of every key written there, and nothing else);
- before that point only records the compaction keeps remain (retention may have removed any of them).
"""

from __future__ import annotations

import asyncio
import random

from bookie.client import BookKeeper
from bookie.streams import Policies, Record, Streams
from bookie.streams.cleaner import Cleaner
from bookie.streams.compaction import model
from bookie.streams.policies import HOUR_MS
from bookie.streams.retention import Retention

from tests.durability.powercut import PowerCutBookie
from tests.streams.stream_support import Clock, clean_fully, visible

CUTS = 12
# Changing file operations of the bookie during one round's cleaner pass and retention run, uncut: about
# 10-20 (the rewrite's journal groups and fsyncs, the checkpoints meanwhile; retention and the swap are
# ZooKeeper's). A cut before one of the first 10 lands while the clients run.
OPS_RANGE = (1, 10)
NS = "pc"
POLICIES = Policies(roll_bytes=1500, ensemble=1, write_quorum=1, ack_quorum=1, cleanup_policy="compact,delete",
                    retention_ms=HOUR_MS, delete_when=";".join(f"{h:02d}" for h in range(24)), delete_pause_ms=0,
                    min_cleanable_ratio=0.0, delete_retention_ms=HOUR_MS)


class Round:
    """One round's stream: what was written, and where its unexpired part began before the run."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.written: list[Record] = []
        self.keep_from = 0


async def test_streams_keep_their_contract_through_power_cuts_under_the_cleaner(
        powercut_bookie: PowerCutBookie) -> None:
    bookie = powercut_bookie
    bookie.configure()
    bookie.start()
    rnd = random.Random(1607)
    clock = Clock()
    rounds: list[Round] = []
    cut_in_run = 0
    async with bookie.client() as bk:
        async with _streams(bookie, bk, clock) as streams:
            await streams.create_namespace(NS, POLICIES)
    for i in range(2 * CUTS):
        one = Round(f"s{i}")
        async with bookie.client() as bk, _streams(bookie, bk, clock) as streams:
            await _write_old_and_new(streams, one, clock, rnd)
        rounds.append(one)
        bookie.arm(rnd.randint(*OPS_RANGE))
        await _clean_and_retain(bookie, clock, one.name, retention_first=rnd.random() < 0.5)
        report = await bookie.cut(seed=rnd.randrange(2**32) if i % 2 else None)
        cut_in_run += bool(report["fired"])
        await bookie.restart()
        async with bookie.client() as bk, _streams(bookie, bk, clock) as streams:
            await _settle(streams, clock, one.name)
            for done in rounds:
                await _check(streams, done, report)
        if cut_in_run >= CUTS:
            break
    assert cut_in_run >= CUTS, f"only {cut_in_run} cuts landed while the cleaner or retention ran"
    async with bookie.client() as bk, _streams(bookie, bk, clock) as streams:
        truncated = [one.name for one in rounds if (await streams.metadata(NS, one.name)).start > 0]
    assert truncated, "retention deleted no expired ledger in any round: the test proved nothing of it"


def _streams(bookie: PowerCutBookie, bk: BookKeeper, clock: Clock) -> Streams:
    return Streams(bookie.zk_connect, ledgers_root=bookie.ledgers_root, streams_root=f"/streams-{bookie.zone}",
                   bk=bk, clock=clock, session_timeout_s=4)


async def _write_old_and_new(streams: Streams, one: Round, clock: Clock, rnd: random.Random) -> None:
    """Keyed records in two parts: the first closed two retention periods before the run, the second not
    expired; keys overlap, so the compaction drops old values of keys rewritten later."""
    await streams.create_stream(NS, one.name)
    for part, (count, keys) in enumerate(((120, 15), (120, 25))):
        if part:
            clock.advance(2 * HOUR_MS)
            one.keep_from = (await streams.metadata(NS, one.name)).next_position
        items = [(f"key-{rnd.randrange(keys)}".encode(), rnd.randbytes(rnd.randint(20, 60)), None)
                 for _ in range(count)]
        async with await streams.writer(NS, one.name) as writer:
            positions = await writer.append_many(items)
        one.written += [Record(p, k, v, clock.now) for p, (k, v, _) in zip(positions, items, strict=True)]


async def _clean_and_retain(bookie: PowerCutBookie, clock: Clock, name: str, retention_first: bool) -> None:
    """A cleaner pass and a retention run, each by a client of its own, until both end or the power goes;
    a client that fails because its bookie went is what this tests, so its error is dropped."""
    async with bookie.client() as bk:
        async with _streams(bookie, bk, clock) as streams:

            async def clean() -> None:
                await Cleaner(streams).clean(NS, name, now_ms=clock.now)

            async def retain() -> None:
                await Retention(streams).run_once(now_ms=clock.now, only=[(NS, name)])

            for step in ((retain, clean) if retention_first else (clean, retain)):
                try:
                    await asyncio.wait_for(step(), 120)
                except Exception:
                    if not bookie.fs.armed(bookie.zone)["fired"]:
                        raise  # not the cut: a real failure
                    return


async def _settle(streams: Streams, clock: Clock, name: str) -> None:
    """After the restart: the dead clients' leftovers deleted, the stream fully compacted, retention applied.
    The crashed cleaner's session may still be open (it closed its client, but the server may not have seen it
    yet): its outputs are deleted once it is gone, so wait for that."""
    for _ in range(200):
        cleaning = (await streams.metadata(NS, name)).cleaning
        if not set(cleaning) & await streams.store.live_cleaners():
            break
        await asyncio.sleep(0.1)
    cleaner = Cleaner(streams)
    await clean_fully(cleaner, NS, name, clock.now)
    await cleaner.clean(NS, name, now_ms=clock.now)  # deletes what the crashed pass left, if nothing to clean
    await Retention(streams).run_once(now_ms=clock.now, only=[(NS, name)])
    md = await streams.metadata(NS, name)
    assert md.cleaning == {} and md.pending_deletes == (), f"{name}: leftovers after settling: {md}"


async def _check(streams: Streams, one: Round, report: object) -> None:
    md = await streams.metadata(NS, one.name)
    assert md.start <= one.keep_from, \
        f"{one.name}: retention moved the start to {md.start}, past unexpired data at {one.keep_from}; {report}"
    read = await streams.reader(NS, one.name, md.start).read_all()
    positions = [r.position for r in read]
    assert positions == sorted(set(positions)), f"{one.name}: a record read twice; {report}"
    unexpired = [r for r in read if r.position >= one.keep_from]
    expected = model([r for r in one.written if r.position >= one.keep_from], 0)
    assert visible(unexpired) == visible(expected), \
        f"{one.name}: the unexpired part is not the compaction of what was written there; {report}"
    kept_anywhere = set(visible(model(one.written, 0)))
    stray = [v for v in visible([r for r in read if r.position < one.keep_from]) if v not in kept_anywhere]
    assert stray == [], f"{one.name}: records the compaction drops are still there: {stray[:5]}; {report}"
