"""The local fleet playground (README's main job).

Starts a real ZooKeeper and real bookie processes on 127.0.0.x, writes ledgers through the Python client
with replication, reads them back and checks every byte, deletes some, then prints each bookie's state as
its admin REST API reports it. Everything it starts is stopped at the end (or on Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import signal
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from bookie_fleet.cache import playground_root
from bookie_fleet.local_bookies import LocalBookie, plan_bookies, start_all, stop_all
from bookie_fleet.zookeeper import ZooKeeperServer

LEDGERS_ROOT = "/ledgers"


def default_workdir() -> Path:
    return playground_root() / time.strftime("%Y%m%d-%H%M%S")


def say(text: str) -> None:
    print(text, flush=True)


def rest(bookie: LocalBookie, path: str) -> Any:
    with urllib.request.urlopen(f"{bookie.http_url}{path}", timeout=5) as response:
        return json.loads(response.read())


async def exercise(zk: ZooKeeperServer, bookies: list[LocalBookie], ledgers: int, entries: int) -> None:
    from bookie.client import BookKeeper, ClientConfig

    ensemble = min(3, len(bookies))
    quorum = min(2, ensemble)
    config = ClientConfig(zk_servers=zk.connect_string, ledgers_root=LEDGERS_ROOT)
    async with BookKeeper(config) as bk:
        written: dict[int, list[bytes]] = {}
        started = time.monotonic()
        for n in range(ledgers):
            handle = await bk.create_ledger(ensemble, quorum, quorum, password=b"playground",
                                            custom_metadata={"application": b"playground", "n": str(n).encode()})
            payloads = [f"ledger {handle.ledger_id} entry {i} ".encode() * 8 for i in range(entries)]
            await asyncio.gather(*(handle.add(p) for p in payloads))
            await handle.close()
            written[handle.ledger_id] = payloads
            ensembles = {k: list(v) for k, v in handle.metadata.ensembles.items()}
            say(f"  wrote ledger {handle.ledger_id}: {entries} entries, ensemble {ensembles[0]}")
        elapsed = time.monotonic() - started
        say(f"  {ledgers * entries} entries written with write quorum {quorum} in {elapsed:.2f}s")
        for ledger_id, payloads in written.items():
            reader = await bk.open_ledger(ledger_id, b"playground")
            got = [e.payload for e in await reader.read(0, entries - 1)]
            if got != payloads:
                raise SystemExit(f"ledger {ledger_id} read back differently")
        say(f"  read back all {ledgers} ledgers byte-identical")
        doomed = sorted(written)[: max(1, ledgers // 3)]
        for ledger_id in doomed:
            await bk.delete_ledger(ledger_id)
        remaining = await bk.list_ledgers()
        say(f"  deleted ledgers {doomed}; ledgers in metadata now: {remaining}")


def print_states(bookies: list[LocalBookie]) -> None:
    say(f"\n{'bookie':<20} {'state':<10} {'free GiB':>9} {'total GiB':>10}  reason")
    for b in bookies:
        state = rest(b, "/api/v1/bookie/state")
        info = rest(b, "/api/v1/bookie/info")
        mode = "read-only" if state["readOnly"] else "writable"
        say(f"{b.bookie_id:<20} {mode:<10} {info['freeSpace'] / 2**30:>9.1f} {info['totalSpace'] / 2**30:>10.1f}"
            f"  {state.get('readOnlyReason') or '-'}")


def run_playground(args: argparse.Namespace) -> int:
    workdir = Path(args.workdir) if args.workdir else default_workdir()
    workdir.mkdir(parents=True, exist_ok=True)
    say(f"bookie-fleet playground in {workdir}")
    zk = ZooKeeperServer(workdir / "zookeeper")
    bookies: list[LocalBookie] = []
    try:
        zk.start()
        say(f"ZooKeeper on {zk.connect_string}")
        # The admin API's mutating calls want this token (Authorization: Bearer), as on any real fleet.
        bookies = plan_bookies(args.bookies, workdir, zk.connect_string, LEDGERS_ROOT,
                               admin_token=secrets.token_urlsafe(32))
        start_all(bookies, 90)
        for b in bookies:
            say(f"bookie {b.bookie_id} ready (admin API {b.http_url}, its token in {b.admin_token_file}, "
                f"data {b.data_dir})")
        asyncio.run(exercise(zk, bookies, args.ledgers, args.entries))
        print_states(bookies)
        if args.keep_running:
            say("\nfleet running; Ctrl-C stops it")
            with contextlib.suppress(KeyboardInterrupt):
                signal.sigwait({signal.SIGINT, signal.SIGTERM})
        return 0
    except (RuntimeError, TimeoutError, OSError) as exc:
        print(f"playground failed: {exc}", file=sys.stderr)
        return 1
    finally:
        stop_all(bookies)
        zk.stop()
        say("fleet stopped")
