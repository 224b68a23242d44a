"""The whole audit: read logs and snapshot, run every audit, write Parquet tables, a summary and the report."""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, TextIO

from bookie_audit import audits, bookie_http
from bookie_audit.files import AuditInputError, LogFile, LogInput, discover_bookies
from bookie_audit.rest_bookies import RestBookie, rest_table
from bookie_audit.snapshot import Manifest, read_manifest

TOP_PINNING = 5
TABLES = ("ledger_map", "records", "usage_logs", "usage_bookies", "pinning", "compaction_whatif", "orphans",
          "replication_ledgers", "replication_problems", "flagged", "rest_bookies")


@dataclass
class AuditOptions:
    logs: Sequence[LogInput]
    metadata: str
    out: str
    mode: str = "full"  # full: metadata + scan (replication); metadata: ledgers maps only
    min_age_days: float = 7.0
    minor: Sequence[float] = audits.DEFAULT_MINOR
    major: Sequence[float] = audits.DEFAULT_MAJOR
    split_bytes: int = 128 << 20
    max_snapshot_lag_s: float = 600.0
    as_of_ms: int | None = None
    keep_records: bool = False  # write records.parquet (one row per record: large)
    # bookies whose logs cannot be read (Apache BookKeeper's): their REST API and the snapshot only
    rest_bookies: Sequence[RestBookie] = ()
    # credential and CA of bookie+https:// inputs and REST calls (bookie_audit.bookie_http)
    bookie_token_file: str | None = None
    bookie_ca_file: str | None = None


@dataclass
class Summary:
    bookies: list[str]
    logs: int
    log_bytes: int
    as_of_ms: int
    snapshot_started_ms: int
    snapshot_ledgers: int
    mode: str
    totals: dict[str, int] = field(default_factory=dict)
    states: dict[str, int] = field(default_factory=dict)
    replication: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    garbage_by_bookie: dict[str, int] = field(default_factory=dict)  # what GC and compaction can give back
    top_pinning: list[dict[str, Any]] = field(default_factory=list)  # the ledgers pinning the most garbage
    elapsed_s: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


class Progress:
    """Steps with elapsed time, and the running Spark stage's task counts (a status line on a terminal)."""

    def __init__(self, spark: Any, stream: TextIO | None = None, interval_s: float = 1.0) -> None:
        self.spark = spark
        self.stream = stream or sys.stderr
        self.interval_s = interval_s
        self.t0 = time.monotonic()
        self.step = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())

    def __enter__(self) -> Progress:
        self._thread = threading.Thread(target=self._poll, name="audit-progress", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._tty:
            self.stream.write("\r\033[K")
        self.say(f"done in {time.monotonic() - self.t0:.1f}s")

    def say(self, text: str) -> None:
        prefix = "\r\033[K" if self._tty else ""
        self.stream.write(f"{prefix}[bookie-audit {time.monotonic() - self.t0:6.1f}s] {text}\n")
        self.stream.flush()

    def begin(self, step: str) -> None:
        self.step = step
        self.say(step)

    def _poll(self) -> None:
        last_print = 0.0
        while not self._stop.wait(self.interval_s):
            try:
                tracker = self.spark.sparkContext.statusTracker()
                parts = []
                for stage_id in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(stage_id)
                    if info is not None:
                        parts.append(f"stage {stage_id}: {info.numCompletedTasks}/{info.numTasks} tasks")
            except Exception:  # the context is stopping
                return
            if not parts:
                continue
            line = f"  {self.step}: " + ", ".join(parts)
            if self._tty:
                self.stream.write(f"\r\033[K{line}")
                self.stream.flush()
            elif time.monotonic() - last_print > 10:
                self.stream.write(line + "\n")
                last_print = time.monotonic()


def _save(df: Any, path: str) -> None:
    """Write a result table from the driver (pyarrow), so executors need no file system shared with it (Spark on
    Kubernetes); the tables are aggregates or the ledgers maps, which the driver can hold."""
    import pyarrow.parquet as pq

    if os.path.isdir(path):  # an earlier run's table written by Spark (a directory of part files)
        shutil.rmtree(path)
    pq.write_table(df.toArrow(), path)


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def run_audit(spark: Any, opts: AuditOptions, progress: Progress | None = None) -> Summary:
    """Run every audit and write ``opts.out``: Parquet tables, ``summary.json``, ``report.html``."""
    t0 = time.monotonic()
    say: Callable[[str], None] = progress.begin if progress else (lambda _s: None)
    if opts.mode not in ("full", "metadata"):
        raise AuditInputError(f"mode must be 'full' or 'metadata', not {opts.mode!r}")
    manifest = read_manifest(opts.metadata)
    bookie_http.configure(opts.bookie_token_file, opts.bookie_ca_file)
    say("listing entry logs")
    # Raises a clear AuditInputError on empty input; bookies known by their REST API alone need no logs.
    files, bookies = discover_bookies(opts.logs) if opts.logs or not opts.rest_bookies else ([], [])
    as_of = opts.as_of_ms if opts.as_of_ms is not None else manifest.started_ms
    summary = Summary(bookies, len(files), sum(f.size for f in files), as_of, manifest.started_ms,
                      manifest.ledgers, opts.mode)
    if manifest.underreplicated:
        summary.totals["underreplicated_marks"] = len(manifest.underreplicated)
    os.makedirs(opts.out, exist_ok=True)
    if files:
        _audit_logs(spark, opts, manifest, files, summary, say)
    if opts.rest_bookies:
        say(f"{len(opts.rest_bookies)} bookies by their REST API and the metadata snapshot only")
        _audit_rest(opts, manifest, summary)
    summary.findings = findings(opts.out, summary)
    summary.elapsed_s = round(time.monotonic() - t0, 2)
    with open(os.path.join(opts.out, "summary.json"), "w") as f:
        f.write(summary.to_json())
    say("report")
    from bookie_audit.report import write_report

    write_report(opts.out)
    return summary


def _audit_rest(opts: AuditOptions, manifest: Manifest, summary: Summary) -> None:
    import pyarrow.parquet as pq

    table = rest_table(opts.rest_bookies, opts.metadata, [*manifest.bookies, *manifest.readonly_bookies],
                       manifest.underreplicated)
    pq.write_table(table, os.path.join(opts.out, "rest_bookies.parquet"))
    for row in table.to_pylist():
        if row["bookie"] not in summary.bookies:
            summary.bookies.append(row["bookie"])
        if row["error"]:
            summary.warnings.append(f"bookie {row['bookie']}: its REST API did not answer: {row['error']}")
    summary.bookies.sort()
    rows = table.to_pylist()
    summary.totals["rest_bookies"] = len(rows)
    summary.totals["rest_entry_logs"] = sum(r["entry_logs"] or 0 for r in rows)
    summary.totals["rest_expected_bytes"] = sum(r["expected_bytes"] or 0 for r in rows)
    summary.totals["rest_unexplained_bytes"] = sum(r["unexplained_bytes"] or 0 for r in rows)


def _audit_logs(spark: Any, opts: AuditOptions, manifest: Manifest, files: list[LogFile], summary: Summary,
                say: Callable[[str], None]) -> None:
    """Every audit of the entry logs (ledgers maps, and in full mode every record); fills ``summary``."""
    from pyspark.sql import functions as F

    bookies = summary.bookies
    as_of = summary.as_of_ms
    newest = max(f.mtime_ms for f in files)
    lag_s = (newest - manifest.started_ms) / 1000
    if lag_s > opts.max_snapshot_lag_s:
        summary.warnings.append(
            f"stale snapshot: the metadata snapshot was taken {lag_s:.0f}s before the newest entry log was "
            f"written; ledgers missing from it in newer logs are counted as '{audits.NEWER}', not as garbage "
            "(take a fresh snapshot for exact numbers)")
    if manifest.ledgers == 0:
        summary.warnings.append("the metadata snapshot holds no ledgers: every ledger on disk is garbage")
    if manifest.vanished:
        summary.warnings.append(f"{len(manifest.vanished)} ledgers were deleted while the snapshot was taken")
    logs_json = json.dumps([{"path": i.path, "bookie": i.bookie} for i in opts.logs])

    def out(name: str) -> str:
        return os.path.join(opts.out, f"{name}.parquet")

    snap = audits.load_snapshot(spark, opts.metadata, manifest)
    say(f"reading headers and ledgers maps of {len(files)} logs on {len(bookies)} bookies")
    credentials = {k: v for k, v in (("bookieTokenFile", opts.bookie_token_file),
                                     ("bookieCaFile", opts.bookie_ca_file)) if v}
    ledger_map = (spark.read.format("entrylog").options(**credentials).option("mode", "metadata")
                  .option("logs", logs_json)
                  .option("partitions", str(max(2, spark.sparkContext.defaultParallelism * 2))).load())
    ledger_map = ledger_map.localCheckpoint()  # read once: every audit below starts from these rows
    _save(ledger_map, out("ledger_map"))

    say("usage per log and per bookie")
    classified = audits.classify(ledger_map, snap).cache()
    usage_logs = audits.usage_by_log(classified, as_of)
    usage_logs = usage_logs.localCheckpoint()
    _save(usage_logs, out("usage_logs"))
    _save(audits.usage_by_bookie(usage_logs), out("usage_bookies"))
    say(f"pinning (logs older than {opts.min_age_days:g} days)")
    _save(audits.pinning(classified, usage_logs, snap, opts.min_age_days), out("pinning"))
    say("compaction what-if")
    _save(audits.compaction_whatif(spark, usage_logs, opts.minor, opts.major), out("compaction_whatif"))
    say("orphans")
    _save(audits.orphans(classified), out("orphans"))

    records = None
    if opts.mode == "full":
        say("full scan of every record (replication)")
        records = (spark.read.format("entrylog").options(**credentials).option("mode", "scan")
                   .option("logs", logs_json)
                   .option("splitBytes", str(opts.split_bytes)).option("digests", os.path.abspath(opts.metadata))
                   .load())
        if opts.keep_records:  # written by the executors: --out must be a file system they all share
            records.write.mode("overwrite").parquet(out("records"))
            records = spark.read.parquet(out("records"))
        else:
            from pyspark import StorageLevel

            records = records.select("bookie", "path", "log_id", "offset", "size", "ledger_id", "entry_id",
                                     "checksum_ok", "status", "error").persist(StorageLevel.MEMORY_AND_DISK)
        say("replication vs write quorum")
        found = audits.found_entries(records)
        entries = audits.replication(found, snap, bookies).cache()
        _save(audits.replication_by_ledger(entries, snap), out("replication_ledgers"))
        _save(entries.filter((F.col("status") != "ok") | (F.col("misplaced") > 0)).orderBy("ledger_id", "entry_id"),
              out("replication_problems"))
        counts = {r["status"]: int(r["count"]) for r in entries.groupBy("status").count().collect()}
        counts["over_replicated"] = entries.filter(F.col("misplaced") > 0).count()
        counts["checksum_failures"] = records.filter(F.col("checksum_ok") == F.lit(False)).count()
        summary.replication = counts
        entries.unpersist()
    _save(audits.flagged(ledger_map, records), out("flagged"))
    if records is not None:
        records.unpersist()

    say("summary")
    import pyarrow.parquet as pq

    ub = pq.read_table(out("usage_bookies")).to_pylist()
    summary.garbage_by_bookie = {row["bookie"]: int(row["garbage_bytes"] or 0) for row in ub}
    summary.top_pinning = [{k: row.get(k) for k in ("ledger_id", "topic", "pinned_garbage_bytes", "old_logs")}
                           for row in pq.read_table(out("pinning")).to_pylist()[:TOP_PINNING]]
    for key in ("file_bytes", "total_bytes", "live_bytes", "garbage_bytes", "dead_log_file_bytes",
                "dead_log_bytes", "overreplicated_bytes", "logs", "dead_logs", "partial_logs", "flagged_logs"):
        summary.totals[key] = int(sum((row[key] or 0) for row in ub))
    ul = pq.read_table(out("usage_logs"), columns=["state"]).column("state").to_pylist()
    summary.states = {s: ul.count(s) for s in sorted(set(ul))}
    summary.totals["flagged"] = pq.read_table(out("flagged")).num_rows
    classified.unpersist()


def _read(out_dir: str, table: str) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq

    path = os.path.join(out_dir, f"{table}.parquet")
    return pq.read_table(path).to_pylist() if os.path.exists(path) else []


def findings(out_dir: str, summary: Summary) -> list[str]:
    """The few lines an operator reads first."""
    found: list[str] = []
    t = summary.totals
    if t.get("dead_logs"):
        found.append(f"{t['dead_logs']} entry logs hold only deleted ledgers ({_human(t['dead_log_file_bytes'])}):"
                     " GC deletes them on its next run")
    if t.get("garbage_bytes"):
        found.append(f"{_human(t['garbage_bytes'])} of {_human(t['total_bytes'])} in entry logs is garbage "
                     f"({100 * t['garbage_bytes'] / max(t['total_bytes'], 1):.1f}%)")
    pins = _read(out_dir, "pinning")
    if pins:
        top = pins[0]
        if top.get("topic"):
            meta = f" (topic {top['topic']})"
        else:
            meta = f" {top['custom_metadata']}" if top.get("custom_metadata") not in (None, "{}") else ""
        found.append(f"ledger {top['ledger_id']}{meta} pins {top['old_logs']} old logs holding "
                     f"{_human(top['pinned_garbage_bytes'] or 0)} of garbage")
    whatif = _read(out_dir, "compaction_whatif")
    if whatif:
        best: dict[tuple[float, float], list[int]] = {}
        for row in whatif:
            acc = best.setdefault((row["minor_threshold"], row["major_threshold"]), [0, 0])
            acc[0] += row["reclaimed_bytes"]
            acc[1] += row["rewritten_bytes"]
        (mi, ma), (rec, rew) = max(best.items(), key=lambda kv: (kv[1][0], -kv[1][1]))
        found.append(f"compaction with minor {mi:g} / major {ma:g} would reclaim {_human(rec)}, "
                     f"rewriting {_human(rew)}")
    orph = _read(out_dir, "orphans")
    if orph:
        kinds: dict[str, int] = {}
        for row in orph:
            kinds[row["class"]] = kinds.get(row["class"], 0) + 1
        found.append("ledgers on disk not placed there by metadata: "
                     + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items())))
    for row in _read(out_dir, "rest_bookies"):
        if row["unexplained_bytes"]:
            found.append(f"bookie {row['bookie']} (REST API only, entry logs not readable): "
                         f"{_human(row['disk_used_bytes'])} used on its ledger disk, metadata places about "
                         f"{_human(row['expected_bytes'])} there: up to {_human(row['unexplained_bytes'])} of garbage "
                         "(with the journal, index and other files on that disk)")
    if t.get("underreplicated_marks"):
        found.append(f"{t['underreplicated_marks']} ledgers are marked under-replicated in ZooKeeper "
                     "(autorecovery has not re-replicated them yet)")
    r = summary.replication
    if r.get("missing"):
        found.append(f"DATA LOSS: {r['missing']} entries have no replica on any bookie of their write set")
    if r.get("given_up"):
        found.append(f"{r['given_up']} entries have no replica in ranges their ledgers' metadata records as given "
                     "up (a dead bookie decommissioned with its loss accepted): known, not new")
    if r.get("under"):
        found.append(f"{r['under']} entries have fewer replicas than their write quorum")
    if r.get("over_replicated"):
        found.append(f"{r['over_replicated']} entries have copies outside their write set (garbage)")
    if t.get("flagged"):
        statuses: dict[str, int] = {}
        for row in _read(out_dir, "flagged"):
            statuses[row["status"]] = statuses.get(row["status"], 0) + 1
        by_status = ", ".join(f"{n} {k}" for k, n in sorted(statuses.items()))
        found.append(f"{t['flagged']} flagged spans in entry logs ({by_status}; see flagged.parquet)")
    return found


def print_summary(summary: Summary, stream: TextIO) -> None:
    t = summary.totals
    stream.write(f"bookie-audit: {summary.logs} entry logs ({_human(summary.log_bytes)}) on "
                 f"{len(summary.bookies)} bookies, snapshot of {summary.snapshot_ledgers} ledgers, "
                 f"mode {summary.mode}, {summary.elapsed_s:.1f}s\n")
    stream.write(f"  live {_human(t.get('live_bytes', 0))}, garbage {_human(t.get('garbage_bytes', 0))}, "
                 f"logs by state: {', '.join(f'{k} {v}' for k, v in summary.states.items())}\n")
    if summary.replication:
        stream.write("  replication: " + ", ".join(f"{k} {v}" for k, v in sorted(summary.replication.items()))
                     + "\n")
    for w in summary.warnings:
        stream.write(f"WARNING: {w}\n")
    for line in summary.findings:
        stream.write(f"  * {line}\n")
