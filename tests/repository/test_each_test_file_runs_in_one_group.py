"""scripts/test runs the suite as groups side by side, each one or two pytest processes in turn, each process given
folders, files and ``--ignore``s: every test file of tests/ is run by exactly one process (none skipped, none run
twice), whatever file is moved between groups to balance them."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _process_args() -> list[list[str]]:
    """Each pytest process's arguments, as scripts/test computes them (its own lines, run by bash): each group's
    first process, then the second ones of the groups that have one."""
    script = (REPO / "scripts" / "test").read_text()
    start, end = script.index("kube_stories=("), script.index("\nlive=0")
    program = script[start:end] + ('\nfor args in "${group_args[@]}" "${then_args[@]}"; do'
                                   ' [ -z "$args" ] || printf "%s\\0" "$args"; done\n')
    out = subprocess.run(["bash", "-c", program], cwd=REPO, capture_output=True, text=True, check=True,
                         timeout=60).stdout
    return [args.split() for args in out.split("\0")[:-1]]


def _files(args: list[str]) -> set[Path]:
    ignored = {REPO / a.removeprefix("--ignore=") for a in args if a.startswith("--ignore=")}
    files: set[Path] = set()
    for arg in (a for a in args if not a.startswith("-")):
        path = REPO / arg
        found = {path} if path.is_file() else set(path.rglob("test_*.py"))
        files |= {f for f in found if not any(f == i or i in f.parents for i in ignored)}
    return files


def test_every_test_file_runs_in_exactly_one_group() -> None:
    processes = _process_args()
    assert len(processes) >= 3, processes
    runs: dict[Path, int] = {}
    for args in processes:
        for path in _files(args):
            runs[path] = runs.get(path, 0) + 1
    every = set((REPO / "tests").rglob("test_*.py"))
    assert sorted(str(p.relative_to(REPO)) for p in every - set(runs)) == [], "test files no group runs"
    assert sorted(str(p.relative_to(REPO)) for p, n in runs.items() if n > 1) == [], "test files run twice"
