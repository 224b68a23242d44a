"""Every test file's name is unique across tests/: the test folders are not packages, so pytest imports each
file by its basename, and one process collecting two folders that hold the same name fails with "import file
mismatch" (scripts/test runs folders together in groups, and a developer any selection of them)."""

from __future__ import annotations

import collections
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_name() -> None:
    by_name = collections.defaultdict(list)
    for path in TESTS.rglob("test_*.py"):
        by_name[path.name].append(str(path.relative_to(TESTS)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not shared, f"test files sharing a name (rename one of each): {shared}"
