"""A bookie whose RocksDB index was deleted or damaged while it was stopped never serves a disk whose entries or
ledger states it can no longer find: neither the location index (a bookie that answers "no such entry" for
acknowledged data is worse than one that is down: clients would take its answers in recovery) nor the ledgers
index (a fenced ledger writable again by its old writer, a ledger without its master key). A deleted index: it
refuses to start and says why. Damaged files: it refuses to start with the reason (a damaged MANIFEST record,
found before RocksDB reads it, or RocksDB's own error), never hanging at start; or, when RocksDB recovers from
that damage (bits flipped where it reads a torn tail, the records still in its write-ahead log), it serves every
entry and the ledger's state (fenced, its master key).

Seeded damage: the location or the ledgers index deleted, or seeded bits of its table and manifest files
flipped. Our bookie only, for now: Apache BookKeeper's is not run with this damage yet (docs/reliability.md).
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
from bookie.protocol.codes import StatusCode

from tests.support.java_bookies import BookieCluster
from tests.support.raw_client import PASSWORD, RawConnection

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
@pytest.mark.parametrize("index", ["locations", "ledgers"])
async def test_a_bookie_with_a_damaged_index_refuses_to_start_with_the_reason(
        cluster_factory: Callable[..., BookieCluster], index: str, how: str, seeded_rng: random.Random,
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "python", 1, **CONF)
    [bookie] = cluster.bookies
    written = [f"entry {i}".encode() * 100 for i in range(50)]
    async with BookKeeper(cluster.client_config()) as bk:
        handle = await bk.create_ledger(1, 1, 1, password=PASSWORD)
        for body in written:
            await handle.add(body)
        await bk.open_ledger(handle.ledger_id, PASSWORD)  # recovery: the bookie fences the ledger, its writer is out
    await asyncio.to_thread(bookie.stop)
    _damage(bookie.ledger_dir / "current" / index, how, seeded_rng)
    message = tmp_path / "termination-log"
    monkeypatch.setenv("BOOKIE_TERMINATION_LOG", str(message))
    try:
        await asyncio.to_thread(bookie.start)
    except RuntimeError as exc:
        assert "exited with" in str(exc), exc
        bookie.proc = None
        text = message.read_text()
        assert text.startswith(REASON[how]) and NAMED[how].format(index=index) in text, text
        return
    assert how == "corrupted", f"a bookie without its {index} index started"
    print("RocksDB recovered from this damage: every entry and the ledger's state must be served")
    async with BookKeeper(cluster.client_config()) as bk:
        reader = await bk.open_ledger(handle.ledger_id, PASSWORD)
        assert [e.payload for e in await reader.read(0, len(written) - 1)] == written
    async with await RawConnection.open(bookie.bookie_id) as old_writer:
        # Another key first: a bookie that lost the ledger's key would take it as the ledger's.
        assert (await old_writer.add(handle.ledger_id, len(written), key=b"k" * 20)).status == StatusCode.EUA
        assert (await old_writer.add(handle.ledger_id, len(written))).status == StatusCode.EFENCED


# The reason each damage is refused with (bookie/termination.py): a lost index is a disk this bookie cannot
# serve; a damaged one is a start-up failure naming the file (a MANIFEST record or RocksDB's own error).
REASON = {"deleted": "IncompatibleDisk: ", "corrupted": "StartupFailed: "}
# How the message names the damaged index: the index missing beside the other, or a path in it (RocksDB's
# corrupted file, or the rolled-back index).
NAMED = {"deleted": "but not {index} under current/", "corrupted": "/current/{index}"}
