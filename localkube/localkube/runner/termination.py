"""Termination messages, as the kubelet keeps them: one host file per container, bind-mounted at the container's
``terminationMessagePath``, read when the container exits into ``state.terminated.message``.

Every container backend mounts ``termination_log_path``; ``read_message`` applies the container's
``terminationMessagePolicy`` (``FallbackToLogsOnError``: the end of the log when the file is empty and the
container failed).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DEFAULT_PATH = "/dev/termination-log"
MAX_BYTES = 4096          # the kubelet reads at most this much of the file
FALLBACK_LINES = 80       # and at most these many lines of the log (FallbackToLogsOnError)


def termination_log_path(pod_dir: Path, container_name: str) -> Path:
    """The host file behind a container's termination message (kept across restarts, like the kubelet's)."""
    return pod_dir / "termination" / container_name


def mount_for(spec: dict[str, Any], pod_dir: Path) -> dict[str, Any]:
    """The bind mount of the container's termination message file; the host file is created empty."""
    host = termination_log_path(pod_dir, str(spec["name"]))
    host.parent.mkdir(parents=True, exist_ok=True)
    host.touch()
    target = os.path.normpath(spec.get("terminationMessagePath") or DEFAULT_PATH)
    return {"source": str(host), "target": target, "readonly": False}


def clear(pod_dir: Path, container_name: str) -> None:
    """Empty the file before the container (re)starts: a message belongs to one run."""
    host = termination_log_path(pod_dir, container_name)
    if host.exists():
        host.write_bytes(b"")


def read_message(spec: dict[str, Any], pod_dir: Path, log_path: Path, exit_code: int) -> str:
    """The message of a terminated container ("" when there is none)."""
    try:
        with open(termination_log_path(pod_dir, str(spec["name"])), "rb") as f:
            text = f.read(MAX_BYTES).decode(errors="replace")
    except OSError:
        text = ""
    if text or exit_code == 0 or spec.get("terminationMessagePolicy") != "FallbackToLogsOnError":
        return text
    return _log_tail(log_path)


def _log_tail(log_path: Path) -> str:
    try:
        with open(log_path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - MAX_BYTES))
            data = f.read()
    except OSError:
        return ""
    lines = data.decode(errors="replace").splitlines()[-FALLBACK_LINES:]
    return "\n".join(lines)[-MAX_BYTES:]
