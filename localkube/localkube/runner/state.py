"""The runner's files: pod directories, provisioned volumes, the pod IP table and the process registry.

Every container process group is registered in ``procs/<pgid>`` while it runs and carries
``LOCALKUBE_STATE=<root>`` in its environment, so that ``kill_leftover_pods`` (called by
``LocalCluster.down``) can kill what a crashed runner left behind, and only that.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import threading
from pathlib import Path

MARKER_ENV = "LOCALKUBE_STATE"
FIRST_IP = ipaddress.IPv4Address("127.0.1.1")   # 127.0.0.x is left to the playground's bookies
LAST_IP = ipaddress.IPv4Address("127.0.254.254")


class RunnerState:
    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.pods = self.root / "pods"
        self.volumes = self.root / "volumes"
        self.procs = self.root / "procs"
        for d in (self.pods, self.volumes, self.procs):
            d.mkdir(parents=True, exist_ok=True)
        self._ips_file = self.root / "ips.json"
        self._lock = threading.Lock()
        try:
            data = json.loads(self._ips_file.read_text())
        except (OSError, ValueError):
            data = {}
        self._ips: dict[str, str] = dict(data.get("ips", {}))
        self._cursor = int(data.get("cursor", int(FIRST_IP)))

    @property
    def marker(self) -> str:
        return f"{MARKER_ENV}={self.root}"

    # ----------------------------------------------------------------------------- processes
    def register_proc(self, pgid: int, label: str) -> None:
        (self.procs / str(pgid)).write_text(label)

    def unregister_proc(self, pgid: int) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.procs / str(pgid)).unlink()

    # ------------------------------------------------------------------------------ pod IPs
    def _save_ips(self) -> None:
        tmp = self._ips_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"ips": self._ips, "cursor": self._cursor}))
        tmp.replace(self._ips_file)

    def allocate_ip(self, uid: str) -> str:
        """A loopback address of the pod's own, 127.0.x.y (x >= 1), stable for the pod's lifetime."""
        with self._lock:
            if uid in self._ips:
                return self._ips[uid]
            used = set(self._ips.values())
            span = int(LAST_IP) - int(FIRST_IP) + 1
            for _ in range(span):
                candidate = ipaddress.IPv4Address(self._cursor)
                self._cursor = self._cursor + 1 if self._cursor < int(LAST_IP) else int(FIRST_IP)
                last = int(candidate) & 0xFF
                if last in (0, 255) or str(candidate) in used:
                    continue
                self._ips[uid] = str(candidate)
                self._save_ips()
                return str(candidate)
            raise RuntimeError("no free pod IP left in 127.0.1.1-127.0.254.254")

    def release_ip(self, uid: str) -> None:
        with self._lock:
            if self._ips.pop(uid, None) is not None:
                self._save_ips()

    def known_pod_uids(self) -> set[str]:
        with self._lock:
            return set(self._ips)


def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def _group_members(pgid: int) -> list[int]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def kill_leftover_pods(root: Path) -> list[int]:
    """SIGKILL every registered container process group that still runs and carries this root's marker."""
    procs_dir = root.resolve() / "procs"
    if not procs_dir.is_dir():
        return []
    marker = f"{MARKER_ENV}={root.resolve()}".encode()
    killed = []
    for entry in procs_dir.iterdir():
        if not entry.name.isdigit():
            continue
        pgid = int(entry.name)
        if any(_environ_has(pid, marker) for pid in _group_members(pgid)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
    return killed
