"""The bootstrap prunes keyed cache entries of earlier sources (``images-<hash>``, ``venv-<hash>``): an entry
goes once it is neither among the three used last nor used in the last two hours, and the one in use stays
whatever its age. Runs the real shell function on a scratch cache."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "scripts" / "bootstrap.d" / "lib" / "cache.sh"
HOUR = 3600


def _entry(cache: Path, name: str, age_s: float) -> Path:
    path = cache / name
    (path / "oci").mkdir(parents=True)
    (path / "oci" / "index.json").write_text("{}")
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


def _prune(cache: Path, prefix: str, current: Path) -> str:
    script = f'log() {{ echo "$*"; }}; source "{LIB}"; prune_cache_entries "{cache}" {prefix} "{current}"'
    return subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout


def test_old_entries_go_and_recent_or_in_use_ones_stay(tmp_path: Path) -> None:
    current = _entry(tmp_path, "images-inuse", 30 * HOUR)   # old, but this checkout's: touched, kept
    recent = [_entry(tmp_path, f"images-recent{i}", 0.5 * HOUR + i) for i in range(4)]   # another run's
    old = [_entry(tmp_path, f"images-old{i}", (3 + i) * HOUR) for i in range(3)]
    other = _entry(tmp_path, "venv-old", 10 * HOUR)          # another prefix: not this call's
    lock = tmp_path / ".images-build.lock"
    lock.write_text("")

    printed = _prune(tmp_path, "images", current)

    assert current.exists() and all(p.exists() for p in recent)
    assert not any(p.exists() for p in old), printed
    assert other.exists() and lock.exists()
    assert printed.count("not used for two hours") == 3


def test_the_three_used_last_stay_however_old(tmp_path: Path) -> None:
    current = _entry(tmp_path, "venv-current", 0)
    kept = [_entry(tmp_path, f"venv-kept{i}", (5 + i) * HOUR) for i in range(2)]
    gone = _entry(tmp_path, "venv-gone", 9 * HOUR)

    _prune(tmp_path, "venv", current)

    assert current.exists() and all(p.exists() for p in kept) and not gone.exists()
