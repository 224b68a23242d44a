"""What the playground's bookies say about their disks, over their admin REST API and ``/metrics``: a GC cycle
on demand, the entry logs and the ledgers keeping them (``GET /api/v1/bookie/entry_logs``, with Pulsar topics),
the ledgers pinning the most garbage (``bookie_pinned_garbage_bytes``)."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from typing import Any

_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def rest(base: str, path: str, method: str = "GET", body: Any = None, token: str | None = None) -> Any:
    """One admin API call; ``token``: the admin token, which calls that change state need."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(f"{base}{path}", data=data, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=60) as response:
        text = response.read().decode()
    return json.loads(text) if text.strip() else None


def run_gc(urls: dict[str, str], token: str, timeout: float) -> None:
    """One GC cycle on every bookie, ledger GC only (no compaction: ``forceMajor``/``forceMinor`` false), waited
    for; ``token``: the bookies' admin token."""
    for url in urls.values():
        rest(url, "/api/v1/bookie/gc", "PUT", {"forceMajor": False, "forceMinor": False}, token)
    deadline = time.monotonic() + timeout
    for pod, url in urls.items():
        while rest(url, "/api/v1/bookie/gc")["is_in_force_gc"] == "true":
            if time.monotonic() > deadline:
                raise TimeoutError(f"the GC cycle of {pod} did not end in {timeout:.0f} s")
            time.sleep(0.5)


def wait_ledgers_deleted(url: str, token: str, ledger_ids: list[int], timeout: float) -> None:
    """Until none of ``ledger_ids`` has metadata any more (the bookie's ``GET /api/v1/ledger/metadata`` answers
    404). A Pulsar broker drops a ledger from its topic first and deletes it in BookKeeper afterwards, on its
    own: a GC cycle started in between would still see the ledger and keep its entries."""
    deadline = time.monotonic() + timeout
    pending = list(ledger_ids)
    while pending:
        pending = [lid for lid in pending if _has_metadata(url, token, lid)]
        if not pending:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"ledgers {pending} still have metadata {timeout:.0f} s after Pulsar dropped them")
        time.sleep(0.5)


def _has_metadata(url: str, token: str, ledger_id: int) -> bool:
    try:
        rest(url, f"/api/v1/ledger/metadata?ledger_id={ledger_id}", token=token)
    except urllib.error.HTTPError as exc:
        if exc.code == 404:
            return False
        raise
    return True


def finished_logs(url: str, token: str) -> list[dict[str, Any]]:
    """The bookie's entry logs other than the one being written, with known figures (a data path: the admin
    token is needed)."""
    return [log for d in rest(url, "/api/v1/bookie/entry_logs", token=token)["ledgerDirs"] for log in d["entryLogs"]
            if not log.get("active") and "remainingBytes" in log]


def _topics(log: dict[str, Any]) -> set[str]:
    return {p.get("topic") or "ledgers of no Pulsar topic" for p in log["pinningLedgers"]}


def add_pinning(acc: dict[str, dict[str, int]], logs: list[dict[str, Any]]) -> None:
    """Per topic: the logs its ledgers keep (alone or with others) and the garbage in them."""
    for log in logs:
        for topic in _topics(log):
            entry = acc.setdefault(topic, {"logs": 0, "garbage_bytes": 0})
            entry["logs"] += 1
            entry["garbage_bytes"] += log["totalBytes"] - log["remainingBytes"]


def pinning_line(logs: list[dict[str, Any]]) -> str:
    """Which topics' ledgers keep these logs, the one keeping the most garbage first."""
    acc: dict[str, dict[str, int]] = {}
    add_pinning(acc, logs)
    parts = [f"{topic} keeps {a['logs']} of them ({a['garbage_bytes'] / 2**20:.1f} MiB of garbage)"
             for topic, a in sorted(acc.items(), key=lambda kv: -kv[1]["garbage_bytes"])[:2]]
    return "; ".join(parts) or "no live ledger"


def pinned_garbage(urls: dict[str, str]) -> list[dict[str, Any]]:
    """``bookie_pinned_garbage_bytes`` of every bookie, most first; empty until some series names a topic (a
    bookie looks the topic up after the scrape that first ranks a ledger)."""
    found = []
    for pod, url in urls.items():
        with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
            text = response.read().decode()
        for line in text.splitlines():
            if line.startswith("bookie_pinned_garbage_bytes{"):
                labels, value = line.rsplit(" ", 1)
                fields = dict(_LABEL.findall(labels))
                found.append({"pod": pod, "ledger": fields["ledger"], "topic": fields.get("topic", ""),
                              "bytes": float(value)})
    found.sort(key=lambda g: -g["bytes"])
    return found if any(g["topic"] for g in found) else []
