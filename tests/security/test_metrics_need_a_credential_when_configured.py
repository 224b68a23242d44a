"""With ``httpServerMetricsTokenFile``, /metrics (whose ``topic`` and ``ledger`` labels name the fleet's topics)
needs a credential on the admin API's port and on the dedicated metrics port alike: one of the metrics tokens,
the read token or the admin token. A metrics token reads /metrics and nothing else. Without the key, /metrics
stays open, as Apache BookKeeper's is (tests/security/test_admin_api_scopes.py). Our real bookie over HTTP; the
bookie holds the metrics token as its hash, as the operator gives it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bookie_fleet.local_bookies import LocalBookie, start_all
from bookie_fleet.processes import free_port

from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.bookies import BookieFactory
from tests.support.rest import call

METRICS_TOKEN = "test-metrics-token-0123456789abcdef"
READ_TOKEN = "test-read-token-abcdef0123456789"
WRONG_TOKEN = "not-a-token-of-this-bookie-0123"


def _token_file(path: Path, token: str) -> str:
    path.write_text(f"# Prometheus\nsha256:{hashlib.sha256(token.encode()).hexdigest()}\n")
    return str(path)


def _bookie(bookie_factory: BookieFactory, tmp_path: Path, **overrides: str) -> tuple[LocalBookie, str]:
    """A bookie serving /metrics on its admin port and on a port of its own; returns it and that port's URL."""
    bookie = bookie_factory(1, start=False)[0]
    port = free_port(bookie.address)
    bookie.overrides.update(prometheusStatsHttpEnable=True, prometheusStatsHttpPort=port,
                            prometheusStatsHttpAddress=bookie.address,
                            httpServerReadTokenFile=_token_file(tmp_path / "read", READ_TOKEN), **overrides)
    start_all([bookie], 90)
    return bookie, f"http://{bookie.address}:{port}"


async def test_metrics_need_one_of_the_bookies_tokens_on_both_ports(bookie_factory: BookieFactory,
                                                                    tmp_path: Path) -> None:
    bookie, dedicated = _bookie(bookie_factory, tmp_path,
                                httpServerMetricsTokenFile=_token_file(tmp_path / "metrics", METRICS_TOKEN))
    for base in (bookie.http_url, dedicated):
        for method in ("GET", "HEAD"):
            for token in (None, WRONG_TOKEN):
                refused = await call(method, f"{base}/metrics", token=token)
                assert refused.status == 401, (base, method, token, refused.status, refused.text)
            for token in (METRICS_TOKEN, READ_TOKEN, TEST_ADMIN_TOKEN):
                answered = await call(method, f"{base}/metrics", token=token)  # HEAD: 405 on the admin port
                assert answered.status not in (401, 403), (base, method, token, answered.status, answered.text)
        scraped = await call("GET", f"{base}/metrics", token=METRICS_TOKEN)
        assert "bookie_SERVER_STATUS" in scraped.text, scraped.text[:500]


async def test_a_metrics_token_reads_nothing_else(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie, _ = _bookie(bookie_factory, tmp_path,
                        httpServerMetricsTokenFile=_token_file(tmp_path / "metrics", METRICS_TOKEN))
    for path in ("/api/v1/bookie/entry_logs", "/api/v1/config/server_config", "/api/v1/ledger/list"):
        refused = await call("GET", bookie.http_url + path, token=METRICS_TOKEN)
        assert refused.status == 403 and "metrics scope" in refused.text, (path, refused.status, refused.text)
    refused = await call("PUT", bookie.http_url + "/api/v1/bookie/state/readonly", token=METRICS_TOKEN,
                         body={"readOnly": True})
    assert refused.status == 403, refused.text
    state = await call("GET", bookie.http_url + "/api/v1/bookie/state/readonly", token=None)
    assert state.status == 200 and json.loads(state.text)["readOnly"] is False, state.text
    assert (await call("GET", bookie.http_url + "/heartbeat", token=None)).status == 200, "probes stay open"


async def test_without_metrics_tokens_metrics_stay_open(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie, dedicated = _bookie(bookie_factory, tmp_path)
    for base in (bookie.http_url, dedicated):
        assert (await call("GET", f"{base}/metrics", token=None)).status == 200
