"""A mixed fleet to compare monitoring: Apache BookKeeper bookies with their Prometheus provider on, and ours,
on one ledgers root; a light write/read load; and where each serves ``/metrics``.

Java bookies serve ``/metrics`` from the provider's own Jetty server on ``prometheusStatsHttpPort`` (their admin
HTTP server stays off, as BookKeeper then requires); ours serve it on the admin port.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie_fleet.java_bookies import JavaBookie, plan_java_bookies
from bookie_fleet.local_bookies import LocalBookie, plan_bookies
from bookie_fleet.processes import BookieProcess, free_port, start_all, stop_all

PROMETHEUS_PROVIDER = "org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider"
# What Pulsar's and KAAP's charts run, and what the dashboards are drawn for (BookKeeper's default is
# SortedLedgerStorage, whose stats have other names); ours has the same design.
DB_LEDGER_STORAGE = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"


def java_prometheus_overrides(bookie: JavaBookie, rollover_s: int) -> None:
    """Turn on BookKeeper's Prometheus provider on its own port (BookKeeper binds it on every interface)."""
    bookie.overrides.update({
        "statsProviderClass": PROMETHEUS_PROVIDER, "enableStatistics": True,
        "prometheusStatsHttpEnable": True, "prometheusStatsHttpAddress": "0.0.0.0",
        "prometheusStatsHttpPort": free_port("0.0.0.0"), "prometheusStatsLatencyRolloverSeconds": rollover_s,
    })


def metrics_address(bookie: BookieProcess) -> str:
    """host:port of the bookie's ``/metrics``."""
    if isinstance(bookie, JavaBookie):
        return f"{bookie.address}:{bookie.overrides['prometheusStatsHttpPort']}"
    if isinstance(bookie, LocalBookie):
        return f"{bookie.address}:{bookie.http_port}"
    raise TypeError(f"not a bookie this fleet starts: {bookie!r}")


@dataclass
class MixedFleet:
    zk_connect: str
    ledgers_root: str
    java: list[JavaBookie] = field(default_factory=list)
    ours: list[LocalBookie] = field(default_factory=list)

    @property
    def bookies(self) -> list[JavaBookie | LocalBookie]:
        return [*self.java, *self.ours]

    def stop(self) -> None:
        stop_all(self.bookies)


def start_mixed_fleet(base: Path, zk_connect: str, ledgers_root: str, *, java: int = 3, ours: int = 3,
                      first_host: int = 81, rollover_s: int = 5, **overrides: Any) -> MixedFleet:
    """``java`` Apache BookKeeper bookies on 127.0.0.<first_host...>, then ``ours``; the same quantile window
    (``prometheusStatsLatencyRolloverSeconds``) on both."""
    _init_cluster(zk_connect, ledgers_root)
    fleet = MixedFleet(zk_connect, ledgers_root)
    fleet.java = plan_java_bookies(java, base / "java", zk_connect, ledgers_root, first_host=first_host,
                                   ledgerStorageClass=DB_LEDGER_STORAGE, **overrides)
    for b in fleet.java:
        java_prometheus_overrides(b, rollover_s)
    fleet.ours = plan_bookies(ours, base / "ours", zk_connect, ledgers_root, first_host=first_host + java,
                              prometheusStatsLatencyRolloverSeconds=rollover_s, **overrides)
    try:
        start_all(fleet.bookies, 180)
    except BaseException:
        fleet.stop()
        raise
    return fleet


def _init_cluster(zk_connect: str, ledgers_root: str) -> None:
    """Java bookies need the cluster's layout in ZooKeeper before they start (ours create it themselves)."""
    from bookie.metadata.store import MetadataStore

    async def init() -> None:
        async with MetadataStore(zk_connect, ledgers_root) as store:
            await store.init_cluster()

    runner = threading.Thread(target=lambda: asyncio.run(init()))  # its own loop, whether or not one runs here
    runner.start()
    runner.join()


class LightLoad:
    """One ledger striped over every bookie of the fleet (write quorum half the ensemble, so that every bookie
    gets entries and reads rotate over them): an entry every ``period_s``, each read back once, until stopped."""

    def __init__(self, zk_connect: str, ledgers_root: str, ensemble: int, period_s: float = 0.05) -> None:
        self.zk_connect, self.ledgers_root, self.ensemble, self.period_s = zk_connect, ledgers_root, ensemble, period_s
        self.added = 0
        self.read = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), name="light-load", daemon=True)

    def start(self) -> LightLoad:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)

    async def _run(self) -> None:
        from bookie.client import BookKeeper, ClientConfig

        config = ClientConfig(zk_servers=self.zk_connect, ledgers_root=self.ledgers_root,
                              zk_session_timeout_ms=6000, add_timeout_s=10.0, read_timeout_s=10.0)
        try:
            async with BookKeeper(config) as bk:
                # Write quorum below the ensemble: write sets (and so reads, which are not sticky then) rotate.
                quorum = max(1, self.ensemble // 2)
                lh = await bk.create_ledger(self.ensemble, quorum, quorum, password=b"load")
                while not self._stop.is_set():
                    entry = await lh.add(b"m" * 512)
                    self.added += 1
                    await lh.read_entry(entry)
                    self.read += 1
                    await asyncio.sleep(self.period_s)
                await lh.close()
        except BaseException as exc:  # reported by the fixture: a load that died explains empty panels
            self.error = exc
