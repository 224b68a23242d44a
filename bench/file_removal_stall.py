"""How long removing a large file holds the fsyncs of the other writers of its disk: one unlink against the
bookie's removal in steps (``bookie.storage.gradual_removal``), same disk, same run, alternating.

    python bench/file_removal_stall.py                # 2 GiB files (a journal file's size), 3 rounds
    python bench/file_removal_stall.py --workdir /data  # on another disk than the system's temporary directory
    python bench/file_removal_stall.py --quick        # tiny run for the test suite

Each round writes a file of ``--mib`` MiB (fsynced, dropped from the page cache), starts a writer that appends
256 KiB and fdatasyncs in a loop as a journal does, and removes the file while it runs. Reported per way of
removing: the longest and the 99th-percentile fdatasync during the removal, the median, and how long the
removal took. The stall comes from the file system (ext4 commits the freeing of the blocks in one transaction,
and with the ``discard`` mount option waits for the device to discard them), so its size depends on the disk and
its mount options, printed with the results. Nothing is written to docs: docs/benchmarks.md quotes its numbers
by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bookie.storage.gradual_removal import remove_in_steps
from bookie_fleet.processes import stop_on_sigterm
from workdir import add_workdir_argument, run_directory  # bench/ is on sys.path when a bench script runs

MIB = 2**20
SYNC_WRITE = 256 * 1024  # what one journal group of a busy bookie writes between two fdatasyncs, about


def write_file(path: Path, size: int) -> None:
    """``size`` bytes of real blocks (not a hole: a hole frees nothing), on disk and out of the page cache."""
    chunk = os.urandom(16 * MIB)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for offset in range(0, size, len(chunk)):
            os.pwrite(fd, chunk[:min(len(chunk), size - offset)], offset)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


class SyncingWriter:
    """A journal's pattern: append, fdatasync, a short pause, again; each fdatasync's time kept."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.latencies_s: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="syncing-writer", daemon=True)

    def __enter__(self) -> SyncingWriter:
        self._thread.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()
        self.path.unlink(missing_ok=True)

    def _run(self) -> None:
        data = os.urandom(SYNC_WRITE)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            position = 0
            while not self._stop.is_set():
                os.pwrite(fd, data, position % (256 * MIB))
                position += len(data)
                started = time.perf_counter()
                os.fdatasync(fd)
                self.latencies_s.append(time.perf_counter() - started)
                self._stop.wait(0.002)
        finally:
            os.close(fd)


def one_removal(directory: Path, how: str, size: int) -> dict[str, float]:
    doomed = directory / f"doomed-{how}"
    write_file(doomed, size)
    with SyncingWriter(directory / "journal-like") as writer:
        time.sleep(0.5)  # the writer's own pace first
        before = len(writer.latencies_s)
        started = time.perf_counter()
        if how == "unlink":
            doomed.unlink()
        else:
            remove_in_steps(doomed, threading.Event())
        took = time.perf_counter() - started
        time.sleep(0.2)  # the commit that frees the last blocks
        during = sorted(writer.latencies_s[before:])
    if not during:
        raise RuntimeError(f"no fdatasync completed while the file was removed ({how})")
    return {"max_ms": 1000 * during[-1], "p99_ms": 1000 * during[int(len(during) * 0.99)],
            "median_ms": 1000 * statistics.median(during), "syncs": len(during), "removal_s": took}


def mount_of(path: Path) -> str:
    """The file system under ``path`` and its mount options, from /proc/mounts (the longest matching mount)."""
    best = ("", "?", "?")
    resolved = str(path.resolve())
    with open("/proc/mounts") as mounts:
        for line in mounts:
            _device, point, kind, options, *_ = line.split()
            if (resolved == point or resolved.startswith(point.rstrip("/") + "/")) and len(point) >= len(best[0]):
                best = (point, kind, options)
    return f"{best[1]} on {best[0]} ({best[2]})"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=2048, help="size of the removed file, MiB")
    parser.add_argument("--rounds", type=int, default=3)
    add_workdir_argument(parser)
    parser.add_argument("--quick", action="store_true", help="64 MiB, one round")
    args = parser.parse_args(argv)
    if args.mib <= 0 or args.rounds <= 0:
        parser.error("--mib and --rounds must be positive")
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.quick:
        args.mib, args.rounds = 64, 1
    results: dict[str, list[dict[str, float]]] = {"unlink": [], "steps": []}
    with run_directory(args.workdir, "file-removal-") as directory:
        print(f"disk: {mount_of(directory)}; file {args.mib} MiB, {args.rounds} rounds", flush=True)
        for r in range(args.rounds):
            for how in (("unlink", "steps") if r % 2 == 0 else ("steps", "unlink")):
                result = one_removal(directory, how, args.mib * MIB)
                results[how].append(result)
                print(f"round {r + 1} {how:<6}: fdatasync during the removal max {result['max_ms']:6.1f} ms, "
                      f"p99 {result['p99_ms']:6.1f} ms, median {result['median_ms']:5.1f} ms "
                      f"({result['syncs']:.0f} syncs); removal {result['removal_s']:.2f} s", flush=True)
    summary = {how: {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
               for how, rounds in results.items()}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
