"""The bootstrap uses a cached virtualenv only at the path it was made at. One moved or copied into the cache
(restored under another HOME, say) runs its python, but each of its scripts (mypy's, pip's) names the old path
on its first line and fails with "cannot execute": the bootstrap makes such a virtualenv again. Runs the real
shell function (scripts/bootstrap.d/lib/cache.sh) on virtualenvs Python makes."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

LIB = Path(__file__).resolve().parents[2] / "scripts" / "bootstrap.d" / "lib" / "cache.sh"


def _made(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    (path / ".complete").touch()
    return path


def _ready(path: Path) -> bool:
    script = f'log() {{ :; }}; source "{LIB}"; venv_ready "{path}"'
    return subprocess.run(["bash", "-c", script], check=False).returncode == 0


def test_a_complete_virtualenv_at_the_path_it_was_made_at_is_used(tmp_path: Path) -> None:
    assert _ready(_made(tmp_path / "venv-0123456789ab"))


def test_a_virtualenv_moved_from_another_path_is_made_again(tmp_path: Path) -> None:
    made = _made(tmp_path / "home" / ".cache" / "venv-0123456789ab")
    moved = tmp_path / "cache" / "venv-0123456789ab"
    moved.parent.mkdir()
    shutil.move(made, moved)

    assert (moved / "bin" / "python").exists() and (moved / ".complete").exists()
    assert not _ready(moved)


def test_a_virtualenv_copied_beside_the_one_it_came_from_is_made_again(tmp_path: Path) -> None:
    # The path it was made at ends like the copy's: only the whole path counts.
    made = _made(tmp_path / "old" / "venv-0123456789ab")
    copy = tmp_path / "venv-0123456789ab"
    shutil.copytree(made, copy, symlinks=True)

    assert _ready(made) and not _ready(copy)


def test_an_unfinished_virtualenv_is_made_again(tmp_path: Path) -> None:
    unfinished = _made(tmp_path / "venv-0123456789ab")
    (unfinished / ".complete").unlink()

    assert not _ready(unfinished)
