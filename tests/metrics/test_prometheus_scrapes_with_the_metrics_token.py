"""A real Prometheus scrapes a bookie whose /metrics needs a credential (httpServerMetricsTokenFile): the job
that presents the metrics token (a PodMonitor's ``authorization``, here ``credentials_file``) gets the bookie's
series; the job that presents none is refused (401), so a scraper without the token learns no topic name."""

from __future__ import annotations

import asyncio
import hashlib
import time
from pathlib import Path

from bookie_fleet.local_bookies import start_all
from bookie_fleet.processes import free_port

from tests.metrics.prometheus import Prometheus, Target
from tests.support.bookies import BookieFactory

METRICS_TOKEN = "prometheus-metrics-token-0123456789"


async def test_only_the_job_with_the_token_gets_the_series(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    hashes, token = tmp_path / "metrics-hashes", tmp_path / "metrics-token"
    hashes.write_text(f"sha256:{hashlib.sha256(METRICS_TOKEN.encode()).hexdigest()}\n")
    token.write_text(METRICS_TOKEN)
    bookie = bookie_factory(1, start=False)[0]
    port = free_port(bookie.address)
    bookie.overrides.update(prometheusStatsHttpEnable=True, prometheusStatsHttpPort=port,
                            prometheusStatsHttpAddress=bookie.address, httpServerMetricsTokenFile=str(hashes))
    start_all([bookie], 90)
    with_token = Target(f"{bookie.address}:{port}", {"cluster": "with-token"}, credentials_file=token)
    without = Target(f"{bookie.address}:{bookie.http_port}", {"cluster": "without"})
    prometheus = Prometheus(tmp_path / "prometheus", [without, with_token], scrape_interval_s=1).start()
    try:
        deadline = time.monotonic() + 60
        while not prometheus.query('bookie_SERVER_STATUS{cluster="with-token"}') or \
                not any(h.startswith("down") for h in prometheus.targets_up().values()):
            assert time.monotonic() < deadline, f"not scraped yet: {prometheus.targets_up()}"
            await asyncio.sleep(1)
        health = prometheus.targets_up()
        assert health[f"http://{bookie.address}:{port}/metrics"] == "up", health
        refused = health[f"http://{bookie.address}:{bookie.http_port}/metrics"]
        assert refused.startswith("down") and "401" in refused, health
        assert prometheus.query('up{cluster="without"} == 0'), "the job without the token scrapes nothing"
        assert not prometheus.query('bookie_SERVER_STATUS{cluster="without"}')
    finally:
        prometheus.stop()
