"""A bookie whose RocksDB entry-location index was deleted or damaged while it was stopped never serves a disk
whose entries it can no longer find (a bookie that answers "no such entry" for acknowledged data is worse than
one that is down: clients would take its answers in recovery). A deleted index: it refuses to start and says
why. Damaged files: it refuses to start with RocksDB's reason, or, when RocksDB recovers from that damage (bits
flipped where it reads a torn tail, the entries still in its write-ahead log), it serves every entry.

Seeded damage: the location index deleted, or seeded bits of its table and manifest files flipped. Our bookie
only, for now: Apache BookKeeper's is not run with this damage yet (docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import random
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper

from tests.support.java_bookies import BookieCluster

CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
                        "flushInterval": 1000, "gcWaitTime": 3_600_000}


def _damage(index: Path, how: str, rng: random.Random) -> None:
    if how == "deleted":
        shutil.rmtree(index)
        return
    files = sorted(p for p in index.iterdir() if p.suffix == ".sst" or p.name.startswith("MANIFEST"))
    assert files, f"no RocksDB table or manifest in {index}"
    for path in files:
        data = bytearray(path.read_bytes())
        for _ in range(max(1, len(data) // 64)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["deleted", "corrupted"])
async def test_a_bookie_with_a_damaged_index_refuses_to_start_with_the_reason(
        cluster_factory: Callable[..., BookieCluster], how: str, seeded_rng: random.Random,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "python", 1, **CONF)
    [bookie] = cluster.bookies
    written = [f"entry {i}".encode() * 100 for i in range(50)]
    async with BookKeeper(cluster.client_config()) as bk:
        handle = await bk.create_ledger(1, 1, 1)
        for body in written:
            await handle.add(body)
        await handle.close()
    await asyncio.to_thread(bookie.stop)
    _damage(bookie.ledger_dir / "current" / "locations", how, seeded_rng)
    message = tmp_path / "termination-log"
    monkeypatch.setenv("BOOKIE_TERMINATION_LOG", str(message))
    try:
        await asyncio.to_thread(bookie.start)
    except RuntimeError as exc:
        assert "exited with" in str(exc), exc
        bookie.proc = None
        text = message.read_text()
        assert text.startswith(REASON[how]) and "locations" in text, text
        return
    assert how == "corrupted", "a bookie without its location index started"
    print("RocksDB recovered from this damage: every entry must read back")
    async with BookKeeper(cluster.client_config()) as bk:
        reader = await bk.open_ledger(handle.ledger_id)
        assert [e.payload for e in await reader.read(0, len(written) - 1)] == written


# The reason each damage is refused with (bookie/termination.py): a lost index is a disk this bookie cannot
# serve; a damaged one is RocksDB's own error naming the file.
REASON = {"deleted": "IncompatibleDisk: ", "corrupted": "StartupFailed: "}
