"""Containers under runc: the OCI runtime spec of a container, and run / exec / kill / delete / clean-up.

Each container is one runc container named ``<pod uid>-<container>`` under the runner's own runc state
directory (``<runner state>/runc``), so the runner can find and delete what a killed runner left behind
without touching anyone else's containers. ``runc run`` stays in the foreground as the runner's child: its
exit status is the container's, and the container's stdout/stderr go straight to the container log.

The root filesystem is the image's shared unpacked rootfs, read-only, when the container has
``readOnlyRootFilesystem: true``; otherwise a kernel overlay (the shared rootfs below, a fresh upper
directory per container start) mounted under the pod directory and unmounted when the container ends.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
log = logging.getLogger("localkube.runner")

MASKED_PATHS = ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
                "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"]
READONLY_PATHS = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
CGROUP_ROOT, CGROUP_PARENT = "/sys/fs/cgroup", "localkube"   # containers' cgroups: /localkube/<id>
SYSTEM_MOUNTS: list[Obj] = [
    {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755",
                                                                           "size=65536k"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
     "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
    {"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": ["nosuid", "noexec", "nodev",
                                                                             "mode=1777", "size=65536k"]},
    {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
    {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
]


class ContainerRuntimeError(RuntimeError):
    """runc refused an operation."""


@dataclass
class ProcessSpec:
    """What runs in the container (also what ``runc exec`` runs): OCI ``process`` fields."""

    args: list[str]
    env: dict[str, str]
    cwd: str
    user: Obj
    capabilities: Obj
    no_new_privileges: bool

    def oci(self) -> Obj:
        return {"terminal": False, "args": self.args, "env": [f"{k}={v}" for k, v in self.env.items()],
                "cwd": self.cwd, "user": self.user, "capabilities": self.capabilities,
                "noNewPrivileges": self.no_new_privileges}


def bind_mount(source: str, target: str, readonly: bool) -> Obj:
    return {"destination": target, "type": "bind", "source": source,
            "options": ["rbind", "ro" if readonly else "rw", "nosuid", "nodev"]}


def oci_config(process: ProcessSpec, *, rootfs: Path, readonly: bool, hostname: str, mounts: list[Obj],
               seccomp: Obj | None, cgroups_path: str, netns: Path) -> Obj:
    """The bundle's config.json: own mount/pid/ipc/uts namespaces, the pod's network namespace ``netns``, no
    rlimits (containerd sets none either: raising one above this machine's hard limit fails)."""
    linux: Obj = {
        "namespaces": [*({"type": t} for t in ("pid", "ipc", "uts", "mount")),
                       {"type": "network", "path": str(netns)}],
        "maskedPaths": MASKED_PATHS, "readonlyPaths": READONLY_PATHS, "cgroupsPath": cgroups_path,
    }
    if seccomp is not None:
        linux["seccomp"] = seccomp
    return {"ociVersion": "1.0.2", "process": process.oci(), "hostname": hostname,
            "root": {"path": str(rootfs), "readonly": readonly}, "mounts": [*SYSTEM_MOUNTS, *mounts],
            "linux": linux}


def mounts_under(root: Path) -> list[str]:
    """Mount points at or below ``root`` in this mount namespace, deepest first."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].encode().decode("unicode_escape")
            if point == str(root) or point.startswith(f"{root}/"):
                found.append(point)
    return sorted(found, key=lambda p: p.count("/"), reverse=True)


def unmount_all(root: Path) -> list[str]:
    """Unmount (lazily, as a last resort) everything mounted below ``root``."""
    points = mounts_under(root)
    for point in points:
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)
    return points


class Runc:
    def __init__(self, state_root: Path) -> None:
        self.state_root = state_root
        self.root = state_root / "runc"
        self.marker_env = {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"),
                           "LOCALKUBE_STATE": str(state_root)}

    @staticmethod
    def available() -> bool:
        return shutil.which("runc") is not None and shutil.which("umoci") is not None

    def _run(self, *args: str, check: bool = False, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["runc", "--root", str(self.root), *args], capture_output=True, text=True,
                                timeout=timeout, env=self.marker_env)
        if check and result.returncode != 0:
            raise ContainerRuntimeError(f"runc {args[0]}: {result.stderr.strip()[-500:]}")
        return result

    # ------------------------------------------------------------------------------ bundles
    def prepare_bundle(self, bundle: Path, config: Obj, lower: Path, writable: bool) -> None:
        """Write ``config.json`` into ``bundle``; a writable root gets a fresh overlay over ``lower``."""
        self.release_bundle(bundle)
        bundle.mkdir(parents=True, exist_ok=True)
        if writable:
            for d in ("upper", "work", "merged"):
                (bundle / d).mkdir()
            options = f"lowerdir={lower},upperdir={bundle / 'upper'},workdir={bundle / 'work'}"
            result = subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(bundle / "merged")],
                                    capture_output=True, text=True)
            if result.returncode != 0:
                raise ContainerRuntimeError(
                    f"overlay mount for a writable root filesystem failed: {result.stderr.strip()}")
            config["root"]["path"] = str(bundle / "merged")
        (bundle / "config.json").write_text(json.dumps(config, indent=1))

    @staticmethod
    def release_bundle(bundle: Path) -> None:
        unmount_all(bundle)
        shutil.rmtree(bundle, ignore_errors=True)

    # ------------------------------------------------------------------------------ lifecycle
    def run(self, cid: str, bundle: Path, log_path: Path) -> subprocess.Popen[bytes]:
        """Start the container; the returned process (``runc run``) exits with the container's status."""
        self.delete(cid)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as out:
            return subprocess.Popen(["runc", "--root", str(self.root), "run", "--bundle", str(bundle),
                                     "--no-new-keyring", cid], stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True, env=self.marker_env)

    def wait_started(self, cid: str, proc: subprocess.Popen[bytes], timeout: float = 60) -> int | None:
        """Wait until the container's process runs (``runc state``): its host pid, or None if ``runc run``
        ended first (the container failed to start or exited at once)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and proc.poll() is None:
            result = self._run("state", cid)
            if result.returncode == 0:
                state = json.loads(result.stdout)
                if state.get("status") in ("running", "stopped") and state.get("pid"):
                    return int(state["pid"])
            time.sleep(0.05)
        return None

    def exec(self, cid: str, process: ProcessSpec, spec_file: Path, log_path: Path,
             timeout: float) -> int:
        """Run ``process`` in the running container (exec probes, preStop hooks): its exit code, -1 on timeout."""
        spec_file.write_text(json.dumps(process.oci()))
        with open(log_path, "ab") as out:
            proc = subprocess.Popen(["runc", "--root", str(self.root), "exec", "--process", str(spec_file), cid],
                                    stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, env=self.marker_env)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return -1
        finally:
            spec_file.unlink(missing_ok=True)

    def kill(self, cid: str, signal: str, all_processes: bool = False) -> None:
        self._run("kill", *(["--all"] if all_processes else []), cid, signal)

    def delete(self, cid: str) -> None:
        self._run("delete", "--force", cid)

    def containers(self) -> list[str]:
        if not self.root.is_dir():
            return []
        result = self._run("list", "--quiet")
        return [line for line in result.stdout.split() if line]

    def cleanup(self) -> list[str]:
        """Delete every container of this runner's runc root (a killed runner's leftovers), then unmount
        whatever is still mounted in the runner's state directory (their overlays)."""
        leftovers = self.containers()
        for cid in leftovers:
            self.kill(cid, "KILL", all_processes=True)
            self.delete(cid)
        unmount_all(self.state_root / "pods")
        # runc removes a container's own cgroups, not their common parent (shared by every runner: removed
        # only when empty).
        for parent in Path(CGROUP_ROOT).glob(f"*/{CGROUP_PARENT}"):
            with contextlib.suppress(OSError):
                parent.rmdir()
        return leftovers
