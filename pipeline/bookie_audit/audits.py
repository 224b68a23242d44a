"""The audits, each a DataFrame function (inputs: entry-log tables and a metadata snapshot).

Vocabulary. A (bookie, log, ledger) row of the ledgers maps is classified as:
  ``live``                 the ledger is in the snapshot and the bookie is in one of its ensembles
  ``not_in_ensemble``      the ledger is in the snapshot but not on this bookie (over-replicated: garbage that
                           BookKeeper's GC removes only with ``gcOverreplicatedLedgerWaitTime``)
  ``deleted``              the ledger is not in the snapshot: garbage, GC reclaims it
  ``newer_than_snapshot``  not in the snapshot, but its id is above every id issued when the snapshot started
                           (the id generator's high-water mark, else the snapshot's highest id) or its log was
                           written after the snapshot started: cannot tell, counted as live
Garbage bytes of a log are its ``deleted`` bytes: what BookKeeper's GC subtracts from the log's usage
(``remainingSize / totalSize``, sizes from the ledgers map = entry size + 4 per entry).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bookie.metadata.data_loss import LOST_ENTRIES_KEY, recorded_losses
from bookie.metadata.pulsar import CURSOR_KEY, MANAGED_LEDGER_KEY, MANAGED_LEDGER_NAME
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from bookie_audit.snapshot import Manifest

LIVE = "live"
NOT_IN_ENSEMBLE = "not_in_ensemble"
DELETED = "deleted"
NEWER = "newer_than_snapshot"
DAY_MS = 86_400_000

DEFAULT_MINOR = (0.1, 0.2, 0.3, 0.4)
DEFAULT_MAJOR = (0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass(frozen=True)
class Snapshot:
    ledgers: DataFrame
    fragments: DataFrame
    manifest: Manifest


def load_snapshot(spark: SparkSession, snapshot_dir: str, manifest: Manifest) -> Snapshot:
    """The snapshot's tables, read on the driver and handed to Spark as data: executors need no access to the
    snapshot directory (Spark on Kubernetes shares nothing but the network)."""
    import pyarrow.parquet as pq

    base = snapshot_dir.rstrip("/")
    ledgers = pq.read_table(f"{base}/ledgers.parquet").drop_columns(["password"])  # digests travel on their own
    return Snapshot(spark.createDataFrame(ledgers), spark.createDataFrame(pq.read_table(f"{base}/fragments.parquet")),
                    manifest)


def ledger_bookies(fragments: DataFrame) -> DataFrame:
    """(ledger_id, bookie) for every bookie in any ensemble of the ledger."""
    return (fragments.select("ledger_id", F.explode("ensemble").alias("bookie")).distinct())


def classify(ledger_map: DataFrame, snap: Snapshot) -> DataFrame:
    """Ledgers-map rows (metadata mode) with ``class`` (see the module docstring) and ``in_metadata``."""
    known = snap.ledgers.select("ledger_id", F.lit(True).alias("in_metadata"))
    members = ledger_bookies(snap.fragments).withColumn("in_ensemble", F.lit(True))
    started = snap.manifest.started_ms
    rows = (ledger_map.join(known, "ledger_id", "left")
            .join(members, ["ledger_id", "bookie"], "left")
            .withColumn("in_metadata", F.coalesce("in_metadata", F.lit(False)))
            .withColumn("in_ensemble", F.coalesce("in_ensemble", F.lit(False))))
    return rows.withColumn("class", F.when(F.col("ledger_id").isNull(), F.lit(None))
                           .when(F.col("in_metadata") & F.col("in_ensemble"), LIVE)
                           .when(F.col("in_metadata"), NOT_IN_ENSEMBLE)
                           .when((F.col("ledger_id") > snap.manifest.newest_known_id)
                                 | (F.col("mtime_ms") >= started), NEWER)
                           .otherwise(DELETED))


def _bytes_of(cls: str) -> Any:
    return F.sum(F.when(F.col("class") == cls, F.col("bytes")).otherwise(0))


def usage_by_log(classified: DataFrame, as_of_ms: int) -> DataFrame:
    """Per log: total / live / garbage bytes, usage, age; ``state`` dead (GC deletes it), partial, live, empty."""
    logs = (classified.groupBy("bookie", "path", "log_id")
            .agg(F.first("file_size").alias("file_size"), F.first("mtime_ms").alias("mtime_ms"),
                 F.first("source").alias("source"),
                 F.max(F.when(F.col("status") != "ok", F.col("status"))).alias("flag"),
                 F.coalesce(F.sum("bytes"), F.lit(0)).cast("long").alias("total_bytes"),
                 _bytes_of(DELETED).cast("long").alias("garbage_bytes"),
                 _bytes_of(NOT_IN_ENSEMBLE).cast("long").alias("overreplicated_bytes"),
                 _bytes_of(NEWER).cast("long").alias("unknown_bytes"),
                 F.count(F.when(F.col("class") == LIVE, 1)).alias("live_ledgers"),
                 F.count(F.when(F.col("class") != DELETED, 1)).alias("pinning_ledgers"),
                 F.count("ledger_id").alias("ledgers")))
    return (logs.withColumn("live_bytes", F.col("total_bytes") - F.col("garbage_bytes"))
            .withColumn("usage", F.when(F.col("total_bytes") > 0,
                                        F.col("live_bytes") / F.col("total_bytes")).otherwise(F.lit(0.0)))
            .withColumn("age_days", (F.lit(as_of_ms) - F.col("mtime_ms")) / F.lit(DAY_MS))
            .withColumn("state", F.when(F.col("total_bytes") == 0, "empty")
                        .when(F.col("live_bytes") == 0, "dead")
                        .when(F.col("garbage_bytes") == 0, "live").otherwise("partial")))


def usage_by_bookie(logs: DataFrame) -> DataFrame:
    return (logs.groupBy("bookie")
            .agg(F.count("*").alias("logs"),
                 F.count(F.when(F.col("state") == "dead", 1)).alias("dead_logs"),
                 F.count(F.when(F.col("state") == "partial", 1)).alias("partial_logs"),
                 F.sum("file_size").alias("file_bytes"), F.sum("total_bytes").alias("total_bytes"),
                 F.sum("live_bytes").alias("live_bytes"), F.sum("garbage_bytes").alias("garbage_bytes"),
                 F.sum(F.when(F.col("state") == "dead", F.col("file_size")).otherwise(0))
                 .alias("dead_log_file_bytes"),
                 F.sum(F.when(F.col("state") == "dead", F.col("total_bytes")).otherwise(0)).alias("dead_log_bytes"),
                 F.sum("overreplicated_bytes").alias("overreplicated_bytes"),
                 F.max("age_days").alias("oldest_log_days"),
                 F.count(F.col("flag")).alias("flagged_logs"))
            .orderBy("bookie"))


def pulsar_owner(custom_metadata: Any) -> Any:
    """The Pulsar topic of a ledger (null for a ledger without Pulsar's metadata), from its custom metadata
    map: ``bookie.metadata.pulsar.pulsar_owner`` as a Spark expression."""
    name = custom_metadata.getItem(MANAGED_LEDGER_KEY)
    matched = name.rlike(MANAGED_LEDGER_NAME.pattern)
    topic = F.when(matched, F.concat(F.regexp_extract(name, MANAGED_LEDGER_NAME.pattern, 2), F.lit("://"),
                                     F.regexp_extract(name, MANAGED_LEDGER_NAME.pattern, 1), F.lit("/"),
                                     F.coalesce(F.try_url_decode(F.regexp_extract(name, MANAGED_LEDGER_NAME.pattern,
                                                                                   3)),
                                                F.regexp_extract(name, MANAGED_LEDGER_NAME.pattern, 3))
                                     )).otherwise(name)
    cursor = custom_metadata.getItem(CURSOR_KEY)
    return F.when(cursor.isNotNull(), F.concat(topic, F.lit(" (cursor "), cursor, F.lit(")"))).otherwise(topic)


def pinning(classified: DataFrame, logs: DataFrame, snap: Snapshot, min_age_days: float) -> DataFrame:
    """For logs older than ``min_age_days`` that GC cannot delete, the ledgers keeping them, ranked.

    ``pinned_garbage_bytes``: garbage held in those logs (freed only by compaction or once every pinning
    ledger is gone); ``sole_pinner_logs``: old logs in which this ledger is the only one left; ``topic``: the
    Pulsar topic the ledger stores, when a Pulsar broker wrote it (``pulsar_owner``).
    """
    old = logs.filter((F.col("age_days") >= min_age_days) & (F.col("state") != "dead")
                      & (F.col("state") != "empty")).select(
        "bookie", "path", "garbage_bytes", "age_days", "pinning_ledgers")
    pins = (classified.filter(F.col("class").isNotNull() & (F.col("class") != DELETED))
            .select("bookie", "path", "ledger_id", "bytes", "class")
            .join(old, ["bookie", "path"]))
    ledgers = snap.ledgers.select(
        "ledger_id", "state", "ctime", pulsar_owner(F.col("custom_metadata")).alias("topic"),
        F.to_json(F.col("custom_metadata")).alias("custom_metadata"))
    return (pins.groupBy("ledger_id")
            .agg(F.first("class").alias("class"), F.countDistinct("bookie").alias("bookies"),
                 F.count("*").alias("old_logs"),
                 F.count(F.when(F.col("pinning_ledgers") == 1, 1)).alias("sole_pinner_logs"),
                 F.sum("bytes").alias("live_bytes"), F.sum("garbage_bytes").alias("pinned_garbage_bytes"),
                 F.max("age_days").alias("oldest_log_days"))
            .join(ledgers, "ledger_id", "left")
            .orderBy(F.desc("pinned_garbage_bytes"), F.desc("live_bytes"), "ledger_id"))


def compaction_whatif(spark: SparkSession, logs: DataFrame, minor: Sequence[float] = DEFAULT_MINOR,
                      major: Sequence[float] = DEFAULT_MAJOR) -> DataFrame:
    """Per bookie and (minor, major) threshold pair: bytes reclaimed and rewritten by each kind of pass.

    As BookKeeper: a log with usage 0 is deleted outright (no compaction needed, nothing rewritten); a log
    is compacted when ``0 < usage < threshold``: its garbage is reclaimed and its live bytes rewritten.
    The major pass (run after the minor one) takes the logs with ``minor <= usage < major``. Pairs with
    minor > major are not valid settings and are left out.
    """
    grid = spark.createDataFrame(
        [(float(m), float(M)) for m in minor for M in major if m <= M],
        T.StructType([T.StructField("minor_threshold", T.DoubleType()),
                      T.StructField("major_threshold", T.DoubleType())]))
    live_logs = logs.filter(F.col("total_bytes") > 0)
    x = live_logs.crossJoin(F.broadcast(grid))
    dead = F.col("usage") <= 0
    in_minor = ~dead & (F.col("usage") < F.col("minor_threshold"))
    in_major = ~dead & ~in_minor & (F.col("usage") < F.col("major_threshold"))

    def total(cond: Any, col: str) -> Any:
        return F.sum(F.when(cond, F.col(col)).otherwise(0)).cast("long")

    out = (x.groupBy("bookie", "minor_threshold", "major_threshold")
           .agg(total(dead, "total_bytes").alias("deleted_bytes"),
                F.count(F.when(in_minor, 1)).alias("minor_logs"),
                total(in_minor, "garbage_bytes").alias("minor_reclaimed_bytes"),
                total(in_minor, "live_bytes").alias("minor_rewritten_bytes"),
                F.count(F.when(in_major, 1)).alias("major_logs"),
                total(in_major, "garbage_bytes").alias("major_reclaimed_bytes"),
                total(in_major, "live_bytes").alias("major_rewritten_bytes")))
    out = (out.withColumn("reclaimed_bytes", F.col("deleted_bytes") + F.col("minor_reclaimed_bytes")
                          + F.col("major_reclaimed_bytes"))
           .withColumn("rewritten_bytes", F.col("minor_rewritten_bytes") + F.col("major_rewritten_bytes"))
           .withColumn("write_amplification",
                       F.when(F.col("reclaimed_bytes") > 0,
                              F.col("rewritten_bytes") / F.col("reclaimed_bytes")).otherwise(F.lit(0.0))))
    return out.orderBy("bookie", "minor_threshold", "major_threshold")


def orphans(classified: DataFrame) -> DataFrame:
    """Ledgers on a bookie's disk that metadata does not place there: deleted, not in ensemble, newer."""
    return (classified.filter(F.col("class").isin(DELETED, NOT_IN_ENSEMBLE, NEWER))
            .groupBy("bookie", "ledger_id", "class")
            .agg(F.sum("bytes").alias("bytes"), F.count("*").alias("logs"),
                 F.min("mtime_ms").alias("oldest_log_mtime_ms"), F.max("mtime_ms").alias("newest_log_mtime_ms"))
            .orderBy(F.desc("bytes"), "bookie", "ledger_id"))


def found_entries(records: DataFrame) -> DataFrame:
    """(bookie, ledger_id, entry_id) of every good record of a full scan, once per bookie."""
    return (records.filter((F.col("status") == "ok") & F.col("entry_id").isNotNull() & (F.col("entry_id") >= 0))
            .select("bookie", "ledger_id", "entry_id").distinct())


def expected_entries(found: DataFrame, snap: Snapshot) -> DataFrame:
    """(ledger_id, entry_id, write_set, write_quorum) for every entry the metadata says exists.

    Closed ledgers: entries up to their last entry id. Open or recovering ledgers have no last entry id in
    metadata: their last fragment is taken to end at the highest entry found on any bookie.
    """
    max_found = found.groupBy("ledger_id").agg(F.max("entry_id").alias("max_found"))
    frags = (snap.fragments.join(max_found, "ledger_id", "left")
             .withColumn("last", F.coalesce(F.col("last_entry_id"),
                                           F.greatest(F.col("max_found"), F.col("first_entry_id") - 1),
                                           F.col("first_entry_id") - 1))
             .filter(F.col("last") >= F.col("first_entry_id")))
    entries = frags.select("ledger_id", "ensemble", "ensemble_size", "write_quorum",
                           F.explode(F.sequence("first_entry_id", "last")).alias("entry_id"))
    write_set = F.expr("transform(sequence(0, write_quorum - 1), "
                       "i -> element_at(ensemble, cast(pmod(entry_id + i, ensemble_size) as int) + 1))")
    return entries.select("ledger_id", "entry_id", "write_quorum", write_set.alias("write_set"))


def replication(found: DataFrame, snap: Snapshot, scanned_bookies: Sequence[str]) -> DataFrame:
    """Per expected entry: replicas found in its write set vs the write quorum, and copies elsewhere.

    ``status``: ``ok`` (replicas >= write quorum), ``under`` (some but fewer), ``missing`` (no replica on any
    bookie of its write set, all of them scanned: data loss), ``given_up`` (no replica either, but in a range the
    ledger's metadata records as given up on purpose when a dead bookie was decommissioned with its loss
    accepted: a known hole, not a new loss), ``unverified`` (the missing replicas are on bookies whose logs were
    not given). ``misplaced`` counts copies on bookies outside the write set (over-replication: garbage).
    """
    expected = expected_entries(found, snap)
    copies = found.groupBy("ledger_id", "entry_id").agg(F.collect_set("bookie").alias("found_on"))
    scanned = F.array(*[F.lit(b) for b in sorted(set(scanned_bookies))]) if scanned_bookies else \
        F.array().cast("array<string>")
    joined = (expected.join(copies, ["ledger_id", "entry_id"], "left")
              .withColumn("found_on", F.coalesce("found_on", F.array().cast("array<string>"))))
    replicas = F.size(F.array_intersect("write_set", "found_on"))
    unscanned = F.size(F.array_except("write_set", scanned))
    out = (_mark_given_up(joined, snap).withColumn("replicas", replicas)
           .withColumn("misplaced", F.size(F.array_except("found_on", "write_set")))
           .withColumn("unscanned", unscanned))
    none_found = (F.col("replicas") == 0) & (F.col("unscanned") == 0)
    return out.withColumn("status", F.when(F.col("replicas") >= F.col("write_quorum"), "ok")
                          .when(F.col("replicas") + F.col("unscanned") >= F.col("write_quorum"), "unverified")
                          .when(none_found & F.col("given_up"), "given_up")
                          .when(none_found, "missing")
                          .otherwise("under")).drop("given_up")


def _mark_given_up(entries: DataFrame, snap: Snapshot) -> DataFrame:
    """``entries`` with ``given_up``: the entry lies in a range its ledger's metadata records as given up
    (``bookie.metadata.data_loss``). Few ledgers carry such a record: they are read on the driver, their ranges
    parsed by the code that writes them, and joined back as a small table."""
    recorded = (snap.ledgers.select("ledger_id", F.col("custom_metadata").getItem(LOST_ENTRIES_KEY).alias("lost"))
                .filter(F.col("lost").isNotNull()).collect())
    ranges = [(row.ledger_id, r.first, r.last) for row in recorded for r in recorded_losses(row.lost)]
    if not ranges:
        return entries.withColumn("given_up", F.lit(False))
    schema = T.StructType([T.StructField("ledger_id", T.LongType()), T.StructField("first", T.LongType()),
                           T.StructField("last", T.LongType())])
    table = entries.sparkSession.createDataFrame(ranges, schema)
    inside = (F.col("entry_id") >= F.col("first")) & (F.col("last").isNull() | (F.col("entry_id") <= F.col("last")))
    hits = (entries.select("ledger_id", "entry_id").join(table, "ledger_id").filter(inside)
            .select("ledger_id", "entry_id").distinct().withColumn("given_up", F.lit(True)))
    return (entries.join(hits, ["ledger_id", "entry_id"], "left")
            .withColumn("given_up", F.coalesce("given_up", F.lit(False))))


def replication_by_ledger(entries: DataFrame, snap: Snapshot) -> DataFrame:
    def n(status: str) -> Any:
        return F.count(F.when(F.col("status") == status, 1))

    per = (entries.groupBy("ledger_id")
           .agg(F.count("*").alias("entries"), n("ok").alias("ok"), n("under").alias("under"),
                n("missing").alias("missing"), n("given_up").alias("given_up"), n("unverified").alias("unverified"),
                F.count(F.when(F.col("misplaced") > 0, 1)).alias("over_replicated"),
                F.sum("misplaced").alias("misplaced_copies")))
    meta = snap.ledgers.select("ledger_id", "state", "write_quorum", "ensemble_size",
                               F.to_json(F.col("custom_metadata")).alias("custom_metadata"))
    return per.join(meta, "ledger_id", "left").orderBy(F.desc("missing"), F.desc("under"), "ledger_id")


def flagged(ledger_map: DataFrame, records: DataFrame | None) -> DataFrame:
    """Corrupt or truncated logs and records found by either reading."""
    from_map = (ledger_map.filter(F.col("status") != "ok")
                .select("bookie", "path", "log_id", F.lit(None).cast("long").alias("offset"),
                        F.lit(None).cast("long").alias("size"), "status", "error", F.lit("metadata").alias("mode"))
                .distinct())
    if records is None:
        return from_map
    from_scan = (records.filter(F.col("status") != "ok")
                 .select("bookie", "path", "log_id", "offset", "size", "status", "error",
                         F.lit("scan").alias("mode")))
    return from_map.unionByName(from_scan).orderBy("bookie", "path", "mode", "offset")
