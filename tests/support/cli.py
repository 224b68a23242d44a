"""Run the project's console scripts (``bookie-shell``, ``bookie-stream``) as real subprocesses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def script(name: str) -> str:
    """The console script installed next to this interpreter (the editable install of pyproject.toml)."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise FileNotFoundError(f"{path} missing: run ./scripts/bootstrap (it installs the console scripts)")
    return str(path)


def run(name: str, *args: str, input: str | None = None, timeout: float = 180,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    """``name args...``; with ``check`` a non-zero exit fails with the command's stderr."""
    proc = subprocess.run([script(name), *args], input=input, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{name} {' '.join(args)} exited {proc.returncode}\nstdout:\n{proc.stdout}\n"
                             f"stderr:\n{proc.stderr}")
    return proc
