"""A bookie whose RocksDB index was lost while it was stopped gets it back from its entry logs and journals, with
its own implementation's command (``bookie index rebuild``; Apache BookKeeper's ``bookkeeper shell
rebuild-db-ledger-locations-index`` and ``rebuild-db-ledgers-index``), and serves every acknowledged entry again.

The location index comes back byte for byte: the same keys and values as the lost one. The ledgers index comes back
with the same ledgers, each fenced with an empty master key: the old writer of any of them is refused. The other
implementation's command, run on a copy of the same disk, gives the same index (Apache BookKeeper's ledgers
index keys each ledger by 16 bytes, its id and 8 zero bytes: compared by ledger id), and this bookie's storage
serves every entry from a disk the Java command rebuilt.

Apache BookKeeper 4.17.3's bookie runs with its journal synced, so that its last checkpoint covers the ledgers
(``lastMark``): otherwise its restart replays the whole journal, which would rebuild the index by itself.
"""

from __future__ import annotations

import asyncio
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.protocol.codes import StatusCode
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import IndexRolledBackError
from bookie.storage.index import LedgerData
from bookie_fleet.java_bookies import TEST_JVM_OPTS, bk_lib_dir
from bookie_fleet.processes import write_properties

from tests.faults.test_damaged_rocksdb_index import CONF, JAVA_CONF, _assert_checkpoint_covers_the_journal
from tests.support.java_bookies import BookieCluster
from tests.support.raw_client import PASSWORD, RawConnection
from tests.support.rocksdb_index import index_pairs

JAVA_COMMAND = {"locations": "rebuild-db-ledger-locations-index", "ledgers": "rebuild-db-ledgers-index"}
# Apache BookKeeper 4.17.3's commands on a lost index (docs/reliability.md, Findings): each first moves the old
# index aside, and stops at NoSuchFileException when there is none; the locations one still says "Done rebuilding"
# and exits 0, without an index.
JAVA_ON_A_LOST_INDEX = {"locations": 0, "ledgers": 255}
REBUILT = LedgerData(master_key=b"", fenced=True).encode()  # what both commands write for every ledger
LEDGERS, ENTRIES = 3, 40




def _by_ledger(pairs: dict[bytes, bytes]) -> dict[int, bytes]:
    """A ledgers index by ledger id: the first 8 bytes of its keys, as both bookies read them."""
    return {struct.unpack_from(">q", key)[0]: value for key, value in pairs.items()}


def _rebuild(kind: str, index: str, conf: Path, ledger_dir: Path) -> None:
    if kind == "python":
        _run([sys.executable, "-m", "bookie.cli", "index", "rebuild", index, "--conf", str(conf)], kind, index)
        return
    command = ["java", *TEST_JVM_OPTS, "-cp", f"{bk_lib_dir()}/*", "org.apache.bookkeeper.bookie.BookieShell",
               "-conf", str(conf), JAVA_COMMAND[index]]
    lost = ledger_dir / "current" / index
    if not lost.exists():
        done = subprocess.run(command, capture_output=True, text=True, timeout=180)
        said = done.stdout + done.stderr
        assert (done.returncode, "NoSuchFileException" in said, lost.exists()) == (
            JAVA_ON_A_LOST_INDEX[index], True, False), (
            f"Apache BookKeeper's {JAVA_COMMAND[index]} on a lost index: exit {done.returncode}, not the finding "
            f"docs/reliability.md states; update it\n{said}")
        lost.mkdir()  # the way round it: an empty directory for the command to move aside
    _run(command, kind, index)


def _run(command: list[str], kind: str, index: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, f"{kind} rebuild of {index}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"


def _copy_of_the_disk(bookie: Any, where: Path) -> Path:
    """The stopped bookie's journal and ledger directories copied, with a configuration both commands read."""
    shutil.copytree(bookie.journal_dir, where / "journal")
    shutil.copytree(bookie.ledger_dir, where / "ledgers")
    conf = where / "bk_server.conf"
    write_properties(conf, {"journalDirectories": str(where / "journal"), "ledgerDirectories": str(where / "ledgers"),
                            "ledgerStorageClass": CONF["ledgerStorageClass"]})
    return conf


@pytest.mark.parametrize("index", ["locations", "ledgers"])
@pytest.mark.parametrize("bookie_kind", ["python", "java"])
async def test_a_lost_index_is_rebuilt_and_every_entry_served(
        cluster_factory: Callable[..., BookieCluster], bookie_kind: str, index: str, tmp_path: Path) -> None:
    cluster = await asyncio.to_thread(cluster_factory, bookie_kind, 1,
                                      **(JAVA_CONF if bookie_kind == "java" else CONF))
    [bookie] = cluster.bookies
    written: dict[int, list[bytes]] = {}
    async with BookKeeper(cluster.client_config()) as bk:
        for n in range(LEDGERS):
            handle = await bk.create_ledger(1, 1, 1, password=PASSWORD)
            written[handle.ledger_id] = [f"ledger {n} entry {i} ".encode() * (20 + i) for i in range(ENTRIES)]
            for body in written[handle.ledger_id]:
                await handle.add(body)
            if n == 0:
                await bk.open_ledger(handle.ledger_id, PASSWORD)  # recovery fences it: its writer is out
            else:
                await handle.close()
    await asyncio.to_thread(bookie.stop)
    if bookie_kind == "java":
        _assert_checkpoint_covers_the_journal(bookie.ledger_dir / "current" / "lastMark")
    lost_at = bookie.ledger_dir / "current" / index
    lost = index_pairs(lost_at)
    shutil.rmtree(lost_at)
    other_kind = "java" if bookie_kind == "python" else "python"
    copy_conf = await asyncio.to_thread(_copy_of_the_disk, bookie, tmp_path / "copy")

    await asyncio.to_thread(_rebuild, bookie_kind, index, bookie.conf_path, bookie.ledger_dir)
    await asyncio.to_thread(_rebuild, other_kind, index, copy_conf, tmp_path / "copy" / "ledgers")
    rebuilt, by_the_other = index_pairs(lost_at), index_pairs(tmp_path / "copy" / "ledgers" / "current" / index)
    if index == "locations":
        assert len(lost) == LEDGERS * ENTRIES
        assert rebuilt == lost, f"{len(set(rebuilt.items()) ^ set(lost.items()))} pairs differ from the lost index"
        assert by_the_other == lost, f"{other_kind}'s rebuild of the same disk differs from the lost index"
    else:
        assert set(_by_ledger(lost)) == set(written)
        for what, pairs in ((bookie_kind, rebuilt), (other_kind, by_the_other)):
            assert _by_ledger(pairs) == dict.fromkeys(written, REBUILT), f"{what}'s rebuild: {pairs}"

    await asyncio.to_thread(bookie.start)
    async with BookKeeper(cluster.client_config()) as bk:
        for ledger_id, bodies in written.items():
            reader = await bk.open_ledger(ledger_id, PASSWORD)
            assert [e.payload for e in await reader.read(0, ENTRIES - 1)] == bodies, f"ledger {ledger_id}"
    # The recovered ledger stays fenced; a rebuilt ledgers index fences every ledger (a closed one was not).
    fenced = list(written) if index == "ledgers" else list(written)[:1]
    async with await RawConnection.open(bookie.bookie_id) as old_writer:
        for ledger_id in fenced:
            assert (await old_writer.add(ledger_id, ENTRIES)).status == StatusCode.EFENCED, ledger_id

    java_rebuilt = tmp_path / "copy" if other_kind == "java" else None
    if java_rebuilt is not None:  # this bookie's storage on a disk Apache BookKeeper's command rebuilt
        await _serves_every_entry(java_rebuilt, index, written)


async def _serves_every_entry(disk: Path, index: str, written: dict[int, list[bytes]]) -> None:
    from bookie.config import BookieConfig

    conf = BookieConfig.from_file(disk / "bk_server.conf")
    sequence = disk / "ledgers" / "current" / f"{index}.sequence"
    try:
        engine = StorageEngine(conf)
    except IndexRolledBackError as refused:  # this bookie's record of the lost index's last sync: done as it says
        assert f"delete {sequence}" in str(refused), refused
        sequence.unlink()
        engine = StorageEngine(conf)
    await engine.start()
    try:
        for ledger_id, bodies in written.items():
            for entry_id, body in enumerate(bodies):
                stored = bytes(await engine.read_entry(ledger_id, entry_id))
                assert stored.endswith(body), (ledger_id, entry_id)
    finally:
        await engine.close()
