"""The benchmarks' ``--workdir``: the directory a run keeps its files under (bookies' disks, ZooKeeper's data,
logs), created when missing; a path that cannot be a directory ends the run with a message naming it, before
anything starts."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def add_workdir_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where the run keeps its files (created if missing; default: the system's temporary "
                             "directory)")


def ensure_workdir(workdir: Path | None) -> Path:
    """``workdir`` (the system's temporary directory when None), created if missing."""
    if workdir is None:
        return Path(tempfile.gettempdir())
    try:
        workdir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SystemExit(f"--workdir {workdir}: cannot be used as a directory: {exc.strerror}") from None
    return workdir


@contextmanager
def run_directory(workdir: Path | None, prefix: str) -> Iterator[Path]:
    """A directory of its own for this run under ``workdir``, removed at its end."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir=ensure_workdir(workdir)) as tmp:
        yield Path(tmp)


def kept_run_directory(workdir: Path | None, prefix: str) -> Path:
    """A directory of its own for this run under ``workdir``, kept afterwards (its logs explain a failed run)."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir=ensure_workdir(workdir)))
