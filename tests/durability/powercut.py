"""A real bookie process whose journal and ledger directories are on the power-loss file system, and the
checks the power-loss tests share.

A cut is: the bookie's process group SIGKILLed (by the file system itself, before a chosen operation, or by the
test), then every change it had not made durable thrown away (``PowerLossFs.cut``). ``restart`` brings the
same bookie back on what is left, as a machine would after the power came back.

The tests restart a bookie after every cut, so restarts are made quick: each uses a spare process started
ahead (an interpreter that has imported the bookie already, most of a start's time, and waits for its go on
stdin, then serves with the bookie's configuration as ``bookie serve`` would), and the cut removes the dead
bookie's registration from ZooKeeper, which would otherwise hold it until the session timed out and the new
process waited for that.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import random
import subprocess
import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bookie.client import BookKeeper, ClientConfig
from bookie.metadata.layout import ZkLayout
from bookie_fleet.local_bookies import LocalBookie, plan_bookies
from bookie_fleet.zookeeper import ZooKeeperServer
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.bookies import TEST_OVERRIDES
from tests.support.java_client import java_command
from tests.support.powerloss.mount import PowerLossFs

PASSWORD = b"powercut"
_zones = itertools.count()
_hosts = itertools.count(random.randrange(200, 240))

# Small files and caches, so a few hundred adds roll journals and entry logs and fill the write cache: cuts land
# in every kind of file operation.
POWERCUT_OVERRIDES: dict[str, Any] = {
    **TEST_OVERRIDES, "flushInterval": 500, "journalPreAllocSizeMB": 1, "journalMaxSizeMB": 1,
    "logSizeLimit": 256 * 1024, "dbStorage_writeCacheMaxSizeMb": 1, "journalMaxGroupWaitMSec": 1,
}


@dataclass
class PowerCutBookie:
    fs: PowerLossFs
    zone: str
    bookie: LocalBookie
    zk_connect: str
    ledgers_root: str
    cuts: list[dict[str, Any]] = field(default_factory=list)
    _spare: subprocess.Popen[bytes] | None = None

    @property
    def zone_dir(self) -> Path:
        return self.fs.mountpoint / self.zone

    @property
    def journal_dir(self) -> Path:
        return self.zone_dir / "journal"

    @property
    def ledger_dirs(self) -> list[Path]:
        return [Path(p) for p in str(self.bookie.overrides["ledgerDirectories"]).split(",")]

    def configure(self, ledger_dirs: int = 1, **overrides: Any) -> None:
        dirs = [self.zone_dir / f"ledgers{i}" for i in range(ledger_dirs)]
        self.bookie.overrides.update(overrides, ledgerDirectories=",".join(map(str, dirs)))

    def client(self) -> BookKeeper:
        return BookKeeper(ClientConfig(zk_servers=self.zk_connect, ledgers_root=self.ledgers_root,
                                       add_timeout_s=5, read_timeout_s=5, connect_timeout_s=2))

    def start(self) -> None:
        self.bookie.start()

    @property
    def pid(self) -> int:
        assert self.bookie.proc is not None, "the bookie is not running"
        return self.bookie.proc.pid

    def arm(self, after: int | None, match: str = "") -> None:
        """Cut the power before the ``after``-th change in the zone matching ``match`` (None: only count)."""
        self.fs.arm(self.zone, after, self.pid, match)

    def seen(self) -> int:
        return int(self.fs.armed(self.zone)["seen"])

    async def cut(self, seed: int | None = None) -> dict[str, Any]:
        """Finish a power cut: the process killed if the file system has not done it yet, then the unsynced
        changes dropped (all of them, or with ``seed`` a random subset of the dirty pages kept: ``model``).
        Returns what the file system says of it (``at``: the operation it was cut before)."""
        armed = self.fs.armed(self.zone)
        await asyncio.to_thread(self.bookie.kill)
        await asyncio.to_thread(self._forget_registration)
        report = {**self.fs.cut(self.zone, seed), "at": armed.get("at"), "fired": armed.get("fired"), "seed": seed}
        report["names_lost"] = report["names_lost"][:20]
        self.cuts.append(report)
        return report

    async def restart(self) -> None:
        """Start the bookie again, in the spare process (module docstring), and start the next spare."""
        await self._start_spare()
        assert self.bookie.running, f"bookie exited right after start:\n{self.bookie.tail_log()}"
        self._spawn_spare()

    async def _start_spare(self) -> None:
        if self._spare is None or self._spare.poll() is not None:
            self._spawn_spare()
        spare, self._spare = self._spare, None
        assert spare is not None and spare.stdin is not None
        self.bookie.write_conf()
        spare.stdin.write(b"go\n")
        spare.stdin.close()
        self.bookie.proc = spare
        await asyncio.to_thread(self.bookie.wait_ready)

    def _forget_registration(self) -> None:
        """Delete the killed process's ephemeral registration (module docstring)."""
        layout = ZkLayout(self.ledgers_root)
        zk = KazooClient(hosts=self.zk_connect)
        zk.start(timeout=30)
        try:
            for read_only in (False, True):
                with contextlib.suppress(NoNodeError):
                    zk.delete(layout.bookie(self.bookie.bookie_id, read_only))
        finally:
            zk.stop()
            zk.close()

    def _spawn_spare(self) -> None:
        with open(self.bookie.log_path, "ab") as log:
            self._spare = subprocess.Popen(
                [sys.executable, "-c", _SPARE, "serve", "--conf", str(self.bookie.conf_path)],
                stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        self.bookie.stop()
        if self._spare is not None:
            self._spare.kill()
            self._spare.wait()
            self._spare = None


_SPARE = "import sys\nimport bookie.cli, bookie.server\nsys.stdin.readline()\nsys.exit(bookie.cli.main(sys.argv[1:]))\n"


def plan_powercut_bookie(fs: PowerLossFs, zookeeper: ZooKeeperServer, data_dir: Path) -> PowerCutBookie:
    """A bookie (not started) whose data lives in a new zone; its configuration and log stay off the mount."""
    zone = f"bookie{next(_zones)}-{uuid.uuid4().hex[:6]}"
    fs.zone(zone)
    root = f"/powercut-{uuid.uuid4().hex[:8]}/ledgers"
    journal = fs.mountpoint / zone / "journal"
    # Addresses and ports apart from other tests' bookies: these restart dozens of times, and another test run
    # on the machine taking the address meanwhile must not answer in their place.
    [bookie] = plan_bookies(1, data_dir, zookeeper.connect_string, root, first_host=next(_hosts),
                            port=random.randrange(20000, 26000), http_port=random.randrange(26000, 32000),
                            admin_token=TEST_ADMIN_TOKEN,
                            **{**POWERCUT_OVERRIDES, "journalDirectories": str(journal),
                               "ledgerDirectories": str(fs.mountpoint / zone / "ledgers0")})
    return PowerCutBookie(fs, zone, bookie, zookeeper.connect_string, root)


# ---------------------------------------------------------------------- workloads and checks
@dataclass
class Written:
    """Entries acknowledged per ledger (entry id -> payload), and the ledgers written in each round."""

    acked: dict[int, dict[int, bytes]] = field(default_factory=dict)

    def add(self, ledger_id: int, entry_id: int, payload: bytes) -> None:
        self.acked.setdefault(ledger_id, {})[entry_id] = payload


async def write_until_cut(bk: BookKeeper, written: Written, ledgers: int, rnd: random.Random,
                          max_entries: int, outstanding: int = 16) -> list[int]:
    """Pipelined appends (``outstanding`` per ledger) to new ledgers until an add fails (the power went) or
    ``max_entries`` were sent to each; every acknowledged entry is recorded in ``written``."""
    handles = [await bk.create_ledger(1, 1, 1, password=PASSWORD) for _ in range(ledgers)]
    failed = asyncio.Event()

    async def one(handle: Any) -> None:
        window = asyncio.Semaphore(outstanding)

        async def add(payload: bytes) -> None:
            try:
                entry_id = await handle.append(payload)
            except Exception:
                failed.set()
                return
            finally:
                window.release()
            written.add(handle.ledger_id, entry_id, payload)

        tasks = []
        for _ in range(max_entries):
            await window.acquire()
            if failed.is_set():
                window.release()
                break
            size = rnd.choice((100, 1000, 9000))
            tasks.append(asyncio.ensure_future(add(rnd.randbytes(size))))
        await asyncio.gather(*tasks)

    await asyncio.gather(*(one(h) for h in handles))
    return [h.ledger_id for h in handles]


async def check_ledgers(bk: BookKeeper, written: Written, ledger_ids: list[int], context: object = "") -> None:
    """Recover (fence and close) each ledger, then read it whole: every acknowledged entry is there,
    byte-identical, and the ledger ends no earlier than its last acknowledged entry. ``context`` (the cut)
    goes into the failure message."""
    for lid in ledger_ids:
        acked = written.acked.get(lid, {})
        handle = await bk.open_ledger(lid, PASSWORD, recovery=True)
        last = handle.last_add_confirmed
        assert last >= max(acked, default=-1), \
            f"ledger {lid} closed at {last}, before its acknowledged entry {max(acked)}; {context}"
        entries = {e.entry_id: e.payload for e in await handle.read(0, last)} if last >= 0 else {}
        for eid, payload in acked.items():
            assert entries.get(eid) == payload, \
                f"ledger {lid} entry {eid}: acknowledged, read back different; {context}"


async def check_with_java(bookie: PowerCutBookie, written: Written, ledger_ids: list[int]) -> None:
    """Apache BookKeeper's client reads every ledger (closed by recovery) and finds every acknowledged entry."""
    proc = await asyncio.create_subprocess_exec(
        *java_command("ClientHarness", "digests", bookie.zk_connect, bookie.ledgers_root, "v3",
                      PASSWORD.decode(), *map(str, ledger_ids)),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode == 0, err.decode(errors="replace")[-4000:]
    found: dict[tuple[int, int], str] = {}
    for line in out.decode().splitlines():
        if line.startswith("ENTRY "):
            _, ledger, entry, digest = line.split()
            found[(int(ledger), int(entry))] = digest
    for lid in ledger_ids:
        for eid, payload in written.acked.get(lid, {}).items():
            assert found.get((lid, eid)) == hashlib.sha256(payload).hexdigest(), \
                f"Apache BookKeeper's client: ledger {lid} entry {eid} missing or different"


async def until(holds: Callable[[], bool], within: float, what: str) -> None:
    """Poll ``holds`` until it does; fail naming ``what`` after ``within`` seconds."""
    deadline = asyncio.get_running_loop().time() + within
    while True:
        if holds():
            return
        assert asyncio.get_running_loop().time() < deadline, f"{what}: not within {within} s"
        await asyncio.sleep(0.05)
