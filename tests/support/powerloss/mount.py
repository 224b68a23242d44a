"""Mounting the power-loss file system (``fs.py``) and talking to it, for the power-loss tests' fixtures.

``PowerLossFs.mount(where)`` starts the FUSE daemon and waits for the mount; ``unmount()`` undoes it
(``fusermount3 -u``, lazily if something still holds it) and stops the daemon. Mounts that a killed test run
left behind are unmounted lazily by the next ``mount`` (``unmount_leftovers``): each mount's name carries its
daemon's pid, so only mounts whose daemon is gone are touched, never another run's live one.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.powerloss.fs import FSNAME_PREFIX

_REPO = Path(__file__).resolve().parents[3]


def fuse_available() -> str | None:
    """None when FUSE mounts can be made here, else why not."""
    if not os.path.exists("/dev/fuse"):
        return "/dev/fuse is missing"
    if subprocess.run(["sh", "-c", "command -v fusermount3"], capture_output=True).returncode != 0:
        return "fusermount3 is missing (Debian: apt-get install fuse3)"
    return None


def _mounts() -> list[tuple[str, str]]:
    """(source, mountpoint) of every mount, from /proc/self/mounts (octal escapes undone)."""
    out = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2:
            out.append((fields[0], fields[1].encode().decode("unicode_escape")))
    return out


def unmount_leftovers() -> list[str]:
    """Lazily unmount power-loss file systems whose daemon is dead; returns their mountpoints."""
    done = []
    for source, mountpoint in _mounts():
        if not source.startswith(FSNAME_PREFIX + "-"):
            continue
        try:
            pid = int(source.rsplit("-", 1)[1])
            os.kill(pid, 0)
            continue  # its daemon lives: another run's mount
        except (ValueError, ProcessLookupError):
            pass
        except PermissionError:
            continue
        subprocess.run(["fusermount3", "-u", "-z", mountpoint], capture_output=True)
        done.append(mountpoint)
    return done


@dataclass
class PowerLossFs:
    """One mounted power-loss file system and its control socket."""

    mountpoint: Path
    control: Path
    log_path: Path
    proc: subprocess.Popen[bytes]
    _sock: socket.socket | None = field(default=None, repr=False)
    _stream: Any = field(default=None, repr=False)

    @classmethod
    def mount(cls, mountpoint: Path, state_dir: Path, timeout: float = 30.0) -> PowerLossFs:
        unmount_leftovers()
        mountpoint.mkdir(parents=True, exist_ok=True)
        state_dir.mkdir(parents=True, exist_ok=True)
        control = state_dir / "control.sock"
        control.unlink(missing_ok=True)
        log_path = state_dir / "powerloss-fs.log"
        env = {**os.environ, "FUSE_LIBRARY_NAME": "fuse3"}
        with open(log_path, "ab") as log:
            proc = subprocess.Popen([sys.executable, "-m", "tests.support.powerloss.fs", str(mountpoint),
                                     str(control)], cwd=_REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        fs = cls(mountpoint, control, log_path, proc)
        deadline = time.monotonic() + timeout
        while not (os.path.ismount(mountpoint) and control.exists()):
            if proc.poll() is not None or time.monotonic() > deadline:
                fs.unmount()
                raise RuntimeError(f"power-loss file system did not mount at {mountpoint}:\n"
                                   f"{log_path.read_text(errors='replace')[-3000:]}")
            time.sleep(0.05)
        fs.command("ping")
        return fs

    def unmount(self) -> None:
        with contextlib.suppress(OSError):
            if self._sock is not None:
                self._sock.close()
        if os.path.ismount(self.mountpoint):
            done = subprocess.run(["fusermount3", "-u", str(self.mountpoint)], capture_output=True)
            if done.returncode != 0:  # still busy (a process left in it): detach now, free when released
                subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    # ------------------------------------------------------------------ control
    def command(self, op: str, **args: Any) -> dict[str, Any]:
        if self._sock is None:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._sock.connect(str(self.control))
            self._stream = self._sock.makefile("rwb")
        self._stream.write(json.dumps({"op": op, **args}).encode() + b"\n")
        self._stream.flush()
        answer: dict[str, Any] = json.loads(self._stream.readline())
        if not answer.get("ok"):
            raise RuntimeError(f"power-loss file system refused {op}: {answer.get('error')}")
        return answer

    def zone(self, name: str) -> Path:
        """A new top-level directory: a zone (``model``) of its own, durable from the start."""
        path = self.mountpoint / name
        path.mkdir()
        return path

    def cut(self, zone: str, seed: int | None = None) -> dict[str, Any]:
        """The power cut: what was never made durable in ``zone`` is gone (with ``seed``: a random subset of its
        dirty pages reached the disk first)."""
        return self.command("cut", zone=zone, **({} if seed is None else {"seed": seed}))

    def sync(self, zone: str) -> None:
        self.command("sync", zone=zone)

    def arm(self, zone: str, after: int | None, pid: int = 0, match: str = "") -> None:
        """Cut the power (SIGKILL process group ``pid`` first) before the ``after``-th change matching ``match``."""
        self.command("arm", zone=zone, after=after, pid=pid, match=match)

    def armed(self, zone: str) -> dict[str, Any]:
        return self.command("armed", zone=zone)
