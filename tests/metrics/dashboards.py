"""The PromQL of the common BookKeeper dashboards and alert rules, each with where it comes from.

SN = streamnative/apache-pulsar-grafana-dashboard (dashboards.kubernetes/bookkeeper.json), LH =
lhotari/pulsar-grafana-dashboards (pulsar/bookkeeper*.json, overview.json, jvm.json: what Apache Pulsar's Helm
chart loads), KA = datastax/kaap (helm/kaap-stack grafana-dashboards/bookkeeper*.json and its alert rules).
``$F`` is the dashboard's selector (cluster/job plus pod); tests replace it with one group of bookies'
labels. ``by pod`` is ``by (kubernetes_pod_name)``, as the dashboards write it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Query:
    source: str  # dashboard (and panel)
    expr: str

    def for_selector(self, selector: str) -> str:
        return self.expr.replace("$F", selector)


P = "by (kubernetes_pod_name)"

# Expressions that return data for Apache BookKeeper 4.17 bookies: ours must answer every one of them.
SHARED: list[Query] = [
    Query("SN variables", 'bookkeeper_server_ADD_ENTRY{$F,kubernetes_pod_name=~".+"}'),
    Query("LH variables", "bookie_SERVER_STATUS{$F}"),
    Query("all: writable", "count(bookie_SERVER_STATUS{$F} == 1)"),
    Query("all: writable %", "100 * count(bookie_SERVER_STATUS{$F} == 1) / count(bookie_SERVER_STATUS{$F})"),
    Query("SN/KA: add success rate",
          '100 * sum(irate(bookkeeper_server_ADD_ENTRY_count{$F,success="true"}[1m]))'
          " / sum(irate(bookkeeper_server_ADD_ENTRY_count{$F}[1m]))"),
    Query("SN/KA: read success rate",
          '100 * sum(irate(bookkeeper_server_READ_ENTRY_count{$F,success="true"}[1m]))'
          " / sum(irate(bookkeeper_server_READ_ENTRY_count{$F}[1m]))"),
    Query("LH: add rate", f'sum(irate(bookkeeper_server_ADD_ENTRY_count{{$F,success="true"}}[1m])) {P}'),
    Query("LH: add failures", f'sum(irate(bookkeeper_server_ADD_ENTRY_count{{$F,success="false"}}[1m])) {P}'),
    Query("LH: read rate", f'sum(irate(bookkeeper_server_READ_ENTRY_count{{$F,success="true"}}[1m])) {P}'),
    Query("SN/LH: add latency", 'avg(bookkeeper_server_ADD_ENTRY{$F,success="true",quantile="0.99"})'),
    Query("SN/LH: add latency by pod",
          f'sum(bookkeeper_server_ADD_ENTRY{{$F,success="true",quantile="0.999"}}) {P}'),
    Query("KA: add request latency", 'avg(bookkeeper_server_ADD_ENTRY_REQUEST{$F,success="true",quantile="0.5"})'),
    Query("SN/KA: read latency",
          f'sum(bookkeeper_server_READ_ENTRY_REQUEST{{$F,success="true",quantile="0.99"}}) {P}'),
    Query("LH: read latency", 'avg(bookkeeper_server_READ_ENTRY{$F,success="true",quantile="0.5"})'),
    Query("all: write bytes", "sum(rate(bookie_WRITE_BYTES{$F}[1m]))"),
    Query("all: read bytes by pod", f"sum(irate(bookie_READ_BYTES{{$F}}[1m])) {P}"),
    Query("SN: add entries", f"sum(irate(bookkeeper_server_ADD_ENTRY_count{{$F}}[1m])) {P}"),
    Query("KA: add requests", f"sum(irate(bookkeeper_server_ADD_ENTRY_REQUEST_count{{$F}}[1m])) {P}"),
    Query("SN/KA: read requests", f"sum(irate(bookkeeper_server_READ_ENTRY_REQUEST_count{{$F}}[1m])) {P}"),
    Query("LH: read entries", f"sum(irate(bookkeeper_server_READ_ENTRY_count{{$F}}[1m])) {P}"),
    Query("SN: adds in progress", f"sum(bookkeeper_server_ADD_ENTRY_IN_PROGRESS{{$F}}) {P}"),
    Query("SN: adds blocked", f"sum(bookkeeper_server_ADD_ENTRY_BLOCKED{{$F}}) {P}"),
    Query("SN: reads in progress", f"sum(bookkeeper_server_READ_ENTRY_IN_PROGRESS{{$F}}) {P}"),
    Query("SN: reads blocked", f"sum(bookkeeper_server_READ_ENTRY_BLOCKED{{$F}}) {P}"),
    Query("all: journal syncs", f'sum(irate(bookie_journal_JOURNAL_SYNC_count{{$F,success="true"}}[1m])) {P}'),
    Query("all: journal adds",
          f'sum(irate(bookie_journal_JOURNAL_ADD_ENTRY_count{{$F,success="true"}}[1m])) {P}'),
    Query("all: journal queue", f"sum(bookie_journal_JOURNAL_QUEUE_SIZE{{$F}}) {P}"),
    Query("all: force-write queue", f"sum(bookie_journal_JOURNAL_FORCE_WRITE_QUEUE_SIZE{{$F}}) {P}"),
    Query("all: journal add latency",
          f'sum(bookie_journal_JOURNAL_ADD_ENTRY{{$F,success="true",quantile="0.99"}}) {P}'),
    Query("all: journal sync latency",
          f'sum(bookie_journal_JOURNAL_SYNC{{$F,success="true",quantile="1.0"}}) {P}'),
    Query("all: ledgers", f"sum(bookie_ledgers_count{{$F}}) {P}"),
    Query("all: entries", f"sum(bookie_entries_count{{$F}}) {P}"),
    Query("all: write cache", f"sum(bookie_write_cache_size{{$F}}) {P}"),
    Query("all: read cache", f"sum(bookie_read_cache_size{{$F}}) {P}"),
    Query("all: writable dirs", f"sum(bookie_ledger_writable_dirs{{$F}}) {P}"),
    Query("SN: read cache hits", f"sum(irate(bookie_read_cache_hits{{$F}}[1m])) {P}"),
    Query("SN: read cache misses", f"sum(irate(bookie_read_cache_misses{{$F}}[1m])) {P}"),
    Query("KA: read cache size rate", "irate(bookie_read_cache_size{$F}[1m])"),
    Query("LH/KA: disk reads per read",
          f"(sum(rate(bookie_readahead_batch_count_count{{$F}}[1m])) {P}"
          f" + sum(rate(bookie_readahead_batch_count_sum{{$F}}[1m])) {P})"
          f" / sum(rate(bookie_read_entry_count{{$F}}[1m])) {P}"),
    Query("SN/LH: deleted ledgers", f"sum(bookie_DELETED_LEDGER_TOTAL{{$F}}) {P}"),
    Query("SN: major compactions", f"sum(bookie_MAJOR_COMPACTION_TOTAL{{$F}}) {P}"),
    Query("SN: reclaimed by compaction", f"sum(rate(bookie_RECLAIMED_COMPACTION_SPACE_BYTES{{$F}}[30s])) {P}"),
    Query("SN: reclaimed by deletion", f"sum(rate(bookie_RECLAIMED_DELETION_SPACE_BYTES{{$F}}[30s])) {P}"),
    Query("LH compaction: reclaimed", "rate(bookie_RECLAIMED_DELETION_SPACE_BYTES{$F}[5m])"),
    Query("LH compaction: major rate", "rate(bookie_MAJOR_COMPACTION_TOTAL{$F}[5m])"),
    Query("LH compaction: minor rate", "rate(bookie_MINOR_COMPACTION_TOTAL{$F}[5m])"),
    Query("LH compaction: active entry logs", "bookie_ACTIVE_ENTRY_LOG_TOTAL{$F}"),
    Query("LH compaction: active ledgers", "bookie_ACTIVE_LEDGER_TOTAL{$F}"),
    Query("LH compaction: deleted ledgers", "bookie_DELETED_LEDGER_TOTAL{$F}"),
    Query("SN: ledger dir usage (any path)", '{__name__=~"bookie_ledger_dir_.*_usage",$F}'),
    Query("LH: queues",
          "sum by (kubernetes_pod_name, thread) (bookkeeper_server_thread_executor_queue"
          '{$F,thread=~"BookieHighPriorityThread-.*|BookieReadThreadPool-.*"})'),
    Query("KA read-use: read time", f"sum(irate(bookie_read_entry_sum{{$F}}[1m])) {P}"),
    Query("KA read-use: failed reads", 'bookkeeper_server_READ_ENTRY_REQUEST_count{$F,success="false"}'),
    Query("KA alert: add latency", "bookkeeper_server_ADD_ENTRY_REQUEST{$F} > -1"),
    Query("KA alert: read latency", "bookkeeper_server_READ_ENTRY_REQUEST{$F} > -1"),
    Query("KA alert: read-only (its vector, unfiltered by value)", "bookie_SERVER_STATUS{$F} >= 0"),
    Query("LH overview: bookies up", 'count(count(up{job="bookie",$F}) by (instance))'),
    Query("LH jvm: CPU", "rate(process_cpu_seconds_total{$F}[1m])"),
]

# Expressions that return nothing for Apache BookKeeper 4.17 bookies either: names it no longer emits, or
# series it creates only with options off by default. Ours need not answer them.
ABSENT_IN_4_17: list[Query] = [
    Query("SN/KA: journal callback queue (removed in 4.16)", f"sum(bookie_journal_JOURNAL_CB_QUEUE_SIZE{{$F}}) {P}"),
    Query("SN: minor compactions (_COUNT, renamed _TOTAL in 4.16)", f"sum(bookie_MINOR_COMPACTION_COUNT{{$F}}) {P}"),
    Query("KA: deleted ledgers (_COUNT)", f"sum(bookie_DELETED_LEDGER_COUNT{{$F}}) {P}"),
    Query("KA compaction: active entry logs (_COUNT)", "bookie_ACTIVE_ENTRY_LOG_COUNT{$F}"),
    Query("KA compaction: active ledgers (_COUNT)", "bookie_ACTIVE_LEDGER_COUNT{$F}"),
    Query("KA compaction: major compactions (_COUNT)", "rate(bookie_MAJOR_COMPACTION_COUNT{$F}[5m])"),
    Query("KA: read cache hits (summary in 4.14)", f"sum(irate(bookie_read_cache_hits_count{{$F}}[1m])) {P}"),
    Query("KA: read cache misses (summary in 4.14)", f"sum(irate(bookie_read_cache_misses_count{{$F}}[1m])) {P}"),
    Query("KA read-use: queue gauges (4.14 only)", "bookkeeper_server_BookieReadThreadPool_queue_0{$F}"),
    Query("KA read-use: task execution (enableTaskExecutionStats only)",
          f"sum(irate(bookkeeper_server_BookieReadThreadPool_task_execution_sum{{$F}}[1m])) {P}"),
    Query("KA read-use: task queued (enableTaskExecutionStats only)",
          'bookkeeper_server_BookieReadThreadPool_task_queued{$F,success="true",quantile="0.99"}'),
    Query("SN: ledger dir usage (Pulsar chart's path)",
          "bookie_ledger_dir__pulsar_data_bookkeeper_ledgers_0_usage{$F}"),
    Query("apache/pulsar legacy: storage stats", '{__name__=~"bookie_storage_.*",$F}'),
    Query("apache/pulsar legacy: quantile=\"1\"", 'bookkeeper_server_ADD_ENTRY{$F,quantile="1"}'),
]

# The JVM's own families (LH jvm.json): Java bookies only; ours run no JVM and export process_* and python_*.
JVM_ONLY: list[Query] = [
    Query("LH jvm: heap", 'jvm_memory_bytes_used{$F,area="heap"}'),
    Query("LH jvm: committed", "jvm_memory_bytes_committed{$F}"),
    Query("LH jvm: max", "jvm_memory_bytes_max{$F}"),
    Query("LH jvm: direct memory", "jvm_memory_direct_bytes_used{$F}"),
    Query("LH jvm: direct memory max", "jvm_memory_direct_bytes_max{$F}"),
    Query("LH jvm: GC time", "rate(jvm_gc_collection_seconds_sum{$F}[1m])"),
]
