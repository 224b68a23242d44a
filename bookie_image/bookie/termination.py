"""Why a bookie could not start, written where operators look: the container's termination message.

Kubernetes shows the file at a container's ``terminationMessagePath`` (``/dev/termination-log`` by default) in
``containerStatuses[].lastState.terminated.message``, ``kubectl describe pod`` and to the operator. The first
word of the message is a machine-readable reason (``CookieMismatch: ...``), the rest says why and what to do.
Outside Kubernetes the default path does not exist and nothing is written; ``bookie serve
--termination-log PATH`` (or ``BOOKIE_TERMINATION_LOG``) names another file, ``""`` turns it off.
"""

from __future__ import annotations

import errno
import logging
import os
from collections.abc import Mapping
from pathlib import Path

log = logging.getLogger(__name__)

DEFAULT_PATH = "/dev/termination-log"
ENV_VAR = "BOOKIE_TERMINATION_LOG"
MAX_BYTES = 4096  # what the kubelet reads of a termination message file

COOKIE_MISMATCH = "CookieMismatch"
INVALID_CONFIG = "InvalidConfig"
DIRECTORY_NOT_WRITABLE = "DirectoryNotWritable"
DEVICE_ERROR = "DeviceError"  # a journal, ledger or index device answering I/O errors (EIO): a failing disk
METADATA_UNREACHABLE = "MetadataUnreachable"
DISK_FULL = "DiskFull"
PORT_IN_USE = "PortInUse"
INCOMPATIBLE_DISK = "IncompatibleDisk"  # a ledger directory in a layout this bookie cannot serve (not opened)
STARTUP_FAILED = "StartupFailed"
WRONG_IMAGE = "WrongImage"  # the pod is built for Apache BookKeeper's bookie, the image runs this one
REASONS = (COOKIE_MISMATCH, INVALID_CONFIG, DIRECTORY_NOT_WRITABLE, DEVICE_ERROR, METADATA_UNREACHABLE, DISK_FULL,
           PORT_IN_USE, INCOMPATIBLE_DISK, STARTUP_FAILED, WRONG_IMAGE)

# The implementation a pod is built for, set by the operator in the bookie container (its spec.implementation):
# ``bookie serve`` refuses to start in a pod built for another one (an image that does not match it).
IMPLEMENTATION_ENV = "BOOKIE_FLEET_IMPLEMENTATION"
IMPLEMENTATION = "bookie-fleet"

_SPACE_ERRNOS = {errno.ENOSPC, errno.EDQUOT}


class StartFailure(Exception):
    """The bookie must not start; ``reason`` is one of ``REASONS``, the message says why and what to do."""

    def __init__(self, message: str, reason: str = STARTUP_FAILED) -> None:
        super().__init__(message)
        self.reason = reason


def reason_for_error(exc: BaseException) -> str:
    """The reason of an unexpected start-up error: a full disk, a failing device and a taken port are told
    apart."""
    if isinstance(exc, StartFailure):
        return exc.reason
    if isinstance(exc, OSError):
        if exc.errno in _SPACE_ERRNOS:
            return DISK_FULL
        if exc.errno == errno.EIO:
            return DEVICE_ERROR
        if exc.errno == errno.EADDRINUSE:
            return PORT_IN_USE
        if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return DIRECTORY_NOT_WRITABLE
    if "No space left on device" in str(exc):  # RocksDB's IOError carries the text, not an errno
        return DISK_FULL
    if "Input/output error" in str(exc):
        return DEVICE_ERROR
    return STARTUP_FAILED


def device_error(what: str, exc: OSError) -> StartFailure:
    """A start-up read or write of ``what`` (a file or directory) that its device answered with an I/O error."""
    return StartFailure(f"{what}: its device answers I/O errors ({exc.strerror}): the disk or volume under it is "
                        "failing; replace it (its ledgers are copied again from the other bookies by autorecovery)",
                        DEVICE_ERROR)


def render(reason: str, message: str) -> bytes:
    """``Reason: message`` in at most ``MAX_BYTES`` bytes of UTF-8 (cut on a character boundary)."""
    data = f"{reason}: {message}".encode()
    if len(data) <= MAX_BYTES:
        return data
    return data[:MAX_BYTES - 3].decode(errors="ignore").encode() + b"..."


def wrong_image(env: Mapping[str, str]) -> str | None:
    """Why this bookie must not start in a pod built for another implementation (``IMPLEMENTATION_ENV``); None
    when the pod is built for it, or says nothing (outside the operator's pods)."""
    wanted = env.get(IMPLEMENTATION_ENV, "")
    if not wanted or wanted == IMPLEMENTATION:
        return None
    return (f"this image runs bookie-fleet's bookie, but the pod is built for {wanted} ({IMPLEMENTATION_ENV}, "
            f"the cluster's spec.implementation): set spec.image to an image of {wanted}'s bookie, or "
            f"spec.implementation to {IMPLEMENTATION}")


def configured_path(flag: str | None) -> tuple[str, bool]:
    """(path, explicit): the flag, else the environment variable, else Kubernetes' default path."""
    if flag is not None:
        return flag, True
    if ENV_VAR in os.environ:
        return os.environ[ENV_VAR], True
    return DEFAULT_PATH, False


def write(reason: str, message: str, flag: str | None = None) -> Path | None:
    """Write the termination message; returns the file written, None when there is none to write.

    The default path is written only when it exists (a container's); an explicitly named file is created.
    A failure to write is logged, never raised: the bookie is exiting for the reason being reported.
    """
    path, explicit = configured_path(flag)
    if not path or (not explicit and not os.path.exists(path)):
        return None
    try:
        with open(path, "wb") as f:
            f.write(render(reason, message))
    except OSError as exc:
        log.warning("cannot write the termination message to %s: %s", path, exc)
        return None
    return Path(path)
