"""Soak runs of the fault scenarios (tests/faults/): many more seeded rounds than CI runs, one pytest process.

    python bench/fault_soak.py --rounds 30                  # every scenario, 30 rounds each
    python bench/fault_soak.py --rounds 30 --seed 1234      # the same schedule again
    python bench/fault_soak.py --rounds 30 -k journal       # only what ``-k`` selects

Each scenario reads its rounds from ``BOOKIE_FLEET_FAULT_ROUNDS`` and its seed from ``BOOKIE_FLEET_SEED``
(tests/support/seeds.py). The output is pytest's, then one line per scenario (outcome, seconds) and the
markdown rows of docs/reliability.md's table, with the command that produced them.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCENARIOS = "tests/faults"
_RESULT = re.compile(r"^(?P<seconds>[\d.]+)s call\s+(?P<test>\S+)$")
_OUTCOME = re.compile(r"^(?P<outcome>PASSED|FAILED|ERROR) (?P<test>\S+)")


def _args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30, help="seeded rounds per scenario (CI runs 2 to 10)")
    parser.add_argument("--seed", type=int, default=None, help="replay a schedule (default: a fresh seed)")
    parser.add_argument("-k", dest="select", default=None, help="pytest -k expression: which scenarios")
    args = parser.parse_args(argv)
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {args.rounds}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _args(argv)
    seed = secrets.randbits(32) if args.seed is None else args.seed
    env = {**os.environ, "BOOKIE_FLEET_FAULT_ROUNDS": str(args.rounds), "BOOKIE_FLEET_SEED": str(seed)}
    with tempfile.TemporaryDirectory(prefix="fault-soak-") as base:
        command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--durations=0",
                   f"--basetemp={base}/bt", SCENARIOS, "--deselect", f"{SCENARIOS}/test_history_checker.py"]
        if args.select:
            command += ["-k", args.select]
        proc = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True)
    print(proc.stdout[-20000:], proc.stderr[-5000:], sep="\n")
    seconds = {m["test"]: float(m["seconds"]) for m in map(_RESULT.match, proc.stdout.splitlines()) if m}
    outcomes = {m["test"]: m["outcome"] for m in map(_OUTCOME.match, proc.stdout.splitlines()) if m}
    shown = " ".join(shlex.quote(a) for a in ["python", "bench/fault_soak.py", "--rounds", str(args.rounds),
                                              "--seed", str(seed)] + (["-k", args.select] if args.select else []))
    print(f"\n{shown}")
    for test, outcome in sorted(outcomes.items()):
        name = test.split("::", 1)[1]
        violations = "0" if outcome == "PASSED" else "see output"
        print(f"| {name} | {args.rounds} | {violations} | {outcome.lower()}, {seconds.get(test, 0):.0f} s |")
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
