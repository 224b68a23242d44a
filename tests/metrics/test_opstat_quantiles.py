"""OpStat (pure logic): windowed quantiles within the bucket error, cumulative count and sum, NaN when a
window saw nothing, the exact maximum as quantile 1.0; and the summary text in BookKeeper's layout."""

from __future__ import annotations

import math
import random

from bookie.metrics import QUANTILES, OpStat, Text, ledger_dir_usage_name, sanitize


def test_quantiles_come_from_the_closed_window_within_the_bucket_error() -> None:
    stat = OpStat()
    values = [random.lognormvariate(0, 1.5) for _ in range(20_000)]
    for v in values:
        stat.record(v)
    assert all(math.isnan(q) for q in stat.ok.quantiles()), "no window closed yet"
    stat.rotate()
    values.sort()
    for q, got in zip(QUANTILES, stat.ok.quantiles(), strict=True):
        want = values[min(len(values) - 1, math.ceil(q * len(values)) - 1)]
        assert abs(got - want) <= 0.04 * want, (q, got, want)
    assert stat.ok.quantiles()[-1] == max(values)
    stat.rotate()  # an empty window follows
    assert all(math.isnan(q) for q in stat.ok.quantiles())
    assert stat.ok.count == len(values)
    assert math.isclose(stat.ok.sum, sum(values))


def test_failures_are_kept_apart_and_grouped_samples_count_each_entry() -> None:
    stat = OpStat()
    stat.record(2.0, success=False)
    stat.record(5.0, times=10)
    stat.rotate()
    assert (stat.failed.count, stat.ok.count, stat.ok.sum) == (1, 10, 50.0)
    assert stat.ok.quantiles()[0] == 5.0, "clamped to the window's maximum"


def test_summary_text_is_bookkeepers() -> None:
    stat = OpStat()
    stat.record(1.5)
    stat.rotate()
    text = Text()
    text.summary("bookie_journal_JOURNAL_SYNC", stat, [("journalIndex", "0")])
    text.counter("bookie_DELETED_LEDGER_TOTAL", 3)
    lines = text.render().splitlines()
    assert lines[0] == "# TYPE bookie_journal_JOURNAL_SYNC summary"
    assert lines[1] == 'bookie_journal_JOURNAL_SYNC{success="false",quantile="0.5", journalIndex="0"} NaN'
    assert lines[8] == 'bookie_journal_JOURNAL_SYNC_count{success="false", journalIndex="0"} 0'
    assert lines[16] == 'bookie_journal_JOURNAL_SYNC{success="true",quantile="1.0", journalIndex="0"} 1.5'
    assert lines[17] == 'bookie_journal_JOURNAL_SYNC_count{success="true", journalIndex="0"} 1'
    assert lines[18] == 'bookie_journal_JOURNAL_SYNC_sum{success="true", journalIndex="0"} 1.5'
    assert lines[19:] == ["# TYPE bookie_DELETED_LEDGER_TOTAL counter", "bookie_DELETED_LEDGER_TOTAL 3"]


def test_names_are_sanitized_as_bookkeeper_does() -> None:
    assert sanitize("write-cache-size") == "write_cache_size"
    assert (ledger_dir_usage_name("/pulsar/data/bookkeeper/ledgers-0")
            == "bookie_ledger_dir__pulsar_data_bookkeeper_ledgers_0_usage")
