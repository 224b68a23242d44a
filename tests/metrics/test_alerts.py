"""The chart's alert rules, as rendered by helm, loaded in a real Prometheus that scrapes real bookies: silent
on a healthy fleet; each fires in the scenario made for it (a full disk, a stopped bookie, an old log pinned
by a live ledger, a quarantined log, GC meeting a stopped ZooKeeper, ledgers under-replicated after a bookie
was killed). ``for`` is 0 s here so that a test
waits for one evaluation only."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from bookie.storage import entrylog_format as ef
from bookie_fleet.local_bookies import LocalBookie
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.gc.gcutil import GC_OVERRIDES, client, current_dir, gc_now, log_sizes, rest, write_ledger
from tests.metrics.alerts import rule_file
from tests.metrics.fleet_dashboard import panel_queries
from tests.metrics.prometheus import Prometheus, Target
from tests.support.bookies import BookieFactory

NO_WAIT = {key: "0s" for key in ("diskFor", "readOnlyFor", "entryLogAgeFor", "gcFailingFor", "quarantineFor",
                                 "quorumFor", "underReplicatedFor")}


class Watch:
    """A Prometheus over some bookies, each labelled with a cluster and a pod name."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.prometheus: Prometheus | None = None

    def start(self, clusters: dict[str, list[LocalBookie]], **alerts: str) -> Prometheus:
        targets = [Target(f"{b.address}:{b.http_port}", {"cluster": cluster, "kubernetes_pod_name": f"{cluster}-{i}"})
                   for cluster, bookies in clusters.items() for i, b in enumerate(bookies)]
        rules = rule_file(self.base / "rules.yaml", **{**NO_WAIT, **alerts})
        self.prometheus = Prometheus(self.base / "prometheus", targets, [rules], scrape_interval_s=1).start()
        return self.prometheus


@pytest.fixture
def watch(tmp_path: Path) -> Iterator[Watch]:
    w = Watch(tmp_path)
    try:
        yield w
    finally:
        if w.prometheus is not None:
            w.prometheus.stop()


def firing(prometheus: Prometheus, cluster: str) -> set[str]:
    return {a["labels"]["alertname"] for a in prometheus.alerts()
            if a["state"] == "firing" and a["labels"].get("cluster") == cluster}


async def wait_firing(prometheus: Prometheus, cluster: str, alert: str, within: float = 120) -> None:
    deadline = time.monotonic() + within
    while alert not in firing(prometheus, cluster):
        assert time.monotonic() < deadline, f"{alert} did not fire for {cluster}: {prometheus.alerts()}"
        await asyncio.sleep(1)


async def wait_scraped(prometheus: Prometheus, expr: str, within: float = 120) -> None:
    deadline = time.monotonic() + within
    while not prometheus.query(expr):
        assert time.monotonic() < deadline, \
            f"no data for {expr}; status: {prometheus.query('bookie_SERVER_STATUS')}, {prometheus.targets_up()}"
        await asyncio.sleep(1)


async def test_silent_on_a_healthy_fleet_then_full_disk_and_stopped_bookie(bookie_factory: BookieFactory,
                                                                          watch: Watch) -> None:
    healthy = bookie_factory(3)
    full = bookie_factory(1, diskUsageThreshold=0.01, diskUsageWarnThreshold=0.005)
    prometheus = watch.start({"healthy": healthy.bookies, "full": full.bookies}, writableQuorum="3",
                             entryLogAgeLimitSeconds="3600")
    await wait_scraped(prometheus, 'count(bookie_SERVER_STATUS{cluster="healthy"} == 1) == 3')
    await wait_firing(prometheus, "full", "BookieDiskAboveHighWaterMark")
    await wait_firing(prometheus, "full", "BookieReadOnly")
    await asyncio.sleep(5)  # several evaluations of every rule on the healthy bookies
    assert firing(prometheus, "healthy") == set()
    assert not [a for a in prometheus.alerts() if a["labels"].get("cluster") == "healthy"], "not even pending"

    healthy[2].stop()
    await wait_firing(prometheus, "healthy", "BookieNoWritableQuorum")


async def test_old_log_pinned_by_a_live_ledger(bookie_factory: BookieFactory, watch: Watch) -> None:
    cluster = bookie_factory(1, **GC_OVERRIDES)
    bookie = cluster[0]
    prometheus = watch.start({"pinned": [bookie]}, entryLogAgeLimitSeconds="20", writableQuorum="1")
    async with client(cluster) as bk:
        await write_ledger(bk, 20, 4096, 1)  # live: it keeps its entry log
    bookie.restart()  # the log is finished; a new one is active
    await gc_now(bookie)
    await wait_scraped(prometheus, 'bookie_OLDEST_ENTRY_LOG_AGE_SECONDS{cluster="pinned"} > 0')
    assert "BookieEntryLogTooOld" not in firing(prometheus, "pinned"), "younger than the limit yet"
    await wait_firing(prometheus, "pinned", "BookieEntryLogTooOld")


async def test_quarantined_log(bookie_factory: BookieFactory, watch: Watch) -> None:
    cluster = bookie_factory(1, **GC_OVERRIDES)
    bookie = cluster[0]
    prometheus = watch.start({"quarantine": [bookie]}, writableQuorum="1")
    async with client(cluster) as bk:
        before = set(log_sizes(bookie))
        dead, _ = await write_ledger(bk, 20, 4096, 1)
        await write_ledger(bk, 20, 4096, 2)
        await wait_scraped(prometheus, 'bookie_SERVER_STATUS{cluster="quarantine"} == 1')
        await asyncio.sleep(3)  # several evaluations while every log is readable
        assert "BookieQuarantinedEntryLogs" not in firing(prometheus, "quarantine")
        bookie.stop()
        (log_id,) = set(log_sizes(bookie)) - before
        # No ledgers map and a negative record size: GC cannot tell what the log holds and quarantines it
        # (the start-up scan of finished logs may find it first; either way the alert fires).
        path = current_dir(bookie) / ef.log_file_name(log_id)
        data = bytearray(path.read_bytes())
        data[ef.MAP_LOCATION_OFFSET:ef.MAP_LOCATION_OFFSET + 12] = bytes(12)
        second = list(ef.iter_records(bytes(data)))[1]
        data[second.offset:second.offset + 4] = (-7).to_bytes(4, "big", signed=True)
        path.write_bytes(bytes(data))
        bookie.start()
        await bk.delete_ledger(dead)
        await gc_now(bookie)
    await wait_firing(prometheus, "quarantine", "BookieQuarantinedEntryLogs")
    assert path.exists(), "a quarantined log is kept, never deleted"


async def test_gc_cycles_failing_while_zookeeper_is_down(bookie_factory: BookieFactory,
                                                         zookeeper_factory: Callable[[], ZooKeeperServer],
                                                         watch: Watch) -> None:
    zk = zookeeper_factory()
    cluster = bookie_factory(1, metadataServiceUri=f"zk+hierarchical://{zk.connect_string}/gc-failing/ledgers",
                             zkTimeout=4000, **GC_OVERRIDES)
    bookie = cluster[0]
    prometheus = watch.start({"gc": [bookie]}, writableQuorum="1")
    await wait_scraped(prometheus, 'bookie_GC_METADATA_ERROR_TOTAL{cluster="gc"} == 0')
    await asyncio.sleep(3)
    assert "BookieGcCyclesFailing" not in firing(prometheus, "gc")
    zk.stop()
    try:
        gc_url = f"{bookie.http_url}/api/v1/bookie/gc"
        await rest("PUT", gc_url, {})
        deadline = time.monotonic() + 60
        while (await rest("GET", gc_url))["is_in_force_gc"] == "true":
            assert time.monotonic() < deadline, "the forced GC cycle did not end"
            await asyncio.sleep(0.2)
        await wait_firing(prometheus, "gc", "BookieGcCyclesFailing")
    finally:
        zk.start()


async def test_under_replicated_ledgers_after_a_bookie_is_killed(bookie_factory: BookieFactory,
                                                                 watch: Watch) -> None:
    # Ensembles of all three bookies: once one is gone, no spare bookie can take its copies, so the
    # ledgers stay under-replicated.
    cluster = bookie_factory(3, autoRecoveryDaemonEnabled=True)
    prometheus = watch.start({"replicas": cluster.bookies}, writableQuorum="1")
    async with client(cluster) as bk:
        for _ in range(2):
            handle = await bk.create_ledger(3, 3, 3, password=b"ur")
            await asyncio.gather(*(handle.append(bytes(1024)) for _ in range(10)))
            await handle.close()
    gauge = 'replication_auditor_NUM_UNDER_REPLICATED_LEDGERS_GUAGE{cluster="replicas"}'
    await wait_scraped(prometheus, f"{gauge} == 0")
    assert len(prometheus.query(gauge)) == 1, "only the elected auditor exports it"
    await asyncio.sleep(3)
    assert "BookieUnderReplicatedLedgers" not in firing(prometheus, "replicas")

    cluster[2].kill()
    await wait_firing(prometheus, "replicas", "BookieUnderReplicatedLedgers")
    (sample,) = prometheus.query(gauge)
    assert sample["value"][1] == "2", "both ledgers held the killed bookie"
    recorded = prometheus.query('replication_auditor_NUM_UNDER_REPLICATED_LEDGERS_sum{cluster="replicas",'
                                'success="true"} > 0')
    assert [s["value"][1] for s in recorded] == ["2"], "one audit marked the two ledgers, once"
    (panel,) = panel_queries("Under-replicated ledgers", 'cluster=~"replicas"')
    assert [(s["metric"], s["value"][1]) for s in prometheus.query(panel)] == [({"cluster": "replicas"}, "2")]
