"""Two ledger directories: GC keeps state per directory (gc_details and the explain endpoint list both) and
reclaims and compacts in each, with every ledger's index in its own directory."""

from __future__ import annotations

from pathlib import Path

from bookie.storage import entrylog_format as ef

from tests.gc.gcutil import (
    COMPACTION_MODES,
    client,
    compaction_overrides,
    explain,
    gc_now,
    read_all,
    rest,
    write_ledger,
)
from tests.support.bookies import BookieFactory


def logs_in(ledger_dir: Path) -> set[int]:
    ids = (ef.parse_log_file_name(p.name) for p in (ledger_dir / "current").iterdir())
    return {i for i in ids if i is not None}


@COMPACTION_MODES
async def test_gc_in_each_ledger_directory(bookie_factory: BookieFactory, tmp_path: Path, transactional: bool) -> None:
    dirs = [tmp_path / "disk-a", tmp_path / "disk-b"]
    cluster = bookie_factory(1, start=False, **compaction_overrides(transactional))
    bookie = cluster[0]
    bookie.overrides["ledgerDirectories"] = ",".join(str(d) for d in dirs)
    bookie.start()
    live: dict[int, list[bytes]] = {}
    async with client(cluster) as bk:
        for seed in range(8):  # ids alternate between the directories (ledger id mod 2)
            lid, payloads = await write_ledger(bk, 40, 8192, seed)
            live[lid] = payloads
        bookie.restart()
        before = [logs_in(d) for d in dirs]
        assert all(before), "both directories hold entry logs"
        for lid in [lid for lid in live if lid % 4 >= 2]:  # half of each directory's ledgers
            await bk.delete_ledger(lid)
            del live[lid]
        await gc_now(bookie)
        after = [logs_in(d) for d in dirs]
        for b, a in zip(before, after, strict=True):
            assert a != b, "each directory reclaimed or compacted something"
        for lid, payloads in live.items():
            assert await read_all(bk, lid) == payloads

    details = await rest("GET", f"{bookie.http_url}/api/v1/bookie/gc_details")
    assert len(details) == 2 and all(d["majorCompactionCounter"] == 1 for d in details)
    report = await explain(bookie)
    assert [d["ledgerDir"] for d in report["ledgerDirs"]] == [str(d) for d in dirs]
