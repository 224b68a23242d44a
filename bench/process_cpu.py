"""Where the CPU of a command goes, by program: every process it (or anything else on the machine) ended while it
ran, from the kernel's process accounting, named by its command line.

    python bench/process_cpu.py --out /tmp/cpu -- ./scripts/test     # as root; prints the table at the end
    python bench/process_cpu.py --out /tmp/cpu --report               # the table of an earlier recording
    (--all: a line for every program; by default those under 0.5% of the CPU share one line)

The kernel writes one record per process as it exits (``acct(2)``, BSD process accounting, version 3 records): its
user and system CPU, pid and start time, and only 16 characters of its name. A thread of this script samples
``/proc/*/cmdline`` every half second, so most processes get their full command line, the last one seen: an exec
keeps the pid (a pod's ``runc init`` becomes the container's program), so a process's is read again during its first
half minute. One that lived less than half a second is named by its 16 characters. A process still running when the
command ends is not counted (the command's own children have ended by then). Accounting is one switch per PID
namespace: this turns it on for the command and off after it, so do not use it where something else keeps accounting
on. A recording inside another (this script's own test, in a recorded test suite) runs in a PID namespace of its own
(``unshare --pid --fork --mount-proc``): a process is accounted in its namespace's file and in every ancestor's, so
neither recording stops the other.

Written here rather than taken from the ``acct`` package's ``sa``: ``sa`` groups by the 16-character name, which
cannot tell our bookie from pytest (both ``python``) or one JVM from another (all ``java``).
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

# struct acct_v3 (linux/acct.h): flag, version, tty, exitcode, uid, gid, pid, ppid, btime, etime (float, ticks),
# utime, stime, mem, io, rw, minflt, majflt, swaps (comp_t), comm[16].
_RECORD = struct.Struct("<BBHIIIIIIf8H16s")
_ACCT_V3 = 3
_TICKS = 100  # AHZ: comp_t times are in 1/100 s
# A process's command line is read again for this long after it is first seen, for an exec: most exec at once
# (a container's init, a launcher script); reading every process's on each pass would cost the recorder more.
_EXEC_WITHIN_S = 30.0

# (program, pattern over the command line), first match wins: the order matters where one command line names
# another program (pytest's arguments name test folders; a bookie's names its config).
PROGRAMS: tuple[tuple[str, str], ...] = (
    ("pytest", r"-m pytest"),
    ("our bookies, forked from the fork server", r"fork_server bookie\.cli"),
    ("our inspectors", r"bookie(\.cli)? inspect serve"),
    ("our bookies", r"bookie(\.cli)? serve"),
    ("Apache BookKeeper's bookies", r"org\.apache\.bookkeeper\.server\.Main|/opt/bookkeeper/bin/entrypoint bookie"),
    ("Spark's JVMs and PySpark's workers", r"spark|pyspark"),
    ("ZooKeeper", r"QuorumPeerMain|ZooKeeperServerMain"),
    ("Pulsar", r"pulsar"),
    ("other JVMs", r"(^|/)java "),
    ("kube-apiserver", r"kube-apiserver"),
    ("etcd", r"(^|/)etcd "),
    ("kube-controller-manager", r"kube-controller-manager"),
    ("the pod runner", r"localkube\.runner"),
    ("runc", r"runc"),
    ("operators", r"bookie_operator|kopf"),
    ("other Python", r"python"),
)


@dataclass(frozen=True)
class Ended:
    pid: int
    started: int  # seconds since the epoch
    lived_s: float
    cpu_s: float
    name: str  # the kernel's 16 characters


def read_records(path: Path) -> Iterator[Ended]:
    data = path.read_bytes()
    for offset in range(0, len(data) - _RECORD.size + 1, _RECORD.size):
        fields = _RECORD.unpack_from(data, offset)
        if fields[1] != _ACCT_V3:
            continue
        pid, started, elapsed, utime, stime = fields[6], fields[8], fields[9], fields[10], fields[11]
        yield Ended(pid, started, elapsed / _TICKS, (_comp_t(utime) + _comp_t(stime)) / _TICKS,
                    fields[18].split(b"\0", 1)[0].decode(errors="replace"))


def _comp_t(value: int) -> int:
    """comp_t: a 13-bit mantissa and a 3-bit base-8 exponent."""
    return (value & 0x1FFF) << (3 * (value >> 13))


def program_of(command_line: str, name: str) -> str:
    for program, pattern in PROGRAMS:
        if re.search(pattern, command_line):
            return program
    return f"other: {name}" if name else "other"


def _sample_command_lines(out: Path, stop: threading.Event) -> None:
    """Appends ``[pid, seen_at, command line]`` for each process not seen before (a pid with a new start time is
    a new process), and again when a young process's command line changes: an exec keeps the pid and start time
    (a pod's ``runc init`` becomes the container's program, a shell's ``exec`` its last command), and the record
    is named by the last command line seen."""
    seen: dict[tuple[int, int], tuple[float, bytes]] = {}  # (pid, start) -> (first seen, last command line)
    with out.open("a") as sink:
        while not stop.is_set():
            now = time.time()
            for entry in os.scandir("/proc"):
                if not entry.name.isdigit():
                    continue
                try:
                    key = (int(entry.name), entry.stat().st_ctime_ns)
                    first_seen, last = seen.get(key, (now, None))
                    if last is not None and now - first_seen > _EXEC_WITHIN_S:
                        continue
                    raw = Path(entry.path, "cmdline").read_bytes()
                except OSError:
                    continue  # ended meanwhile
                if raw == last:
                    continue
                seen[key] = (first_seen, raw)
                sink.write(json.dumps([key[0], now, raw.replace(b"\0", b" ").decode(errors="replace")]) + "\n")
            sink.flush()
            stop.wait(0.5)


def record(out: Path, command: list[str]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    accounting = out / "pacct"
    accounting.touch()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.acct(str(accounting).encode()) != 0:
        raise SystemExit(f"process_cpu: acct({accounting}) failed: {os.strerror(ctypes.get_errno())} (needs root)")
    stop = threading.Event()
    sampler = threading.Thread(target=_sample_command_lines, args=(out / "command-lines.jsonl", stop), daemon=True)
    sampler.start()
    try:
        return subprocess.call(command)
    finally:
        libc.acct(None)
        stop.set()
        sampler.join()


def table(out: Path) -> list[tuple[str, int, float]]:
    """(program, processes, CPU-seconds), most CPU first."""
    seen: dict[int, list[tuple[float, str]]] = collections.defaultdict(list)
    lines = out / "command-lines.jsonl"
    if lines.exists():
        for line in lines.read_text().splitlines():
            pid, seen_at, command_line = json.loads(line)
            seen[pid].append((seen_at, command_line))
    cpu: dict[str, float] = collections.defaultdict(float)
    count: collections.Counter[str] = collections.Counter()
    for ended in read_records(out / "pacct"):
        # The last command line seen for this pid while the process lived (an exec changes it; a pid is reused).
        during = [c for t, c in seen.get(ended.pid, []) if ended.started - 2 <= t <= ended.started + ended.lived_s + 2]
        program = program_of(during[-1] if during else "", ended.name)
        cpu[program] += ended.cpu_s
        count[program] += 1
    return sorted(((program, count[program], seconds) for program, seconds in cpu.items()), key=lambda row: -row[2])


def print_table(rows: list[tuple[str, int, float]], smallest_share: float = 0.005) -> None:
    """The programs with at least ``smallest_share`` of the CPU, then the others in one line."""
    total = sum(seconds for _, _, seconds in rows)
    print(f"{total / 60:.1f} CPU-minutes in {sum(n for _, n, _ in rows)} processes that ended")
    print(f"{'CPU-s':>8} {'share':>6} {'processes':>9}  program")
    shown = [row for row in rows if not total or row[2] / total >= smallest_share]
    small = rows[len(shown):]  # rows come most CPU first, so the small ones are the tail
    for program, processes, seconds in shown:
        print(f"{seconds:8.1f} {seconds / total if total else 0:6.1%} {processes:9d}  {program}")
    if small:
        seconds = sum(s for _, _, s in small)
        print(f"{seconds:8.1f} {seconds / total:6.1%} {sum(n for _, n, _ in small):9d}  "
              f"{len(small)} programs of less than {smallest_share:.1%} each")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="where the records and command lines go")
    parser.add_argument("--report", action="store_true", help="only print the table of an earlier recording")
    parser.add_argument("--all", action="store_true", help="a line for every program, however little CPU it took")
    parser.add_argument("command", nargs="*", help="the command to run (after --)")
    args = parser.parse_args(argv)
    if args.report:
        if not (args.out / "pacct").exists():
            parser.error(f"no recording in {args.out} (its pacct file is missing)")
        print_table(table(args.out), 0.0 if args.all else 0.005)
        return 0
    if not args.command:
        parser.error("name the command to measure after --, or ask for --report")
    status = record(args.out, args.command)
    print_table(table(args.out), 0.0 if args.all else 0.005)
    return status


if __name__ == "__main__":
    sys.exit(main())
