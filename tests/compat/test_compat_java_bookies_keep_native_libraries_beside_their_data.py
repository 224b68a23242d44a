"""An Apache BookKeeper bookie started here keeps its temporary files in its own directory, never in /tmp.

Its jars unpack native libraries into the JVM's temporary directory at every start (RocksDB's, 13 MB, for
DbLedgerStorage's index) and delete them only when the JVM exits cleanly. Tests and benchmarks kill bookies as a
crash would, so each start used to leave its copy in /tmp for good: dozens per run of the suite. The launcher
(``bookie_fleet.java_bookies``) gives the JVM ``java.io.tmpdir`` under the bookie's data directory, which goes with
the rest of its files; the Pulsar broker, its clients and the tests' HDFS do the same
(``bookie_fleet.processes.java_tmpdir``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from tests.support.java_bookies import BookieCluster
from tests.support.victims import VICTIM_CONF


def _mapped_rocksdb_libraries(pid: int) -> set[Path]:
    """The RocksDB native libraries a process has mapped."""
    return {Path(fields[-1]) for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
            if len(fields := line.split()) >= 6 and "librocksdbjni" in fields[-1]}


async def test_a_killed_java_bookie_leaves_its_unpacked_library_in_its_own_directory(
        cluster_factory: Callable[..., BookieCluster]) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "java", 1, **VICTIM_CONF)
    bookie = cluster.bookies[0]
    own = bookie.data_dir / "tmp"
    assert bookie.proc is not None
    libraries = _mapped_rocksdb_libraries(bookie.proc.pid)
    assert libraries, f"{bookie.bookie_id} (DbLedgerStorage) mapped no RocksDB library"
    outside = sorted(str(p) for p in libraries if not p.is_relative_to(own))
    assert not outside, f"{bookie.bookie_id} unpacked {outside} outside {own}"
    bookie.kill()  # as a crash would: the JVM deletes nothing
    assert all(p.exists() for p in libraries), "the library was there to be left behind"
