"""Usage audit: per log and per bookie, total / live / garbage bytes, age, dead vs partly live logs."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_audit import audits

from tests.pipeline.expected import log_usage


def test_usage_per_log_matches_the_plan(usage_logs: Any, fleet: Any) -> None:
    expected = log_usage(fleet.fleet, fleet.manifest.started_ms)
    rows = {r.path: r for r in usage_logs.collect()}
    assert set(rows) == set(expected)
    for path, exp in expected.items():
        row = rows[path]
        assert (row.bookie, row.total_bytes, row.garbage_bytes, row.live_bytes, row.overreplicated_bytes) == \
            (exp.bookie, exp.total, exp.garbage, exp.live, exp.overreplicated), path
        assert row.state == exp.state, path
        assert row.usage == pytest.approx(exp.usage)
        assert row.age_days == pytest.approx(exp.age_days, abs=1e-6)


def test_dead_logs_are_the_ones_holding_only_deleted_ledgers(usage_logs: Any, fleet: Any) -> None:
    dead = {r.path for r in usage_logs.filter("state = 'dead'").collect()}
    assert dead == {lg.path for lg in fleet.fleet.logs
                    if lg.copies and all(not fleet.fleet.ledgers[c.ledger_id].in_metadata for c in lg.copies)}
    assert len(dead) == 4  # slot 1 on each bookie + the truncated log


def test_usage_per_bookie_adds_up(usage_logs: Any, fleet: Any) -> None:
    expected = log_usage(fleet.fleet, fleet.manifest.started_ms)
    rows = {r.bookie: r for r in audits.usage_by_bookie(usage_logs).collect()}
    for bookie, row in rows.items():
        mine = [u for u in expected.values() if u.bookie == bookie]
        assert row.total_bytes == sum(u.total for u in mine)
        assert row.garbage_bytes == sum(u.garbage for u in mine)
        assert row.dead_logs == sum(u.state == "dead" for u in mine)
        assert row.dead_log_bytes == sum(u.total for u in mine if u.state == "dead")
        assert row.partial_logs == sum(u.state == "partial" for u in mine)
    assert rows["127.0.0.3:3181"].flagged_logs == 1
