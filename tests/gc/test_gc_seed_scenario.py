"""Entry logs mixing deleted and live ledgers. After the ledgers are deleted in metadata,
fully dead logs disappear, logs under the minor threshold are compacted, logs above both thresholds stay,
every live entry reads back byte-identical from its new location, and the disk shrinks by the dead bytes."""

from __future__ import annotations

from bookie.storage import entrylog_format as ef

from tests.gc.gcutil import (
    COMPACTION_MODES,
    client,
    compaction_overrides,
    current_dir,
    explain,
    gc_now,
    log_sizes,
    metrics,
    read_all,
    write_ledger,
)
from tests.support.bookies import BookieFactory

ENTRY = 8 * 1024
# One entry log per group (the bookie is restarted between groups, which finalizes the active log):
# (live entries, dead entries). Usage = live / (live + dead).
GROUPS = {"dead": (0, 60), "minor": (6, 54), "between": (30, 30), "kept": (54, 6)}
TOLERANCE = 64 * 1024  # headers, ledgers maps and size prefixes


@COMPACTION_MODES
async def test_dead_logs_deleted_sparse_logs_compacted_dense_logs_kept(bookie_factory: BookieFactory,
                                                                      transactional: bool) -> None:
    cluster = bookie_factory(1, **compaction_overrides(transactional))
    bookie = cluster[0]
    live: dict[int, list[bytes]] = {}
    dead: list[int] = []
    group_logs: dict[str, int] = {}
    async with client(cluster) as bk:
        for name, (n_live, n_dead) in GROUPS.items():
            before = set(log_sizes(bookie))
            if n_live:
                lid, payloads = await write_ledger(bk, n_live, ENTRY)
                live[lid] = payloads
            lid, _ = await write_ledger(bk, n_dead, ENTRY)
            dead.append(lid)
            bookie.restart()  # checkpoint + finalize: this group's entries form exactly one log
            (group_logs[name],) = set(log_sizes(bookie)) - before
        sizes_before = log_sizes(bookie)
        for lid in dead:
            await bk.delete_ledger(lid)

        await gc_now(bookie, major=False, minor=True)
        after_minor = log_sizes(bookie)
        assert group_logs["dead"] not in after_minor, "a log of deleted ledgers only is deleted"
        assert group_logs["minor"] not in after_minor, "a log under minorCompactionThreshold is compacted"
        assert group_logs["between"] in after_minor and group_logs["kept"] in after_minor
        new_logs = set(after_minor) - set(sizes_before)
        assert len(new_logs) == 1, f"one compaction output expected, got {new_logs}"
        (new_log,) = new_logs
        header = ef.LogHeader.decode((current_dir(bookie) / ef.log_file_name(new_log)).read_bytes()[:ef.HEADER_SIZE])
        assert header.has_ledgers_map == transactional, \
            "transactional: a finished log of its own; else the copies went to the current, still open, log"
        freed = sum(sizes_before.values()) - sum(after_minor.values())
        expected = sizes_before[group_logs["dead"]] + GROUPS["minor"][1] * ENTRY
        assert abs(freed - expected) < TOLERANCE, (freed, expected)
        for lid, payloads in live.items():
            assert await read_all(bk, lid) == payloads, f"ledger {lid} reads back identical"

        report = await explain(bookie)
        listed = {entry["logId"]: entry for entry in report["ledgerDirs"][0]["entryLogs"]}
        kept = listed[f"{group_logs['kept']:x}"]
        assert kept["usage"] > 0.8 and "kept" in kept["verdict"] and kept["pinningLedgers"]
        between = listed[f"{group_logs['between']:x}"]
        assert "majorCompactionThreshold" in between["verdict"]

        await gc_now(bookie, major=True, minor=False)
        after_major = log_sizes(bookie)
        assert group_logs["between"] not in after_major, "major compaction takes logs under 0.8"
        assert group_logs["kept"] in after_major, "a log above both thresholds stays"
        for lid, payloads in live.items():
            assert await read_all(bk, lid) == payloads

    m = await metrics(bookie)
    assert m["bookie_RECLAIMED_DELETION_SPACE_BYTES"] >= sizes_before[group_logs["dead"]]
    assert m["bookie_MINOR_COMPACTION_TOTAL"] == 1
    assert m["bookie_MAJOR_COMPACTION_TOTAL"] == 1
