"""Replication audit: replicas of every entry in metadata vs the write quorum of its fragment."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import pytest
from bookie.metadata.data_loss import LOST_ENTRIES_KEY
from bookie_audit import audits
from pyspark.sql import functions as F

from tests.pipeline.expected import replication_status
from tests.pipeline.fleetgen import BOOKIES


@pytest.fixture(scope="module")
def entries(spark: Any, fleet: Any, snap: Any) -> Any:
    records = spark.read.format("entrylog").option("mode", "scan").load(fleet.fleet.root)
    df = audits.replication(audits.found_entries(records), snap, BOOKIES).cache()
    yield df
    df.unpersist()


def test_every_entry_status_matches_an_independent_computation(entries: Any, fleet: Any) -> None:
    got = {(r.ledger_id, r.entry_id): (r.status, r.misplaced)
           for r in entries.select("ledger_id", "entry_id", "status", "misplaced").collect()}
    assert got == replication_status(fleet.fleet)


def test_the_planted_faults_are_found(entries: Any) -> None:
    by = Counter((r.ledger_id, r.status) for r in entries.select("ledger_id", "status").collect())
    assert by[(8, "missing")] == 1
    assert by[(7, "under")] >= 3  # bookie 2's share of entries 0-4
    assert {lid for (lid, status) in by if status != "ok"} == {7, 8}
    over = Counter(r.ledger_id for r in entries.filter("misplaced > 0").select("ledger_id").collect())
    assert over == Counter({6: 4, 10: 12})


def test_open_ledger_ends_at_the_highest_entry_found(entries: Any, fleet: Any) -> None:
    ids = sorted(r.entry_id for r in entries.filter("ledger_id = 11").select("entry_id").collect())
    assert ids == list(range(fleet.fleet.ledgers[11].entries))


def test_entries_on_bookies_not_scanned_are_unverified_not_missing(spark: Any, fleet: Any, snap: Any) -> None:
    only_two = fleet.fleet.bookie_dirs
    records = (spark.read.format("entrylog").option("mode", "scan")
               .load(only_two["127.0.0.1:3181"]))
    df = audits.replication(audits.found_entries(records), snap, ["127.0.0.1:3181"])
    statuses = {r.status for r in df.filter("ledger_id = 3").select("status").collect()}
    assert statuses <= {"ok", "unverified"} and "unverified" in statuses


def test_per_ledger_summary(entries: Any, snap: Any, fleet: Any) -> None:
    rows = {r.ledger_id: r for r in audits.replication_by_ledger(entries, snap).collect()}
    exp = replication_status(fleet.fleet)
    for lid, row in rows.items():
        mine = [s for (ll, _e), s in exp.items() if ll == lid]
        assert (row.entries, row.ok, row.under, row.missing) == (
            len(mine), sum(s == "ok" for s, _ in mine), sum(s == "under" for s, _ in mine),
            sum(s == "missing" for s, _ in mine))
    assert next(iter(rows)) == 8  # data loss first


@pytest.mark.parametrize(("record", "status"), [("gone:3181:{e}-{e}", "given_up"), ("gone:3181:{e}-", "given_up"),
                                                ("gone:3181:{n}-{n}", "missing")])
def test_a_hole_its_ledger_records_as_given_up_is_not_missing(spark: Any, fleet: Any, snap: Any, record: str,
                                                             status: str) -> None:
    """The planted lost entry of ledger 8, with a record of given-up entries in the ledger's custom metadata
    (as a forced decommission writes it): given up when the record covers it, missing when it names others."""
    records = spark.read.format("entrylog").option("mode", "scan").load(fleet.fleet.root)
    found = audits.found_entries(records)
    lost = next(e for (lid, e), (s, _) in replication_status(fleet.fleet).items() if lid == 8 and s == "missing")
    value = record.format(e=lost, n=lost + 1000)
    ledgers = snap.ledgers.withColumn("custom_metadata", F.when(
        F.col("ledger_id") == 8, F.map_concat("custom_metadata", F.create_map(F.lit(LOST_ENTRIES_KEY), F.lit(value))))
        .otherwise(F.col("custom_metadata")))
    entries = audits.replication(found, dataclasses.replace(snap, ledgers=ledgers), BOOKIES)
    by = Counter((r.ledger_id, r.status) for r in entries.select("ledger_id", "status").collect())
    assert by[(8, status)] == 1 and by[(8, "missing" if status == "given_up" else "given_up")] == 0
    assert {lid for (lid, s) in by if s != "ok"} == {7, 8}
