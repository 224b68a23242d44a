"""A bookie whose ZooKeeper session expires keeps its data and its clients: it starts a new session and registers
again (Apache BookKeeper's bookie does the same: its registration listener re-registers), writes through it go on,
and garbage collection caught by the expiry deletes nothing it should not.

The expiry is real and on ZooKeeper's side (``tests/support/faults.py``, ``SessionExpiry``: the session that holds
the bookie's registration is taken over with its id and password and closed), at seeded moments:

- writes: a writer appends to a 3/3/2 ledger on 4 bookies while one bookie of its ensemble has its session expired
  1 to 3 times, each once the writer has acknowledged a seeded number of entries; after each expiry the bookie must
  be registered as writable again by a new session, and the writer goes on without a failed append (an ensemble
  change per expiry at most). Both implementations; each round's ledger is closed by its writer, read back by a new
  client at the end, and the history checker judges every operation.
- garbage collection: one bookie (every read goes to it: a wrongly deleted ledger cannot be read around), ledgers at
  seeded ids spread over many ZooKeeper leaves (GC's listing takes one call per leaf; 600 ledgers in metadata only
  make it last), a seeded part of the written ones deleted, a forced GC (major compaction at threshold 1: every dead
  byte is reclaimable; the over-replicated scan every cycle) and the session expired a seeded delay after it started
  (in its listing, its later passes, or after it), while a writer creates more ledgers. The bookie never deletes
  more ledgers than were deleted in metadata; at the end every entry of every live ledger reads back identical
  (history checker), and after a GC with ZooKeeper undisturbed no record of a deleted ledger is left in any entry log
  but the active one. Our bookie only: its checks read our admin API (the active log, GC's counters), and each round
  would wait for Apache BookKeeper's bookie to register again (zkTimeout, see ``CONF``).

Soak runs raise the rounds with ``BOOKIE_FLEET_FAULT_ROUNDS`` (bench/fault_soak.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from bookie.client import BookKeeper, LedgerHandle
from bookie.client import errors as e
from bookie.storage import entrylog_format as ef
from bookie_fleet.zookeeper import ZooKeeperServer
from kazoo.client import KazooClient, KazooState

from tests.gc.gcutil import explain, gc_now, metrics, rest
from tests.support.faults import FaultSetupError, SessionExpiry, expire_session, zookeeper_session_password
from tests.support.history import History, check, report
from tests.support.java_bookies import BookieCluster
from tests.support.recorder import Recorder, recover_and_read_every_ledger
from tests.support.seeds import rounds

# zkTimeout: Apache BookKeeper's bookie retries a ZooKeeper operation that failed (its registration, made on the
# expired session) after zkRetryBackoffStartMs, which defaults to zkTimeout: 4 s instead of its 10 s default keeps
# its rounds short; our bookie gets the same session timeout.
CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",  # as deployed
                        "flushInterval": 1000, "gcWaitTime": 3_600_000, "zkTimeout": 4000}
REREGISTERED_WITHIN = 30.0  # s


# ------------------------------------------------------------------ the toolkit itself


async def test_an_expired_session_is_gone_on_zookeepers_side(zookeeper: ZooKeeperServer) -> None:
    """The victim sees its session expire (not a mere disconnection), its ephemeral znode is gone, and a session
    that is not alive is refused with the reason instead of passing for expired."""
    states: list[str] = []
    victim = KazooClient(hosts=zookeeper.connect_string, timeout=10)
    victim.add_listener(states.append)
    await asyncio.to_thread(victim.start, 10)
    try:
        session_id, password = victim.client_id
        assert zookeeper_session_password(session_id) == password, "ZooKeeper's password derivation"
        path = await asyncio.to_thread(victim.create, "/session-expiry-probe-", b"", ephemeral=True, sequence=True)
        await asyncio.to_thread(expire_session, zookeeper.connect_string, session_id)
        for _ in range(200):
            if KazooState.LOST in states and victim.connected:
                break
            await asyncio.sleep(0.05)
        assert KazooState.LOST in states, f"the victim saw {states}, not its session lost"
        assert victim.client_id[0] != session_id, "the victim goes on with a new session"
        assert await asyncio.to_thread(victim.exists, path) is None, "the expired session's ephemeral is gone"
        with pytest.raises(FaultSetupError, match="refused"):
            await asyncio.to_thread(expire_session, zookeeper.connect_string, session_id)
    finally:
        await asyncio.to_thread(victim.stop)
        victim.close()


# ------------------------------------------------------------------ scenario 1: expiry under write load

WRITE_ROUNDS = {"python": 10, "java": 4}
ENTRIES = (150, 400)  # per round, before the tail written after the last re-registration
EXPIRIES = (1, 3)  # per round
AFTER_LAST_EXPIRY = 30  # entries acknowledged after the bookie registered again for the last time
IN_FLIGHT = 8
RATE = 250  # entries per second at most: a steady load, and a history that stays readable back in seconds


@dataclass
class _Progress:
    acknowledged: int = 0
    failed: bool = False
    expiries_done: bool = False
    tail_from: int = 0  # the count of acknowledged entries when the bookie had registered again the last time
    unregistered_s: list[float] = field(default_factory=list)  # from each expiry to the registration back
    changed: asyncio.Event = field(default_factory=asyncio.Event)  # set by the writer after each batch


@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_writes_go_on_while_a_bookies_session_expires(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random) -> None:
    """10 rounds in CI on our bookie, 4 on Apache BookKeeper's: ours registers again within a few hundred
    milliseconds of an expiry, Apache BookKeeper's only after zkTimeout and up to a second more (its ZooKeeper
    client's reconnection delay, then its registration's retry backoff), so its rounds take 5 to 15 s each and 10
    of them would take the file past its time budget. Soak runs give both the same rounds."""
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 4, **CONF)
    history = History()
    changes = 0
    unregistered_s: list[float] = []
    with SessionExpiry(cluster.zk_connect, cluster.ledgers_root) as zk_faults:
        async with BookKeeper(cluster.client_config()) as bk:
            for number in range(rounds(WRITE_ROUNDS[bookie_kind])):
                changes += await _write_round(bk, cluster, zk_faults, history, seeded_rng, f"{bookie_kind}-{number}",
                                              unregistered_s)
    await recover_and_read_every_ledger(cluster.client_config(), history, IN_FLIGHT)
    violations = check(history)
    assert not violations, report(violations, history)
    print(f"{len(history)} operations, {len(unregistered_s)} expiries, {changes} ensemble change(s); registered again "
          f"{min(unregistered_s):.2f} to {max(unregistered_s):.2f} s after an expiry")


async def _write_round(bk: BookKeeper, cluster: BookieCluster, zk_faults: SessionExpiry, history: History,
                       rng: random.Random, name: str, unregistered_s: list[float]) -> int:
    """One ledger written while one bookie of its ensemble has its session expired at seeded moments; returns
    the number of ensemble changes the writer made."""
    total = rng.randint(*ENTRIES)
    moments = sorted(rng.sample(range(total // 10, total * 3 // 4), rng.randint(*EXPIRIES)))
    payloads = random.Random(rng.getrandbits(64))  # the writer's own: its pace must not shift the schedule
    handle = await bk.create_ledger(3, 3, 2)
    victim = cluster.by_id(rng.choice(sorted(handle.metadata.ensemble_at(0))))
    writer = Recorder(history, f"writer-{name}")
    progress = _Progress()
    expiring = asyncio.create_task(_expire_at(zk_faults, victim, moments, progress, name))
    try:
        await _write(writer, handle, payloads, total, progress, name)
    finally:
        if not expiring.done():
            expiring.cancel()
    await expiring  # its failure (no re-registration in time) is the round's
    unregistered_s += progress.unregistered_s
    assert not progress.failed, (f"{name}: an append failed after {progress.acknowledged} acknowledged entries; "
                                 f"{victim.bookie_id}'s log:\n{victim.tail_log()}\n" +
                                 "\n".join(str(op) for op in history.ops if not op.ok))
    assert await writer.close(handle), f"{name}: the writer could not close ledger {handle.ledger_id}"
    changes = len(handle.metadata.ensembles) - 1
    assert changes <= len(moments), f"{name}: {changes} ensemble changes for {len(moments)} expiries"
    assert victim.bookie_id in await bk.writable_bookies(), f"{name}: {victim.bookie_id} not writable again"
    return changes


async def _write(writer: Recorder, handle: LedgerHandle, payloads: random.Random, total: int, progress: _Progress,
                 name: str) -> None:
    """Append batches of ``IN_FLIGHT`` until ``total`` entries and the expiries are done, and
    ``AFTER_LAST_EXPIRY`` more were acknowledged since the bookie last registered again; ``RATE`` at most."""
    loop = asyncio.get_running_loop()
    next_batch = loop.time()
    while (progress.acknowledged < total or not progress.expiries_done
           or progress.acknowledged < progress.tail_from + AFTER_LAST_EXPIRY):
        batch = [f"{name} L{handle.ledger_id} {progress.acknowledged + i} ".encode() +
                 payloads.randbytes(payloads.randint(100, 4000)) for i in range(IN_FLIGHT)]
        results = await asyncio.gather(*(writer.append(handle, data) for data in batch))
        if any(r is None for r in results):
            progress.failed = True
            progress.changed.set()
            return
        progress.acknowledged += len(batch)
        progress.changed.set()
        next_batch += IN_FLIGHT / RATE
        await asyncio.sleep(max(0.0, next_batch - loop.time()))


async def _expire_at(zk_faults: SessionExpiry, victim: Any, moments: list[int], progress: _Progress,
                     name: str) -> None:
    try:
        for moment in moments:
            while progress.acknowledged < moment and not progress.failed:
                progress.changed.clear()
                await progress.changed.wait()
            if progress.failed:
                return
            expired = await asyncio.to_thread(zk_faults.expire, victim.bookie_id)
            started = time.monotonic()
            try:
                path, _ = await asyncio.to_thread(zk_faults.wait_registered, victim.bookie_id, expired,
                                                  REREGISTERED_WITHIN)
            except TimeoutError as exc:
                raise AssertionError(f"{name}: {exc}; log:\n{victim.tail_log()}") from None
            progress.unregistered_s.append(time.monotonic() - started)
            assert "/readonly/" not in path, f"{name}: {victim.bookie_id} came back read-only ({path})"
            progress.tail_from = progress.acknowledged
    finally:
        progress.expiries_done = True


# ------------------------------------------------------------------ scenario 2: expiry during garbage collection

GC_ROUNDS = 10
GC_CONF: dict[str, Any] = {
    **CONF,
    "logSizeLimit": 256 * 1024,  # a round's entries span several logs, shared by live and deleted ledgers
    "gcEntryLogDeletionPauseMs": 0, "compactionRateByEntries": 100000, "compactionReadRateByBytes": 0,
    "majorCompactionThreshold": 1.0,  # a forced major compaction takes every log holding a dead byte
    # The over-replicated scan every cycle: GC's other pass that reads ZooKeeper (every local ledger's metadata,
    # under-replication locks) and deletes ledgers on what it reads.
    "gcOverreplicatedLedgerWaitTime": 1,
}
NEW_LEDGERS = (4, 8)  # per round, before the GC
DURING_GC = (1, 3)  # ledgers created while the GC runs
ENTRIES_PER_LEDGER = (5, 30)
ID_SPACE = 20_000_000  # ledger ids drawn from it fall in up to 2,000 ZooKeeper leaves of 10,000 ids
# Ledgers that exist in metadata only (created, never written): GC's listing reads one leaf per 10,000 ids, so these
# make it last long enough for an expiry to land in it (this many calls take some hundreds of milliseconds).
METADATA_ONLY = 600
# s after the GC was triggered. Undisturbed, a cycle here lists the ledgers for 200 to 400 ms, scans the local ones for
# over-replication, then compacts; an expiry takes some tens of milliseconds to land: the seeded moments fall in the
# listing, in the later passes, or after the cycle.
EXPIRY_DELAY = (0.0, 0.45)


@pytest.mark.parametrize("bookie_kind", ["python"])
async def test_gc_caught_by_a_session_expiry_deletes_nothing_it_should_not(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, seeded_rng: random.Random) -> None:
    """10 rounds in CI, each a GC cycle with the session expired at a seeded moment; the output says where the
    expiries landed (in GC's ledger listing, later in the cycle, after it)."""
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 1, **GC_CONF)
    [bookie] = cluster.bookies
    history = History()
    state = _GcState(live=set(), deleted=set(), used_ids=set())
    landed = {"listing": 0, "later in the cycle": 0, "after the cycle": 0}
    with SessionExpiry(cluster.zk_connect, cluster.ledgers_root) as zk_faults:
        async with BookKeeper(cluster.client_config()) as bk:
            ids = [state.new_id(seeded_rng) for _ in range(METADATA_ONLY)]
            for start in range(0, len(ids), 50):
                await asyncio.gather(*(bk.create_ledger(1, 1, 1, password=b"gc", ledger_id=lid)
                                       for lid in ids[start:start + 50]))
            for number in range(rounds(GC_ROUNDS)):
                landed[await _gc_round(bk, bookie, zk_faults, history, state, seeded_rng,
                                       f"{bookie_kind}-gc-{number}")] += 1
            # Eventually, ZooKeeper undisturbed: every deleted ledger's bytes reclaimed (two cycles: the first
            # may meet logs whose readers are still open).
            for _ in range(2):
                await gc_now(bookie)
            await _no_deleted_record_left(bookie, state.deleted)
            reader = Recorder(history, "final-reader")
            for ledger in sorted(state.live):
                handle = await reader.recover(bk, ledger, b"gc")
                assert handle is not None, f"ledger {ledger} could not be opened at the end"
                await reader.read_back(handle, concurrency=IN_FLIGHT)
    violations = check(history)
    assert not violations, report(violations, history)
    deleted_by_gc = (await metrics(bookie))["bookie_DELETED_LEDGER_TOTAL"]
    assert deleted_by_gc <= len(state.deleted), f"the bookie deleted {deleted_by_gc} ledgers, {len(state.deleted)} " \
                                                "were deleted in metadata"
    print(f"{len(state.live)} live and {len(state.deleted)} deleted ledgers (and {METADATA_ONLY} in metadata only); "
          f"the expiry landed: {landed}")


@dataclass
class _GcState:
    live: set[int]
    deleted: set[int]
    used_ids: set[int]

    def new_id(self, rng: random.Random) -> int:
        while (lid := rng.randrange(ID_SPACE)) in self.used_ids:
            pass
        self.used_ids.add(lid)
        return lid


async def _gc_round(bk: BookKeeper, bookie: Any, zk_faults: SessionExpiry, history: History, state: _GcState,
                    rng: random.Random, name: str) -> str:
    """Ledgers written and some deleted, then a forced GC with the session expired a seeded delay after it was
    triggered; returns where the expiry landed: in GC's listing (aborted: metadata error), later in the cycle, or
    after it."""
    writer = Recorder(history, f"writer-{name}")
    for _ in range(rng.randint(*NEW_LEDGERS)):
        await _write_ledger(bk, writer, state, rng, name)
    doomed = rng.sample(sorted(state.live), round(len(state.live) * rng.uniform(0.1, 0.4)))
    for lid in doomed:
        await bk.delete_ledger(lid)
        state.live.discard(lid)
        state.deleted.add(lid)
    during = [(state.new_id(rng), random.Random(rng.getrandbits(64))) for _ in range(rng.randint(*DURING_GC))]
    delay = rng.uniform(*EXPIRY_DELAY)
    aborted_before = (await metrics(bookie))["bookie_GC_METADATA_ERROR_TOTAL"]
    collecting = asyncio.create_task(gc_now(bookie))
    creating = asyncio.create_task(_create_during_gc(bk, writer, state, during, name))
    await asyncio.sleep(delay)
    expired = await asyncio.to_thread(zk_faults.expire, bookie.bookie_id)
    caught = (await rest("GET", f"{bookie.http_url}/api/v1/bookie/gc"))["is_in_force_gc"] == "true"
    await asyncio.gather(collecting, creating)
    try:
        await asyncio.to_thread(zk_faults.wait_registered, bookie.bookie_id, expired, REREGISTERED_WITHIN)
    except TimeoutError as exc:
        raise AssertionError(f"{name}: {exc}; log:\n{bookie.tail_log()}") from None
    deleted_by_gc = (await metrics(bookie))["bookie_DELETED_LEDGER_TOTAL"]
    assert deleted_by_gc <= len(state.deleted), (f"{name}: the bookie deleted {deleted_by_gc} ledgers, "
                                                 f"{len(state.deleted)} were deleted in metadata")
    if (await metrics(bookie))["bookie_GC_METADATA_ERROR_TOTAL"] > aborted_before:
        return "listing"
    return "later in the cycle" if caught else "after the cycle"


async def _write_ledger(bk: BookKeeper, writer: Recorder, state: _GcState, rng: random.Random, name: str,
                        ledger_id: int | None = None) -> None:
    lid = state.new_id(rng) if ledger_id is None else ledger_id
    handle = await bk.create_ledger(1, 1, 1, password=b"gc", ledger_id=lid)
    for i in range(rng.randint(*ENTRIES_PER_LEDGER)):
        data = f"{name} L{lid} {i} ".encode() + rng.randbytes(rng.randint(1024, 16384))
        assert await writer.append(handle, data) == i, f"{name}: append {i} to ledger {lid} failed"
    assert await writer.close(handle)
    state.live.add(lid)


async def _create_during_gc(bk: BookKeeper, writer: Recorder, state: _GcState,
                            planned: list[tuple[int, random.Random]], name: str) -> None:
    """Ledgers created while GC runs (a bookie that took them for garbage would lose them). While the bookie's
    registration is gone (its session expired) it cannot be chosen for a new ledger: that creation is retried."""
    for lid, rng in planned:
        for _ in range(200):
            try:
                await _write_ledger(bk, writer, state, rng, name, ledger_id=lid)
                break
            except e.NotEnoughBookies:
                await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"{name}: ledger {lid} could not be created: the bookie stayed unregistered")


async def _no_deleted_record_left(bookie: Any, deleted: set[int]) -> None:
    """No entry of a deleted ledger in any entry log but the active one (checkpoints still append to it)."""
    [directory] = (await explain(bookie))["ledgerDirs"]
    active = int(directory["activeLogId"], 16) if directory["activeLogId"] else -1
    left: dict[int, int] = {}
    for path in sorted((bookie.ledger_dir / "current").iterdir()):
        log_id = ef.parse_log_file_name(path.name)
        if log_id is None or log_id == active:
            continue
        for record in ef.iter_records(path.read_bytes()):
            if record.ledger_id in deleted:
                left[log_id] = left.get(log_id, 0) + record.size
    assert not left, f"bytes of deleted ledgers still in entry logs (log id: bytes): {left}"
