"""What the tests of scripts/native_sources.py (the C sources' checks in ./scripts/check-layers) share: running the
check on a tree, and a copy of the bookie's sources to add a violating file to."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHECK = REPO / "scripts" / "native_sources.py"


def check(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), "--root", str(root)], capture_output=True, text=True,
                          timeout=60, check=False)


def copy_sources(root: Path) -> None:
    shutil.copytree(REPO / "bookie_image" / "bookie", root / "bookie",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
