"""A static render of the fleet dashboard (helm/bookie-operator/files/bookie-dashboard.json) from real data:
three of our bookies under a write load with ledgers created and deleted (so GC deletes and compacts), scraped
by Debian's Prometheus; each panel's queries are read back over the run (query_range) and drawn as SVG (the storage
audit's plotting code), then Chromium takes the screenshot recorded in docs/monitoring.md.

    python bench/render_dashboard.py [--seconds 150] [--out docs/images/monitoring-dashboard.png]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from html import escape
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bookie_audit import plots
from bookie_fleet.monitoring import LightLoad, metrics_address, start_mixed_fleet
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.metrics.prometheus import Prometheus, Target

ROOT = Path(__file__).resolve().parents[1]
DASHBOARD = ROOT / "helm" / "bookie-operator" / "files" / "bookie-dashboard.json"
CHROMIUM = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars"]
GC: dict[str, Any] = {
    "logSizeLimit": 512 * 1024, "gcWaitTime": 15000, "minorCompactionInterval": 20, "majorCompactionInterval": 40,
    "minorCompactionThreshold": 0.3, "majorCompactionThreshold": 0.8, "compactionRateByEntries": 100000,
    "compactionReadRateByBytes": 0, "gcEntryLogDeletionPauseMs": 0,
    "autoRecoveryDaemonEnabled": True,  # the auditor's under-replicated ledgers (none here: every bookie stays)
}


def churn(zk_connect: str, root: str, stop: threading.Event) -> None:
    """Ledgers written then mostly deleted, so that entry logs fill with garbage for GC to reclaim."""
    async def run() -> None:
        from bookie.client import BookKeeper, ClientConfig

        async with BookKeeper(ClientConfig(zk_servers=zk_connect, ledgers_root=root)) as bk:
            kept = 0
            while not stop.is_set():
                handle = await bk.create_ledger(2, 2, 2, password=b"churn")
                await asyncio.gather(*(handle.append(b"g" * 4096) for _ in range(100)))
                await handle.close()
                kept += 1
                if kept % 4:
                    await bk.delete_ledger(handle.ledger_id)
                await asyncio.sleep(0.5)

    asyncio.run(run())


def unit_format(unit: str) -> Any:
    if unit in ("bytes", "Bps"):
        return plots.human_bytes
    if unit == "percentunit":
        return lambda v: f"{v:.0%}"
    if unit == "s":
        return lambda v: f"{v:.0f} s"
    return lambda v: f"{v:g}"


def panel_svg(prometheus: Prometheus, panel: dict[str, Any], start: float, end: float) -> str:
    series: dict[str, list[tuple[float, float]]] = {}
    for target in panel["targets"]:
        expr = target["expr"].replace('cluster=~"$cluster"', 'cluster=~"demo"')
        data = prometheus.api("query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step="5")
        for s in data["result"]:
            legend = target["legendFormat"]
            for k, v in s["metric"].items():
                legend = legend.replace("{{" + k + "}}", v)
            legend = re.sub(r"\{\{\w+\}\}", "", legend).strip()  # a label the series lacks: empty, as in Grafana
            series[legend[:40]] = [(float(t) - start, float(v)) for t, v in s["values"] if v not in ("NaN",)]
    if not series:
        series = {"(no data: nothing to show on this fleet)": [(0.0, 0.0), (end - start, 0.0)]}
    unit = panel["fieldConfig"]["defaults"]["unit"]
    plot = plots.lines(panel["title"], series, "seconds into the run", unit, yfmt=unit_format(unit))
    return f"<div><h4>{escape(panel['title'])}</h4>{plot}</div>"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--out", default=str(ROOT / "docs" / "images" / "monitoring-dashboard.png"))
    args = parser.parse_args()
    dashboard = json.loads(DASHBOARD.read_text())
    with tempfile.TemporaryDirectory(prefix="dashboard-") as tmp:
        base = Path(tmp)
        zk = ZooKeeperServer(base / "zk").start()
        try:
            root = f"/demo-{uuid.uuid4().hex[:8]}/ledgers"
            fleet = start_mixed_fleet(base, zk.connect_string, root, java=0, ours=3, first_host=131, **GC)
            prometheus = None
            stop = threading.Event()
            try:
                targets = [Target(metrics_address(b), {"cluster": "demo", "job": "bookie",
                                                       "kubernetes_pod_name": f"bookie-{i}"})
                           for i, b in enumerate(fleet.bookies)]
                prometheus = Prometheus(base / "prometheus", targets, scrape_interval_s=2).start()
                start = time.time()
                load = LightLoad(zk.connect_string, root, 3).start()
                churner = threading.Thread(target=churn, args=(zk.connect_string, root, stop), daemon=True)
                churner.start()
                time.sleep(args.seconds)
                stop.set()
                load.stop()
                churner.join(60)
                end = time.time()
                svgs = [panel_svg(prometheus, p, start, end) for p in dashboard["panels"]]
            finally:
                if prometheus is not None:
                    prometheus.stop()
                fleet.stop()
        finally:
            zk.stop()
        page = base / "dashboard.html"
        page.write_text("<!doctype html><html><head><meta charset='utf-8'><style>body{font-family:sans-serif;"
                        "margin:16px} .grid{display:grid;grid-template-columns:repeat(2,680px);gap:12px}</style>"
                        f"</head><body><h2>{escape(dashboard['title'])}</h2><p>3 bookies, "
                        f"{args.seconds:.0f} s of writes and ledger deletions, rendered from Prometheus"
                        f"</p><div class='grid'>{''.join(svgs)}</div></body></html>")
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        chromium = shutil.which("chromium") or "/usr/bin/chromium"
        rows = (len(svgs) + 1) // 2
        subprocess.run([chromium, *CHROMIUM, f"--user-data-dir={base / 'profile'}", f"--screenshot={out}",
                        f"--window-size=1420,{200 + rows * 400}", page.as_uri()], check=True, capture_output=True,
                       timeout=180)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
