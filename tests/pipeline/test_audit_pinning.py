"""Pinning audit: the live ledgers keeping old logs on disk, ranked by the garbage they hold."""

from __future__ import annotations

import json
from typing import Any

from bookie_audit import audits

from tests.pipeline.expected import log_usage


def test_the_only_ledger_pinning_the_old_logs_is_ranked_with_its_topic(
        classified: Any, usage_logs: Any, snap: Any, fleet: Any) -> None:
    rows = audits.pinning(classified, usage_logs, snap, min_age_days=10).collect()
    usage = log_usage(fleet.fleet, fleet.manifest.started_ms)
    old = [lg for lg in fleet.fleet.logs if usage[lg.path].age_days >= 10 and usage[lg.path].state != "dead"]
    assert [r.ledger_id for r in rows] == [1]
    (row,) = rows
    assert row.old_logs == len(old) == 3 and row.sole_pinner_logs == 3 and row.bookies == 3
    assert row.pinned_garbage_bytes == sum(usage[lg.path].garbage for lg in old)
    assert row.live_bytes == sum(c.size + 4 for lg in old for c in lg.copies if c.ledger_id == 1)
    assert json.loads(row.custom_metadata) == {"pulsar/managed-ledger": fleet.fleet.ledgers[1].managed_ledger}
    assert row.topic == "persistent://public/default/topic-1"
    assert row.state == "CLOSED"


def test_younger_threshold_brings_in_the_recent_logs_ranked_by_garbage(
        classified: Any, usage_logs: Any, snap: Any) -> None:
    rows = audits.pinning(classified, usage_logs, snap, min_age_days=1).collect()
    assert rows[0].ledger_id == 1  # the only ledger sharing logs with garbage
    assert {r.ledger_id for r in rows} == {1, *range(2, 11), 200}
    garbage = [r.pinned_garbage_bytes for r in rows]
    assert garbage == sorted(garbage, reverse=True)
