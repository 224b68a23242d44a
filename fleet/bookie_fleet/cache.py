"""The cache (``$BOOKIE_FLEET_CACHE``, default ``~/.cache/bookie-fleet``): what each part of it takes, and
removing what is no longer used (``bookie-fleet cache [prune]``, and the playground after each run).

A playground run works in ``<cache>/playground/<time>/``: container root filesystems, etcd data, the bookies'
disks, a Pulsar broker's data, about 2 GB for the Kubernetes story. Only the last run's report and logs are
worth keeping: when a run starts, the runs before it are removed, and when it ends, its own directory is
trimmed to its report (``summary.json``, ``audit/``) and its logs (``*.log`` outside container file systems).
A run holds an exclusive lock on ``<run>/.running`` while it lives, so a run another terminal or checkout is
still using is never touched; a directory without that file (left by an older version) is treated like the
bootstrap's keyed entries: left alone while used in the last two hours.

The keyed entries (``venv-<hash>``, ``images-<hash>``) are pruned by the bootstrap's own rule,
``prune_cache_entries`` of scripts/bootstrap.d/lib/cache.sh, run here under the locks the bootstrap takes.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = ".running"
KEPT_NAMES = {"summary.json"}            # a run's report, besides ...
KEPT_DIRS = {"audit"}                    # ... the audit's report directory, and its logs
CONTAINER_FS = {"rootfs", "upper", "work", "merged"}   # a *.log in these is a container's file, not a log of the run
UNLOCKED_GRACE_S = 2 * 3600              # cache.sh's "used in the last two hours"
CACHE_SH = Path(__file__).resolve().parents[2] / "scripts" / "bootstrap.d" / "lib" / "cache.sh"


def cache_root() -> Path:
    return Path(os.environ.get("BOOKIE_FLEET_CACHE", Path.home() / ".cache" / "bookie-fleet"))


def playground_root(cache: Path | None = None) -> Path:
    return (cache or cache_root()) / "playground"


# ------------------------------------------------------------------------------------------------- sizes
def allocated(path: Path) -> dict[tuple[int, int], int]:
    """The bytes allocated on disk under ``path`` by file (device, inode): symbolic links not followed, other
    file systems not entered, a file with several hard links once (the image layouts share layers that way)."""
    try:
        top = path.lstat()
    except OSError:
        return {}
    found: dict[tuple[int, int], int] = {}
    stack = [(path, top)]
    while stack:
        current, st = stack.pop()
        key = (st.st_dev, st.st_ino)
        if key in found:
            continue
        found[key] = st.st_blocks * 512
        if not stat.S_ISDIR(st.st_mode) or st.st_dev != top.st_dev:
            continue
        with contextlib.suppress(OSError), os.scandir(current) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    stack.append((Path(entry.path), entry.stat(follow_symlinks=False)))
    return found


def disk_usage(path: Path) -> int:
    return sum(allocated(path).values())


def human(size: int) -> str:
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


@dataclass(frozen=True)
class Part:
    name: str
    size: int


def parts(cache: Path) -> tuple[list[Part], int]:
    """Each entry of the cache with its size, largest first, and the cache's total (shared files once)."""
    everything: dict[tuple[int, int], int] = {}
    found = []
    for entry in sorted(cache.iterdir()) if cache.is_dir() else []:
        if entry.name.endswith(".lock"):   # the bootstrap's locks: empty
            continue
        files = allocated(entry)
        found.append(Part(entry.name, sum(files.values())))
        everything.update(files)
    return sorted(found, key=lambda p: -p.size), sum(everything.values())


# ------------------------------------------------------------------------------------------- playground runs
@contextlib.contextmanager
def locked(run: Path) -> Iterator[None]:
    """Hold ``run``'s lock for the block: pruning leaves a locked run alone."""
    run.mkdir(parents=True, exist_ok=True)
    fd = os.open(run / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def in_use(run: Path) -> bool:
    """Whether a playground process still works in ``run`` (or might: see the module's docstring)."""
    lock = run / LOCK_NAME
    if not lock.exists():
        return time.time() - run.stat().st_mtime < UNLOCKED_GRACE_S
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def mount_points() -> list[Path]:
    with open("/proc/self/mountinfo") as f:
        return [Path(line.split()[4].replace("\\040", " ")) for line in f]


def has_mounts(run: Path) -> bool:
    """A mount left under a run (a crashed cluster's overlay or tmpfs disk) would be deleted through."""
    return any(m == run or run in m.parents for m in mount_points())


def kept(relative: Path) -> bool:
    """Whether a file of a run is part of its report or logs."""
    if relative.parts[0] in KEPT_DIRS or str(relative) in KEPT_NAMES or relative.name == LOCK_NAME:
        return True
    return relative.suffix == ".log" and not CONTAINER_FS & set(relative.parts[:-1])


def trim(run: Path) -> int:
    """Remove everything of ``run`` but its report and logs; returns the bytes freed."""
    freed = 0
    for current, dirs, files in os.walk(run, topdown=False):
        here = Path(current)
        for name in files:
            path = here / name
            if not kept(path.relative_to(run)):
                freed += _remove(path)
        for name in dirs:
            path = here / name
            if path.is_symlink():
                freed += _remove(path)
            elif not any(path.iterdir()):
                path.rmdir()
    return freed


def _remove(path: Path) -> int:
    try:
        size = path.lstat().st_blocks * 512
        path.unlink()
        return size
    except FileNotFoundError:
        return 0


def remove_run(run: Path) -> int:
    size = disk_usage(run)
    shutil.rmtree(run, ignore_errors=True)
    return size - disk_usage(run)


def earlier_runs(root: Path, current: Path | None) -> list[Path]:
    """The run directories under ``root`` other than ``current``, oldest first."""
    if not root.is_dir():
        return []
    return sorted((p for p in root.iterdir() if p.is_dir() and p != current), key=lambda p: p.name)


def prune_playground(root: Path, current: Path | None, say: Callable[[str], None]) -> int:
    """Remove the runs under ``root`` other than ``current`` that no process uses (none mounted); returns the
    bytes freed. With no ``current`` (``bookie-fleet cache prune``), the last run is trimmed, not removed."""
    runs = earlier_runs(root, current)
    last = runs.pop() if current is None and runs else None
    freed = 0
    for run in runs + ([last] if last else []):
        if in_use(run):
            say(f"  left {run}: a playground is running in it")
        elif has_mounts(run):
            say(f"  left {run}: something is still mounted under it (`mount | grep {run}`)")
        elif run == last:
            gone = trim(run)
            freed += gone
            say(f"  trimmed the last run {run} to its report and logs ({human(gone)})")
        else:
            gone = remove_run(run)
            freed += gone
            say(f"  removed the earlier run {run} ({human(gone)})")
    return freed


@contextlib.contextmanager
def playground_run(workdir: Path, keep: bool, say: Callable[[str], None]) -> Iterator[None]:
    """The life of one playground run in ``workdir``: locked while it lives; under the cache, the runs before
    it are removed first and it is trimmed to its report and logs at the end (unless ``keep``). A directory
    the user chose elsewhere (``--workdir``) is theirs: never pruned nor trimmed."""
    workdir = workdir.resolve()
    root = playground_root().resolve()
    managed = workdir.parent == root and not keep
    with locked(workdir):
        if managed:
            prune_playground(root, workdir, say)
        try:
            yield
        finally:
            if managed and not has_mounts(workdir):
                freed = trim(workdir)
                say(f"removed the run's data ({human(freed)}); its report and logs stay in {workdir}"
                    " (--keep keeps everything)")
            elif workdir.parent != root:
                (workdir / LOCK_NAME).unlink(missing_ok=True)   # nothing prunes there: no trace of the lock


# ------------------------------------------------------------------------------------------- keyed entries
def entries_in_use() -> dict[str, Path]:
    """The keyed entries this checkout's environment uses, by prefix (those the bootstrap prunes)."""
    found = {}
    venv = Path(os.environ.get("BOOKIE_FLEET_VENV") or sys.prefix)
    pth = venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages" / \
        "bookie_fleet_dependencies.pth"
    if pth.is_file():     # the shared dependencies' site-packages: <cache>/venv-<hash>/lib/python3.x/site-packages
        found["venv"] = Path(pth.read_text().strip()).parents[2]
    if os.environ.get("BOOKIE_FLEET_IMAGES"):
        found["images"] = Path(os.environ["BOOKIE_FLEET_IMAGES"]).parent
    return found


LOCKS = {"venv": ".bootstrap.lock", "images": ".images-build.lock"}   # what the bootstrap holds when it prunes


def prune_keyed(cache: Path, say: Callable[[str], None]) -> None:
    """scripts/bootstrap.d/lib/cache.sh's prune_cache_entries for each keyed entry whose one in use is known,
    skipped while a bootstrap holds its lock."""
    current = entries_in_use()
    for prefix, lock_name in LOCKS.items():
        entry = current.get(prefix)
        if entry is None or entry.parent != cache:
            say(f"  {prefix}-<hash>: left alone (the one in use is unknown: source \"$(./scripts/bootstrap)\")")
            continue
        fd = os.open(cache / lock_name, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                say(f"  {prefix}-<hash>: left alone (a bootstrap is running)")
                continue
            script = 'log() { printf "  %s\\n" "$*"; }; source "$1"; prune_cache_entries "$2" "$3" "$4"'
            result = subprocess.run(["bash", "-c", script, "prune", str(CACHE_SH), str(cache), prefix, str(entry)],
                                    capture_output=True, text=True, check=True)
            for line in result.stdout.splitlines():
                say(line)
        finally:
            os.close(fd)


# ------------------------------------------------------------------------------------------------- the command
def show(cache: Path, say: Callable[[str], None]) -> int:
    """``bookie-fleet cache``: each part of the cache and its size."""
    if not cache.is_dir():
        say(f"no cache at {cache}")
        return 0
    found, total = parts(cache)
    width = max([len(p.name) for p in found] + [10])
    say(f"{cache}: {human(total)} (a file shared by several parts counted once)")
    for part in found:
        note = ""
        if part.name == "playground":
            runs = earlier_runs(playground_root(cache), None)
            note = f"  {len(runs)} run{'s' * (len(runs) != 1)}"
        say(f"  {part.name:<{width}}  {human(part.size):>10}{note}")
    say("`bookie-fleet cache prune` removes earlier playground runs, trims the last to its report and logs,\n"
        "and removes the keyed entries (venv-, images-) not used lately, by the bootstrap's own rule")
    return 0


def prune(cache: Path, say: Callable[[str], None]) -> int:
    """``bookie-fleet cache prune``: what is safe to remove, removed."""
    if not cache.is_dir():
        say(f"no cache at {cache}")
        return 0
    before = parts(cache)[1]
    say(f"pruning {cache}")
    prune_playground(playground_root(cache), None, say)
    prune_keyed(cache, say)
    after = parts(cache)[1]
    say(f"{cache}: {human(after)} (freed {human(max(0, before - after))})")
    return 0
