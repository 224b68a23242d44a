"""The families the common BookKeeper dashboards need (name -> Prometheus type), as Apache BookKeeper 4.17's
Prometheus provider exposes them; the bookie must expose every one with the same type."""

from __future__ import annotations

MINIMUM_SET: dict[str, str] = {
    "bookie_SERVER_STATUS": "gauge",
    "bookkeeper_server_ADD_ENTRY": "summary",
    "bookkeeper_server_ADD_ENTRY_REQUEST": "summary",
    "bookkeeper_server_READ_ENTRY": "summary",
    "bookkeeper_server_READ_ENTRY_REQUEST": "summary",
    "bookkeeper_server_ADD_ENTRY_IN_PROGRESS": "gauge",
    "bookkeeper_server_ADD_ENTRY_BLOCKED": "gauge",
    "bookkeeper_server_READ_ENTRY_IN_PROGRESS": "gauge",
    "bookkeeper_server_READ_ENTRY_BLOCKED": "gauge",
    "bookie_WRITE_BYTES": "counter",
    "bookie_READ_BYTES": "counter",
    "bookie_journal_JOURNAL_ADD_ENTRY": "summary",
    "bookie_journal_JOURNAL_SYNC": "summary",
    "bookie_journal_JOURNAL_QUEUE_SIZE": "counter",
    "bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE": "counter",
    "bookie_ledgers_count": "gauge",
    "bookie_entries_count": "gauge",
    "bookie_write_cache_size": "gauge",
    "bookie_read_cache_size": "gauge",
    "bookie_read_cache_hits": "counter",
    "bookie_read_cache_misses": "counter",
    "bookie_readahead_batch_count": "summary",
    "bookie_read_entry": "summary",
    "bookie_ledger_writable_dirs": "gauge",
    "bookie_DELETED_LEDGER_TOTAL": "counter",
    "bookie_MAJOR_COMPACTION_TOTAL": "counter",
    "bookie_MINOR_COMPACTION_TOTAL": "counter",
    "bookie_RECLAIMED_COMPACTION_SPACE_BYTES": "counter",
    "bookie_RECLAIMED_DELETION_SPACE_BYTES": "counter",
    "bookie_ACTIVE_ENTRY_LOG_TOTAL": "gauge",
    "bookie_ACTIVE_LEDGER_TOTAL": "gauge",
    "bookkeeper_server_thread_executor_queue": "gauge",
}
