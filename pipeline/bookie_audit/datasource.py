"""The ``entrylog`` Spark data source (Spark 4 Python Data Source API), yielding Arrow record batches.

    spark.dataSource.register(EntryLogDataSource)
    spark.read.format("entrylog").option("mode", "metadata").load("/data/bookie-1")
    spark.read.format("entrylog").option("logs", json.dumps([{"bookie": "b1", "path": "webhdfs://nn:9870/b1"}]))
         .option("mode", "scan").option("splitBytes", str(64 << 20)).load()

Options:
  ``path`` / ``logs``  one root, or a JSON list of ``{"path": ..., "bookie": ...}`` (bookie optional)
  ``mode``            ``metadata`` (header + ledgers map: one row per log and ledger) or ``scan`` (every record)
  ``splitBytes``      scan mode: logs larger than this are read by several tasks, by offset ranges (128 MiB)
  ``partitions``      metadata mode: number of tasks the logs are spread over (default 8)
  ``bookieTokenFile``, ``bookieCaFile``  credential and CA files of ``bookie+https://`` inputs (paths valid on the
                      driver and on every executor; ``bookie_audit.bookie_http``)
  ``digests``         scan mode: a metadata snapshot directory; records are checked with their ledger's
                      digest type and password (otherwise CRC32C then CRC32 are tried)
Files are listed on the driver when the query is planned; they are opened in the Python workers. The snapshot
named by ``digests`` is read on the driver too, and its digests travel to the workers with the reader, so
executors need no access to it (Spark on Kubernetes: nothing shared but the network).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from bookie_audit import bookie_http, scan
from bookie_audit.files import AuditInputError, LogFile, LogInput, discover

DEFAULT_SPLIT_BYTES = 128 << 20
DEFAULT_PARTITIONS = 8
MODES = ("metadata", "scan")


@dataclass(frozen=True)
class LogsPartition(InputPartition):
    logs: tuple[LogFile, ...]


@dataclass(frozen=True)
class RangePartition(InputPartition):
    log: LogFile
    start: int
    end: int


def log_inputs(options: dict[str, str]) -> list[LogInput]:
    """The inputs named by the ``path`` and ``logs`` options."""
    inputs: list[LogInput] = []
    if options.get("path"):
        inputs.append(LogInput.parse(options["path"]))
    if options.get("logs"):
        try:
            items = json.loads(options["logs"])
        except json.JSONDecodeError as exc:
            raise AuditInputError(f"option 'logs' is not JSON: {exc}") from exc
        for item in items:
            if isinstance(item, str):
                inputs.append(LogInput.parse(item))
            else:
                inputs.append(LogInput(str(item["path"]), item.get("bookie")))
    return inputs


def plan_ranges(logs: Sequence[LogFile], split_bytes: int) -> list[tuple[LogFile, int, int]]:
    """Offset ranges of at most ``split_bytes``; the first range of a log starts at 0 (header checks)."""
    ranges: list[tuple[LogFile, int, int]] = []
    for log in logs:
        start = 0
        size = max(log.size, 1)
        while start < size:
            end = min(size, start + split_bytes)
            if size - end < split_bytes // 4:  # no runt range at the end
                end = size
            ranges.append((log, start, end))
            start = end
    return ranges


def spread(logs: Sequence[LogFile], parts: int) -> list[tuple[LogFile, ...]]:
    """Logs spread over ``parts`` groups, balancing sizes (largest first onto the lightest group)."""
    parts = max(1, min(parts, len(logs)))
    groups: list[list[LogFile]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for log in sorted(logs, key=lambda f: -f.size):
        i = loads.index(min(loads))
        groups[i].append(log)
        loads[i] += log.size
    return [tuple(sorted(g, key=lambda f: f.path)) for g in groups if g]


_digest_cache: dict[str, scan.DigestInfo] = {}
_digest_lock = threading.Lock()


def load_digests(snapshot_dir: str) -> scan.DigestInfo:
    """ledger id -> (digest type, password) from a snapshot's ledgers table, cached per worker process."""
    with _digest_lock:
        found = _digest_cache.get(snapshot_dir)
        if found is None:
            import pyarrow.parquet as pq

            table = pq.read_table(f"{snapshot_dir.rstrip('/')}/ledgers.parquet",
                                  columns=["ledger_id", "digest_type", "password"])
            found = {lid: (dt, pw or b"") for lid, dt, pw in zip(
                table.column("ledger_id").to_pylist(), table.column("digest_type").to_pylist(),
                table.column("password").to_pylist(), strict=True) if dt is not None}
            _digest_cache[snapshot_dir] = found
        return found


class EntryLogReader(DataSourceReader):
    def __init__(self, options: dict[str, str]) -> None:
        """Runs on the driver; the reader is then pickled to the workers with what it loaded here."""
        self.options = options
        self.mode = options.get("mode", "metadata")
        if self.mode not in MODES:  # options are lower-case keys (``splitbytes``)
            raise AuditInputError(f"entrylog mode must be one of {MODES}, not {self.mode!r}")
        bookie_http.configure(options.get("bookietokenfile") or None, options.get("bookiecafile") or None)
        snapshot = options.get("digests") or None
        self.digests: dict[int, tuple[int, bytes]] = dict(load_digests(snapshot)) if snapshot and \
            self.mode == "scan" else {}

    def partitions(self) -> Sequence[InputPartition]:
        logs = discover(log_inputs(self.options))
        if self.mode == "metadata":
            parts = int(self.options.get("partitions", DEFAULT_PARTITIONS))
            return [LogsPartition(group) for group in spread(logs, parts)]
        split = int(self.options.get("splitbytes", DEFAULT_SPLIT_BYTES))
        if split < 1024:
            raise AuditInputError(f"splitBytes must be at least 1024, not {split}")
        return [RangePartition(log, start, end) for log, start, end in plan_ranges(logs, split)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        bookie_http.configure(self.options.get("bookietokenfile") or None, self.options.get("bookiecafile") or None)
        if isinstance(partition, LogsPartition):
            yield from scan.ledger_rows(list(partition.logs))
            return
        assert isinstance(partition, RangePartition)
        checker = scan.DigestChecker(self.digests)
        yield from scan.record_rows(partition.log, partition.start, partition.end, checker)


class EntryLogDataSource(DataSource):
    """``spark.read.format("entrylog")``: BookKeeper entry logs as rows (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "entrylog"

    def schema(self) -> str:
        return scan.RECORD_DDL if self.options.get("mode") == "scan" else scan.LEDGER_DDL

    def reader(self, schema: StructType) -> EntryLogReader:
        # Spark hands options over with lower-case keys.
        return EntryLogReader({str(k).lower(): v for k, v in dict(self.options).items()})


def arrow_schema(mode: str) -> Any:
    return scan.RECORD_SCHEMA if mode == "scan" else scan.LEDGER_SCHEMA
