"""The playground's first look: the question the product answers, without Kubernetes, in a couple of minutes.

ZooKeeper, three of our bookies on 127.0.0.x and a real Apache Pulsar broker (``bookie_fleet.workload``): the
broker's producers write three topics at once, so every entry log holds entries of all three; the messages of
two expire and Pulsar deletes their ledgers; GC runs on every bookie, and the disks stay full. Each bookie's
explain endpoint (``GET /api/v1/bookie/entry_logs``) and ``bookie_pinned_garbage_bytes`` then say which topic's
ledgers keep which entry logs. On a fresh machine ``scripts/playground`` runs it while the local Kubernetes
binaries build, then goes on to the operator's story (``bookie_fleet.story``) with the same workload.

Everything it starts is stopped at the end, on Ctrl-C, or on failure.
"""

from __future__ import annotations

import secrets
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bookie_fleet.bookie_rest import (
    add_pinning,
    finished_logs,
    pinned_garbage,
    pinning_line,
    run_gc,
    wait_ledgers_deleted,
)
from bookie_fleet.local_bookies import LocalBookie, plan_bookies, start_all, stop_all
from bookie_fleet.workload import EXPIRING, KEPT, TOPICS, PulsarWorkload, topic_name
from bookie_fleet.zookeeper import ZooKeeperServer

LEDGERS_ROOT = "/ledgers"
# Entry logs roll at 4 MiB, so a few tens of megabytes leave many finished logs, each with entries of all three
# topics; GC runs when the first look asks for it (as gcWaitTime would on schedule), compaction never.
BOOKIE_SETTINGS = {"logSizeLimit": 4 * 2**20, "flushInterval": 1000, "gcWaitTime": 3_600_000,
                   "minorCompactionInterval": 0, "majorCompactionInterval": 0}


@dataclass(frozen=True)
class FirstLookSizes:
    written_bytes: int = 48 * 2**20   # what the producers send in all
    rate_bytes_per_s: float = 8 * 2**20
    message_kb: int = 32              # messages of 1 byte to this size


def say(text: str) -> None:
    print(text, flush=True)


class FirstLook:
    def __init__(self, workdir: Path, sizes: FirstLookSizes) -> None:
        self.workdir, self.sizes = workdir, sizes
        self.zk = ZooKeeperServer(workdir / "zookeeper")
        self.bookies: list[LocalBookie] = []
        self.workload: PulsarWorkload | None = None
        self.token = secrets.token_urlsafe(32)
        self.started = time.monotonic()

    def elapsed(self) -> str:
        return f"[{time.monotonic() - self.started:5.0f}s]"

    def run(self) -> dict[str, dict[str, int]]:
        """The steps; returns, per topic, the entry logs its ledgers keep and the garbage in them."""
        self.zk.start()
        self.bookies = plan_bookies(3, self.workdir, self.zk.connect_string, LEDGERS_ROOT, admin_token=self.token,
                                    **BOOKIE_SETTINGS)
        start_all(self.bookies, 90)
        say(f"{self.elapsed()} ZooKeeper {self.zk.connect_string}, bookies "
            f"{', '.join(b.bookie_id for b in self.bookies)}")
        self.workload = PulsarWorkload(self.workdir / "pulsar", self.zk.connect_string, LEDGERS_ROOT)
        broker = self.workload.start()
        say(f"{self.elapsed()} Apache Pulsar broker {broker.service_url}; topics "
            f"{', '.join(topic_name(t) for t in TOPICS)}")
        self.fill()
        deleted = self.workload.expire()
        urls = {b.bookie_id: b.http_url for b in self.bookies}
        wait_ledgers_deleted(next(iter(urls.values())), self.token, deleted, 120)
        say(f"{self.elapsed()} the messages of {' and '.join(EXPIRING)} expired: Pulsar deleted {len(deleted)} "
            f"ledgers; {', '.join(KEPT)} keeps {len(self.workload.ledgers(next(iter(KEPT))))}")
        return self.explain(urls)

    def fill(self) -> None:
        assert self.workload is not None
        self.workload.produce(self.sizes.rate_bytes_per_s, self.sizes.message_kb * 1024)
        deadline = time.monotonic() + 300
        while self.workload.written_bytes() < self.sizes.written_bytes:
            if time.monotonic() > deadline:
                raise TimeoutError(f"Pulsar received {self.workload.written_bytes()} bytes in 5 minutes, fewer "
                                   f"than {self.sizes.written_bytes}")
            time.sleep(1)
        acknowledged = self.workload.stop_producing()
        say(f"{self.elapsed()} Pulsar's producers wrote {self.workload.written_bytes() / 2**20:.1f} MiB "
            f"({acknowledged} messages acknowledged)")

    def explain(self, urls: dict[str, str]) -> dict[str, dict[str, int]]:
        run_gc(urls, self.token, 120)
        say(f"{self.elapsed()} GC ran on every bookie, yet the disks stay full; each bookie's explain endpoint "
            "says why:")
        pinning: dict[str, dict[str, int]] = {}
        for bookie, url in urls.items():
            logs = finished_logs(url, self.token)
            add_pinning(pinning, logs)
            size = sum(log["sizeBytes"] for log in logs)
            live = sum(log["remainingBytes"] for log in logs)
            say(f"   {bookie}: {len(logs)} entry logs of {size / 2**20:.1f} MiB hold {live / 2**20:.1f} MiB of "
                f"live entries; {pinning_line(logs)}")
        series = pinned_garbage(urls) or []
        for g in series[:3]:
            say(f"   bookie_pinned_garbage_bytes{{ledger=\"{g['ledger']}\",topic=\"{g['topic']}\"}} "
                f"{g['bytes'] / 2**20:.1f} MiB on {g['pod']}")
        return pinning

    def close(self) -> None:
        if self.workload is not None:
            self.workload.close()
        stop_all(self.bookies)
        self.zk.stop()


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def run_first_look(workdir: Path, sizes: FirstLookSizes | None = None) -> int:
    workdir.mkdir(parents=True, exist_ok=True)
    say(f"bookie-fleet first look (no Kubernetes) in {workdir}")
    look = FirstLook(workdir, sizes or FirstLookSizes())
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        pinning = look.run()
        if not pinning:
            raise RuntimeError("no bookie named a ledger that keeps its entry logs")
        topic, figures = max(pinning.items(), key=lambda kv: kv[1]["garbage_bytes"])
        say(f"{look.elapsed()} the answer: {topic} keeps {figures['logs']} entry logs holding "
            f"{figures['garbage_bytes'] / 2**20:.1f} MiB of garbage (compaction, or its retention, frees them)")
        return 0
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"first look failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    finally:
        look.close()
        say("first look stopped")
