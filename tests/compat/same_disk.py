"""One bookie's disk, served in turn by Apache BookKeeper 4.17 and by ours: the helpers of the
``test_compat_switch_*`` tests.

``SameDisk`` plans both processes on ONE data directory (``journal/`` and ``ledgers/``), one address and one
bookie port, so both present the same bookie id and the same cookie; only one runs at a time. ``Ledgers``
remembers every acknowledged entry by ledger, so each step can check that the disk still serves all of them,
byte for byte, whichever implementation wrote them.
"""

from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie.client import BookKeeper
from bookie.storage import entrylog_format as ef
from bookie_fleet.java_bookies import JavaBookie
from bookie_fleet.local_bookies import LocalBookie
from bookie_fleet.processes import BookieProcess, free_port

from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.java_bookies import BookieCluster
from tests.support.java_client import run_harness
from tests.support.rest import call

PASSWORD = b"switch"
# Small entry logs so a few hundred entries fill several (GC and compaction have whole logs to work on); GC
# only when a test forces it; logs with less than 80% live data compacted by a forced major compaction.
# ledgerStorageClass as deployments run Apache BookKeeper (its default is still the sorted ledger storage); ours
# takes that key as it is.
SHARED: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
                          "logSizeLimit": 128 * 1024, "gcWaitTime": 3_600_000, "majorCompactionThreshold": 0.8,
                          "minorCompactionThreshold": 0.2, "journalSyncData": False}
JAVA: dict[str, Any] = {"compactionRateByEntries": 100_000, **SHARED}
OURS: dict[str, Any] = {"zkTimeout": 6000, "gcEntryLogDeletionPauseMs": 0, "compactionRateByEntries": 100_000,
                        "compactionReadRateByBytes": 0, **SHARED}


@dataclass
class SameDisk:
    """Both implementations of one bookie, planned on one directory, address and port."""

    java: JavaBookie
    ours: LocalBookie

    @classmethod
    def plan(cls, data_dir: Path, cluster: BookieCluster, address: str, **overrides: Any) -> SameDisk:
        port, http_port = free_port("0.0.0.0"), free_port("0.0.0.0")
        java = JavaBookie(address=address, port=port, data_dir=data_dir, zk_connect=cluster.zk_connect,
                          ledgers_root=cluster.ledgers_root, overrides={**JAVA, **overrides}, http_port=http_port)
        ours = LocalBookie(address=address, port=port, http_port=http_port, data_dir=data_dir,
                           zk_connect=cluster.zk_connect, ledgers_root=cluster.ledgers_root,
                           overrides={**OURS, **overrides}, admin_token=TEST_ADMIN_TOKEN)
        assert java.bookie_id == ours.bookie_id
        return cls(java, ours)

    @property
    def current(self) -> Path:
        return self.ours.ledger_dir / "current"

    def cookies(self) -> dict[str, bytes]:
        """The ``VERSION`` file of each directory: a switch keeps the cookie (and its instance id) as it was."""
        return {d.name: (d / "current" / "VERSION").read_bytes() for d in (self.ours.journal_dir, self.ours.ledger_dir)}

    def entry_logs(self) -> set[int]:
        return {log_id for p in self.current.iterdir() if (log_id := ef.parse_log_file_name(p.name)) is not None}


async def start(bookie: BookieProcess, cluster: BookieCluster) -> None:
    await asyncio.to_thread(bookie.start)
    cluster.bookies = [bookie]


@dataclass
class Ledgers:
    """Every acknowledged entry of the test, by ledger; ``deleted``: ledgers the test deleted since."""

    entries: dict[int, list[bytes]] = field(default_factory=dict)
    deleted: set[int] = field(default_factory=set)
    rng: random.Random = field(default_factory=lambda: random.Random(47))

    @property
    def live(self) -> dict[int, list[bytes]]:
        return {lid: e for lid, e in self.entries.items() if lid not in self.deleted}

    async def write(self, bk: BookKeeper, ledgers: int, entries: int, size: int = 1024) -> list[int]:
        """``ledgers`` closed ledgers written side by side, so their entries share entry logs."""
        async def one() -> int:
            handle = await bk.create_ledger(1, 1, 1, password=PASSWORD)
            payloads = [self.rng.randbytes(size) for _ in range(entries)]
            await asyncio.gather(*(handle.append(p) for p in payloads))
            await handle.close()
            self.entries[handle.ledger_id] = payloads
            return handle.ledger_id

        return list(await asyncio.gather(*(one() for _ in range(ledgers))))

    async def write_with_java_client(self, cluster: BookieCluster, entries: int) -> int:
        written = await run_harness(cluster, "write", "v3", "1", "1", "1", "CRC32C", PASSWORD.decode(), str(entries))
        ledger_id = int(written.result[0])
        self.entries[ledger_id] = [b"java-%d" % i for i in range(entries)]
        return ledger_id

    async def delete(self, bk: BookKeeper, ledger_ids: list[int]) -> None:
        for lid in ledger_ids:
            await bk.delete_ledger(lid)
            self.deleted.add(lid)

    async def check(self, bk: BookKeeper, where: str) -> None:
        """Every acknowledged entry of every ledger not deleted reads back byte-identical."""
        for lid, payloads in sorted(self.live.items()):
            handle = await bk.open_ledger(lid, PASSWORD, recovery=True)
            assert handle.last_add_confirmed == len(payloads) - 1, (where, lid, handle.last_add_confirmed)
            read = [e.payload for e in await handle.read(0, len(payloads) - 1)] if payloads else []
            different = [i for i, (a, b) in enumerate(zip(read, payloads, strict=True)) if a != b]
            assert not different, f"{where}: ledger {lid} entries {different[:10]} differ"


class WriteStream:
    """A client adding entries to one ledger (up to 8 in flight) until its bookie dies; ``acked`` and ``sent``
    are the payloads acknowledged and sent so far, in entry order."""

    def __init__(self, bk: BookKeeper, rng: random.Random) -> None:
        self.bk, self.rng = bk, rng
        self.ledger_id = -1
        self.sent: list[bytes] = []
        self.acked: list[bytes] = []
        self.task: asyncio.Task[None] | None = None

    async def start(self, until_acked: int) -> WriteStream:
        """Start the stream; returns once ``until_acked`` entries are acknowledged (it goes on writing)."""
        handle = await self.bk.create_ledger(1, 1, 1, password=PASSWORD)
        self.ledger_id = handle.ledger_id
        self.task = asyncio.create_task(self._run(handle))
        async with asyncio.timeout(60):
            while len(self.acked) < until_acked:
                assert not self.task.done(), self.task
                await asyncio.sleep(0.01)
        return self

    async def _run(self, handle: Any) -> None:
        in_flight: list[asyncio.Future[int]] = []
        try:
            while True:
                payload = self.rng.randbytes(512)
                self.sent.append(payload)
                in_flight.append(handle.append(payload))
                if len(in_flight) >= 8:
                    entry_id = await in_flight.pop(0)
                    assert entry_id == len(self.acked)
                    self.acked.append(self.sent[entry_id])
        finally:
            for future in in_flight:  # the adds behind the one that failed fail the same way: nothing to report
                future.add_done_callback(lambda f: f.cancelled() or f.exception())

    async def stopped(self) -> None:
        """Once its bookie is gone: the stream ends with the failed add (a stream that ends otherwise is a bug)."""
        assert self.task is not None
        async with asyncio.timeout(60):
            await asyncio.wait([self.task])
        assert self.task.exception() is not None

    async def recover(self, bk: BookKeeper, ledgers: Ledgers, where: str) -> None:
        """Recover the ledger (its writer is gone): every acknowledged entry is there, byte-identical; the
        ledger then holds exactly what recovery closed it with, a prefix of what was sent."""
        handle = await bk.open_ledger(self.ledger_id, PASSWORD, recovery=True)
        last = handle.last_add_confirmed
        assert len(self.acked) - 1 <= last < len(self.sent), (where, len(self.acked), last, len(self.sent))
        read = [e.payload for e in await handle.read(0, last)]
        assert read == self.sent[:last + 1], f"{where}: recovered entries of ledger {self.ledger_id} differ"
        ledgers.entries[self.ledger_id] = read


async def force_gc(bookie: BookieProcess, *, within: float = 120) -> None:
    """PUT /api/v1/bookie/gc (forceMajor, forceMinor) on either implementation, then wait for that cycle."""
    url = f"{bookie.http_url}/api/v1/bookie/gc"  # type: ignore[attr-defined]
    answer = await call("PUT", url, body={"forceMajor": True, "forceMinor": True})
    assert answer.status == 200, (answer.status, answer.text)
    await asyncio.sleep(0.5)  # BookKeeper's trigger only wakes its GC thread: let it start
    deadline = asyncio.get_running_loop().time() + within
    while True:
        state = await call("GET", url)
        assert state.status == 200, (state.status, state.text)
        if str(state.json().get("is_in_force_gc")).lower() == "false":
            return
        assert asyncio.get_running_loop().time() < deadline, f"forced GC of {bookie.bookie_id} did not finish"
        await asyncio.sleep(0.2)


async def gc_reclaims(disk: SameDisk, bookie: BookieProcess, *, within: float = 60) -> set[int]:
    """A forced GC and compaction run; returns the entry logs it removed (at least one: there is garbage)."""
    before = disk.entry_logs()
    await force_gc(bookie)
    deadline = asyncio.get_running_loop().time() + within
    while not (gone := before - disk.entry_logs()):
        assert asyncio.get_running_loop().time() < deadline, (
            f"GC of {bookie.bookie_id} removed no entry log of {sorted(before)}; log:\n{bookie.tail_log()}")
        await asyncio.sleep(0.5)
    return gone
