"""Where a container's termination message lives on the machine, and how it is read back.

The container sees this file at its ``terminationMessagePath`` (default ``/dev/termination-log``); what it
writes there becomes ``state.terminated.message``, as the kubelet reports it.
"""

from __future__ import annotations

from pathlib import Path

MAX_MESSAGE_BYTES = 4096          # the kubelet's limit for the file
FALLBACK_LOG_LINES, FALLBACK_LOG_BYTES = 80, 2048   # FallbackToLogsOnError: the log's tail, as the kubelet


def termination_log_path(pod_dir: Path, container: str) -> Path:
    """The host file behind ``container``'s termination message in the pod directory ``pod_dir``."""
    return pod_dir / "termination" / f"{container}.log"


def read_message(pod_dir: Path, container: str, policy: str, log_path: Path, exit_code: int) -> str:
    """The termination message: the file's content, else (FallbackToLogsOnError and a failure) the log's tail."""
    try:
        with open(termination_log_path(pod_dir, container), "rb") as f:
            message = f.read(MAX_MESSAGE_BYTES).decode(errors="replace")
    except OSError:
        message = ""
    if message or policy != "FallbackToLogsOnError" or exit_code == 0:
        return message
    try:
        with open(log_path, "rb") as f:
            f.seek(0, 2)
            f.seek(max(0, f.tell() - FALLBACK_LOG_BYTES))
            tail = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(tail.splitlines()[-FALLBACK_LOG_LINES:])
