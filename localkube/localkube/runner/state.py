"""The runner's files: pod directories, provisioned volumes, the pods' addresses and the process registry.

Every container process group is registered in ``procs/<pgid>`` while it runs and carries
``LOCALKUBE_STATE=<root>`` in its environment, so that ``kill_leftover_pods`` (called by
``LocalCluster.down``) can kill what a crashed runner left behind, and only that.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
from pathlib import Path

from localkube import procs
from localkube.runner import filesystems
from localkube.runner.runtime import Runc

MARKER_ENV = "LOCALKUBE_STATE"


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
    # The address each pod got, so that a restarted runner asks the IPAM plugin for the same one again.
    def _save_ips(self) -> None:
        tmp = self._ips_file.with_suffix(".tmp")
        tmp.write_text(json.dumps({"ips": self._ips}))
        tmp.replace(self._ips_file)

    def pod_ip(self, uid: str) -> str | None:
        with self._lock:
            return self._ips.get(uid)

    def remember_ip(self, uid: str, ip: str) -> None:
        with self._lock:
            if self._ips.get(uid) != ip:
                self._ips[uid] = ip
                self._save_ips()

    def forget_ip(self, uid: str) -> None:
        with self._lock:
            if self._ips.pop(uid, None) is not None:
                self._save_ips()


def _environ_has(pid: int, marker: bytes) -> bool:
    try:
        return marker in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def kill_leftover_pods(root: Path) -> list[int]:
    """SIGKILL every registered container process group that still runs and carries this root's marker, then
    delete the runc containers of this runner and unmount their root filesystems and the volumes' filesystems."""
    killed = _kill_registered(root)
    if Runc.available():
        Runc(root.resolve()).cleanup()
    filesystems.unmount_all(root.resolve() / "volumes")   # mounted again when a pod needs them
    return killed


def _kill_registered(root: Path) -> list[int]:
    procs_dir = root.resolve() / "procs"
    if not procs_dir.is_dir():
        return []
    marker = f"{MARKER_ENV}={root.resolve()}".encode()
    killed = []
    for entry in procs_dir.iterdir():
        if not entry.name.isdigit():
            continue
        pgid = int(entry.name)
        if any(_environ_has(pid, marker) for pid in procs.group_members(pgid)):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
                killed.append(pgid)
        with contextlib.suppress(FileNotFoundError):
            entry.unlink()
    return killed
