"""Helpers of the GC tests: write ledgers with the Python client, drive GC over REST, look at entry logs."""

from __future__ import annotations

import asyncio
import json
import os
import random
from pathlib import Path
from typing import Any

import aiohttp
from bookie.client import BookKeeper, ClientConfig
from bookie.storage import entrylog_format as ef
from bookie_fleet.local_bookies import LocalBookie

from tests.support.bookies import BookieSet

# Small logs so a few hundred KiB of entries exercise rolls, maps and compaction; GC only when asked.
GC_OVERRIDES: dict[str, Any] = {
    "logSizeLimit": 1024 * 1024, "gcWaitTime": 600000, "gcEntryLogDeletionPauseMs": 0,
    "compactionRateByEntries": 100000, "compactionReadRateByBytes": 0,
}


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
        async with session.request(method, url, data=data) as response:
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
    out = {}
    for line in text.splitlines():
        if line.startswith("bookie_") and " " in line:
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
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


def leftovers(bookie: LocalBookie) -> list[str]:
    """Compaction files that must not survive recovery."""
    return sorted(p.name for p in current_dir(bookie).iterdir() if p.name.endswith((".compacting", ".compacted")))


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def fsync_tree(path: Path) -> None:
    for f in path.rglob("*.log"):
        fd = os.open(f, os.O_RDONLY)
        os.close(fd)
