"""Helpers of the GC tests: write ledgers with the Python client, drive GC over REST, look at entry logs."""

from __future__ import annotations

import asyncio
import json
import os
import random
import struct
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from bookie import failpoints
from bookie.client import BookKeeper, ClientConfig
from bookie.storage import entrylog_format as ef
from bookie_fleet.local_bookies import LocalBookie
from rocksdict import AccessType, Options, Rdict

from tests.support.admin_api import ADMIN_HEADERS
from tests.support.bookies import BookieSet
from tests.support.waiting import eventually

# Small logs so a few hundred KiB of entries exercise rolls, maps and compaction; GC only when asked.
GC_OVERRIDES: dict[str, Any] = {
    "logSizeLimit": 1024 * 1024, "gcWaitTime": 600000, "gcEntryLogDeletionPauseMs": 0,
    "compactionRateByEntries": 100000, "compactionReadRateByBytes": 0,
}

# BookKeeper's two compaction modes (useTransactionalCompaction): a new .compacting log linked in, or copies
# appended to the current entry log. Compaction behaviour tests hold in both.
COMPACTION_MODES = pytest.mark.parametrize("transactional", [True, False],
                                           ids=["transactional", "into-current-log"])


def compaction_overrides(transactional: bool, **extra: Any) -> dict[str, Any]:
    return {**GC_OVERRIDES, "useTransactionalCompaction": transactional, **extra}


def client(cluster: BookieSet) -> BookKeeper:
    return BookKeeper(ClientConfig(zk_servers=cluster.zk_connect, ledgers_root=cluster.ledgers_root))


async def write_ledger(bk: BookKeeper, entries: int, size: int, seed: int | None = None) -> tuple[int, list[bytes]]:
    """A closed ledger of ``entries`` random payloads on one bookie; returns its id and the payloads."""
    rnd = random.Random(seed)
    handle = await bk.create_ledger(1, 1, 1, password=b"gc")
    payloads = [rnd.randbytes(size) for _ in range(entries)]
    await asyncio.gather(*(handle.append(p) for p in payloads))
    await handle.close()
    return handle.ledger_id, payloads


async def read_all(bk: BookKeeper, ledger_id: int) -> list[bytes]:
    handle = await bk.open_ledger(ledger_id, b"gc", recovery=False)
    last = (await bk.ledger_metadata(ledger_id)).value.last_entry_id
    return [e.payload for e in await handle.read(0, last)] if last >= 0 else []


async def rest(method: str, url: str, body: Any = None) -> Any:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
        data = json.dumps(body) if body is not None else None
        async with session.request(method, url, data=data, headers=ADMIN_HEADERS) as response:
            text = await response.text()
            assert response.status == 200, f"{method} {url}: {response.status} {text}"
            return json.loads(text)


async def gc_now(bookie: LocalBookie, *, major: bool = True, minor: bool = True, within: float = 120) -> None:
    """PUT /api/v1/bookie/gc and wait until that forced cycle is over."""
    base = f"{bookie.http_url}/api/v1/bookie/gc"
    await rest("PUT", base, {"forceMajor": major, "forceMinor": minor})
    deadline = asyncio.get_running_loop().time() + within
    while (await rest("GET", base))["is_in_force_gc"] == "true":
        assert asyncio.get_running_loop().time() < deadline, "forced GC did not finish in time"
        await asyncio.sleep(0.1)


async def explain(bookie: LocalBookie) -> dict[str, Any]:
    return dict(await rest("GET", f"{bookie.http_url}/api/v1/bookie/entry_logs"))


async def metrics(bookie: LocalBookie) -> dict[str, float]:
    async with aiohttp.ClientSession() as session, session.get(f"{bookie.http_url}/metrics") as response:
        text = await response.text()
    out: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("bookie_") and " " in line:
            series, value = line.rsplit(" ", 1)
            name = series.split("{", 1)[0]  # per-directory labels: summed over the bookie's directories
            out[name] = out.get(name, 0.0) + float(value)
    return out


def current_dir(bookie: LocalBookie) -> Path:
    return bookie.ledger_dir / "current"


def log_sizes(bookie: LocalBookie) -> dict[int, int]:
    """Entry log id -> file size."""
    out = {}
    for p in current_dir(bookie).iterdir():
        log_id = ef.parse_log_file_name(p.name)
        if log_id is not None:
            out[log_id] = p.stat().st_size
    return out


def entries_on_disk(bookie: LocalBookie) -> dict[tuple[int, int], list[tuple[int, bytes]]]:
    """(ledger, entry) -> [(log id, entry bytes)] over every entry log file: duplicates show up as 2+."""
    found: dict[tuple[int, int], list[tuple[int, bytes]]] = {}
    for log_id in sorted(log_sizes(bookie)):
        data = (current_dir(bookie) / ef.log_file_name(log_id)).read_bytes()
        for rec in ef.iter_records(data):
            found.setdefault((rec.ledger_id, rec.entry_id), []).append((log_id, bytes(rec.data)))
    return found


def records_at(bookie: LocalBookie) -> dict[int, tuple[int, int, bytes]]:
    """Location (``(logId << 32) | offset``) -> (ledger, entry, entry bytes) of every record in every log."""
    found = {}
    for log_id in sorted(log_sizes(bookie)):
        data = (current_dir(bookie) / ef.log_file_name(log_id)).read_bytes()
        for rec in ef.iter_records(data):
            location = ef.make_location(log_id, rec.offset + ef.RECORD_SIZE_PREFIX)
            found[location] = (rec.ledger_id, rec.entry_id, bytes(rec.data))
    return found


def indexed_locations(bookie: LocalBookie) -> dict[tuple[int, int], int]:
    """(ledger, entry) -> location, as the bookie's locations RocksDB holds them. The bookie must be stopped."""
    db = Rdict(str(current_dir(bookie) / "locations"), Options(raw_mode=True), access_type=AccessType.read_only())
    try:
        found = {}
        for key, value in db.items():
            assert isinstance(key, bytes) and isinstance(value, bytes)
            ledger_id, entry_id = struct.unpack(">qq", key)
            found[(ledger_id, entry_id)] = struct.unpack(">q", value)[0]
        return found
    finally:
        db.close()


async def past_a_checkpoint(bookie: LocalBookie, within: float = 60) -> None:
    """Returns once a whole checkpoint began after the call: everything written before it is in the entry logs
    and the locations index, and nothing is left for a journal replay. Two more counted, because the first may
    have swapped its write cache before the last write; counted, not slept for, because a loaded machine delays
    the checkpoint thread well past its ``flushInterval``."""
    async def checkpoints() -> float:
        return (await metrics(bookie)).get("bookie_checkpoints_total", 0.0)

    seen = await checkpoints()

    async def two_more() -> bool:
        return await checkpoints() >= seen + 2

    await eventually(two_more, "two checkpoints after the writes", within)


async def write_live_and_dead(bk: BookKeeper, bookie: LocalBookie, live: dict[int, list[bytes]], dead: set[int],
                              seed: int, entry_size: int = 8 * 1024) -> None:
    """A live and a dead ledger written one after the other, so they share entry logs (more than one log's
    worth with GC_OVERRIDES); adds them to ``live`` and ``dead``, and returns once ``bookie`` has checkpointed
    them, so that a replay adds no copies."""
    lid, payloads = await write_ledger(bk, 60, entry_size, seed)
    live[lid] = payloads
    gone, _ = await write_ledger(bk, 110, entry_size, seed + 1)
    await bk.delete_ledger(gone)
    dead.add(gone)
    await past_a_checkpoint(bookie)


async def kill_during_gc(bookie: LocalBookie, rnd: random.Random) -> None:
    """Force a GC cycle and SIGKILL the bookie at a random moment within the next second; the caller starts it
    again."""
    await rest("PUT", f"{bookie.http_url}/api/v1/bookie/gc", {"forceMajor": True, "forceMinor": True})
    await asyncio.sleep(rnd.uniform(0.0, 1.0))
    bookie.kill()


async def crash_at(bookie: LocalBookie, step: str) -> None:
    """Restart the bookie with a fault injected at compaction step ``step`` and force GC: it SIGKILLs itself
    there. Returns once it is dead; the caller inspects its files and starts it again."""
    bookie.kill()
    os.environ[failpoints.ENV] = f"gc.compaction.{step}"
    try:
        bookie.start()
    finally:
        del os.environ[failpoints.ENV]
    await rest("PUT", f"{bookie.http_url}/api/v1/bookie/gc", {"forceMajor": True, "forceMinor": True})
    assert bookie.proc is not None
    await asyncio.to_thread(bookie.proc.wait, 60)
    bookie.proc = None


def leftovers(bookie: LocalBookie) -> list[str]:
    """Compaction files that must not survive recovery."""
    return sorted(p.name for p in current_dir(bookie).iterdir() if p.name.endswith((".compacting", ".compacted")))


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def fsync_tree(path: Path) -> None:
    for f in path.rglob("*.log"):
        fd = os.open(f, os.O_RDONLY)
        os.close(fd)
