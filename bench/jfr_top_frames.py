"""A JFR recording's CPU samples (jdk.ExecutionSample) summarised as text: samples by thread group, by top frame,
and by the innermost Pulsar / BookKeeper frame of each stack (what the time was spent for).

    jcmd <pid> JFR.start settings=default duration=300s filename=broker.jfr    # on the running JVM
    python bench/jfr_top_frames.py broker.jfr [--top 20] > docs/profiles/<name>.txt

Reads ``jfr print --events jdk.ExecutionSample --stack-depth 64`` (the JDK's jfr tool).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from pulsar_e2e_bench import thread_group

OWN_CODE = ("org.apache.pulsar.", "org.apache.bookkeeper.")
_THREAD = re.compile(r'sampledThread = "(.*)" \(javaThreadId')
_FRAME = re.compile(r"^\s+([\w$.<>]+)\(")


def samples(text: str) -> Iterator[tuple[str, list[str]]]:
    """(thread name, frames, innermost first) of each sample in ``jfr print``'s output."""
    thread, in_stack = "", False
    frames: list[str] = []
    for line in text.splitlines():
        if m := _THREAD.search(line):
            thread = m.group(1)
        elif "stackTrace = [" in line:
            frames, in_stack = [], True
        elif in_stack and line.strip() == "]":
            in_stack = False
            yield thread, frames
        elif in_stack and (m := _FRAME.match(line)):
            frames.append(m.group(1))


def summary(text: str, top: int) -> str:
    threads: Counter[str] = Counter()
    tops: Counter[str] = Counter()
    owners: Counter[str] = Counter()
    for thread, frames in samples(text):
        threads[thread_group(thread)] += 1
        tops[frames[0] if frames else "?"] += 1
        # The innermost Pulsar or BookKeeper frame says what the time was spent for; a stack without one (Netty's
        # event loop, the JIT, GC) counts under its top frame.
        owners[next((f for f in frames if f.startswith(OWN_CODE)), frames[0] if frames else "?")] += 1
    total = sum(threads.values()) or 1
    out = [f"{total} CPU samples (jdk.ExecutionSample)"]
    for title, counts in (("by thread group", threads), ("by top frame", tops),
                          ("by innermost Pulsar / BookKeeper frame (else the top frame)", owners)):
        out += ["", f"{title}:"]
        out += [f"{100 * n / total:6.1f}%  {n:6d}  {name}" for name, n in counts.most_common(top)]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("recording", type=Path)
    parser.add_argument("--top", type=int, default=20, help="rows per table")
    args = parser.parse_args(argv)
    if not args.recording.is_file():
        parser.error(f"no recording at {args.recording}")
    if args.top < 1:
        parser.error(f"--top must be >= 1 (got {args.top})")
    printed = subprocess.run([shutil.which("jfr") or "jfr", "print", "--events", "jdk.ExecutionSample",
                              "--stack-depth", "64", str(args.recording)], capture_output=True, text=True)
    if printed.returncode != 0:
        print(f"jfr print failed on {args.recording}: {printed.stderr.strip()}", file=sys.stderr)
        return 1
    sys.stdout.write(summary(printed.stdout, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
