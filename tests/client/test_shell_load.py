"""``bookie-shell load`` writes a ledger with pipelined adds, reads every entry back and checks it, shows a
progress bar on stderr and prints a JSON summary (throughput, add latency percentiles)."""

from __future__ import annotations

import json

from tests.client.shell_support import shell
from tests.support.bookies import BookieSet


async def test_load_writes_reads_back_and_summarises(bookies: BookieSet) -> None:
    proc = await shell(bookies, "load", "--entries", "1500", "--size", "200", "--ensemble", "3",
                       "--write-quorum", "2", "--ack-quorum", "2", "--delete")
    summary = json.loads(proc.stdout)
    assert summary["written"] == summary["read_verified"] == 1500
    assert summary["mismatched"] == 0 and summary["deleted"] is True
    assert summary["write_entries_per_s"] > 0 and summary["add_latency_ms_p99"] >= summary["add_latency_ms_p50"]
    assert "1500/1500 entries" in proc.stderr and "[#" in proc.stderr  # the progress bar reached the end
    assert str(summary["ledger"]) not in (await shell(bookies, "ledgers")).stdout.split()
