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

from localkube import procs
from localkube.runner import filesystems
from localkube.runner.runtime import Runc

MARKER_ENV = "LOCALKUBE_STATE"
# Pod IPs are claimed machine-wide (several clusters may run at once: a test session, a developer's), one
# file per address, created exclusively; a claim whose runner process is gone is stale and taken over.
IP_REGISTRY = Path(os.environ.get("LOCALKUBE_IP_REGISTRY", "/tmp/localkube-pod-ips"))
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

    def _claim(self, ip: str, uid: str) -> bool:
        """Claim ``ip`` machine-wide for pod ``uid`` of this runner (True), or find it taken (False)."""
        IP_REGISTRY.mkdir(parents=True, exist_ok=True)
        path = IP_REGISTRY / ip
        content = f"{os.getpid()} {self.root} {uid}\n"
        for _ in range(2):
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                try:
                    pid_text, root, owner = path.read_text().split()
                except (OSError, ValueError):
                    continue  # being written, or gone meanwhile: look again
                if root == str(self.root) and owner == uid:
                    path.write_text(content)   # ours, from before a runner restart
                    return True
                if Path(f"/proc/{pid_text}").exists():
                    return False
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()   # stale: its runner is gone
                continue
            with os.fdopen(fd, "w") as f:
                f.write(content)
            return True
        return False

    def allocate_ip(self, uid: str) -> str:
        """A loopback address of the pod's own, 127.0.x.y (x >= 1), stable for the pod's lifetime and unique
        on this machine across localkube clusters."""
        with self._lock:
            if uid in self._ips and self._claim(self._ips[uid], uid):
                return self._ips[uid]
            used = set(self._ips.values()) | listening_ips()
            span = int(LAST_IP) - int(FIRST_IP) + 1
            for _ in range(span):
                candidate = ipaddress.IPv4Address(self._cursor)
                self._cursor = self._cursor + 1 if self._cursor < int(LAST_IP) else int(FIRST_IP)
                last = int(candidate) & 0xFF
                if last in (0, 255) or str(candidate) in used or not self._claim(str(candidate), uid):
                    continue
                self._ips[uid] = str(candidate)
                self._save_ips()
                return str(candidate)
            raise RuntimeError("no free pod IP left in 127.0.1.1-127.0.254.254")

    def release_ip(self, uid: str) -> None:
        with self._lock:
            ip = self._ips.pop(uid, None)
            if ip is not None:
                self._save_ips()
                release_claim(ip, self.root)

    def known_pod_uids(self) -> set[str]:
        with self._lock:
            return set(self._ips)


def listening_ips() -> set[str]:
    """IPv4 addresses with a listening TCP socket now (another cluster's pod, anything else)."""
    found = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":   # TCP_LISTEN
                hex_ip = fields[1].split(":")[0]
                found.add(str(ipaddress.IPv4Address(bytes.fromhex(hex_ip)[::-1])))
    return found


def release_claim(ip: str, root: Path) -> None:
    path = IP_REGISTRY / ip
    with contextlib.suppress(OSError, ValueError):
        if path.read_text().split()[1] == str(root):
            path.unlink()


def release_all_claims(root: Path) -> None:
    """Give back every pod IP claimed by the runner of ``root`` (the cluster is going down)."""
    if IP_REGISTRY.is_dir():
        for entry in IP_REGISTRY.iterdir():
            release_claim(entry.name, root.resolve())


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
