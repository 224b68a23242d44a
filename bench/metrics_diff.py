"""Print the difference between the metric families of an Apache BookKeeper bookie (Prometheus provider on)
and of ours, after the same few adds and reads on both: families only one side has, and families whose type
or label names differ. ``python bench/metrics_diff.py [--markdown]``; its output is recorded in
docs/monitoring.md.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

from bookie_fleet.monitoring import LightLoad, metrics_address, start_mixed_fleet
from bookie_fleet.zookeeper import ZooKeeperServer

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$")
_LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"\s*,?')
_SUFFIXES = ("_count", "_sum", "_bucket", "_created")


def families(text: str) -> dict[str, tuple[str, frozenset[str]]]:
    """family name -> (type, label names of its samples, ``quantile``/``le`` left out). A client_java counter
    typed ``X`` whose samples are ``X_total`` is reported as ``X_total``, the name queries use."""
    types: dict[str, str] = {}
    labels: dict[str, set[str]] = {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        name = match.group(1)
        family = next((name.removesuffix(s) for s in _SUFFIXES
                       if name.endswith(s) and name.removesuffix(s) in types), name)
        if family not in types and family.endswith("_total"):
            types[family] = types.get(family.removesuffix("_total"), "untyped")
        labels.setdefault(family, set()).update(_LABEL.findall(match.group(2) or ""))
    return {n: (types.get(n, "untyped"), frozenset(labels[n] - {"quantile", "le"})) for n in labels}


def scrape(address: str) -> str:
    with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as r:
        return str(r.read().decode())


def diff(java: dict[str, tuple[str, frozenset[str]]], ours: dict[str, tuple[str, frozenset[str]]],
         markdown: bool) -> list[str]:
    def fmt(name: str, info: tuple[str, frozenset[str]]) -> str:
        labels = ",".join(sorted(info[1]))
        return f"`{name}` ({info[0]}{'; ' + labels if labels else ''})" if markdown else \
            f"{name} {info[0]} {{{labels}}}"

    bullet = "- " if markdown else "  "
    out = [f"{'## ' if markdown else ''}Both ({len(java.keys() & ours.keys())} families), type or labels differ:"]
    out += [f"{bullet}{fmt(n, java[n])} vs ours {fmt(n, ours[n])}" for n in sorted(java.keys() & ours.keys())
            if java[n] != ours[n]]
    only_java = sorted(java.keys() - ours.keys())
    out += ["", f"{'## ' if markdown else ''}Apache BookKeeper only ({len(only_java)}):"]
    out += [f"{bullet}{fmt(n, java[n])}" for n in only_java]
    only_ours = sorted(ours.keys() - java.keys())
    out += ["", f"{'## ' if markdown else ''}Ours only ({len(only_ours)}):"]
    out += [f"{bullet}{fmt(n, ours[n])}" for n in only_ours]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--markdown", action="store_true", help="Markdown lists (for docs/monitoring.md)")
    parser.add_argument("--seconds", type=float, default=20, help="load duration before scraping")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="metrics-diff-") as tmp:
        zk = ZooKeeperServer(Path(tmp) / "zk").start()
        try:
            fleet = start_mixed_fleet(Path(tmp), zk.connect_string, f"/diff-{uuid.uuid4().hex[:8]}/ledgers",
                                      java=1, ours=1, first_host=91, rollover_s=5)
            try:
                load = LightLoad(zk.connect_string, fleet.ledgers_root, 2).start()
                time.sleep(args.seconds)
                load.stop()
                if load.error is not None:
                    print(f"load failed: {load.error!r}", file=sys.stderr)
                    return 1
                java = families(scrape(metrics_address(fleet.java[0])))
                ours = families(scrape(metrics_address(fleet.ours[0])))
            finally:
                fleet.stop()
        finally:
            zk.stop()
    print("\n".join(diff(java, ours, args.markdown)))
    return 0


if __name__ == "__main__":
    asyncio.set_event_loop_policy(None)
    sys.exit(main())
