"""Cookies: proof that a bookie's directories and its registration in ZooKeeper belong together.

BookKeeper writes the same cookie to ``<dir>/current/VERSION`` of every journal and ledger directory and to
``<ledgers root>/cookies/<bookie id>``. At start they must agree, so a bookie never serves a foreign or
wiped disk under an id whose data other bookies and clients expect.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
from pathlib import Path

from bookie import termination
from bookie.config import BookieConfig
from bookie.metadata.cookie import Cookie, CookieError, CookieMismatch, decode_dirs
from bookie.metadata.cookie_store import CookieStore
from bookie.storage import durable
from bookie.termination import StartFailure

log = logging.getLogger(__name__)
_PROBE = ".bookie-write-check"
_PROBE_BYTES = 4096  # one block: a full disk refuses it even when creating an empty file still works


class CookieCheckFailed(StartFailure):
    """The bookie must not start: the message says which directory or znode disagrees and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message, termination.COOKIE_MISMATCH)


def check_writable(dirs: list[Path]) -> None:
    """Every journal, ledger and index directory can be created and written, before anything else touches them.

    Raises ``StartFailure`` with reason ``DiskFull`` (no space or quota left), ``DeviceError`` (the device answers
    I/O errors) or ``DirectoryNotWritable`` (read-only filesystem, permissions, a file in the way), naming the
    directory.
    """
    for d in dirs:
        probe = d / _PROBE
        try:
            durable.make_dirs(d)
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, b"\0" * _PROBE_BYTES)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            reason = termination.reason_for_error(exc)
            if reason == termination.DEVICE_ERROR:
                raise termination.device_error(f"directory {d}", exc) from None
            if reason == termination.DISK_FULL:
                raise StartFailure(f"directory {d}: no space left ({exc.strerror}): free space on its volume or "
                                   "give it a larger one", reason) from None
            raise StartFailure(f"directory {d} is not writable ({exc.strerror}): the bookie must be able to "
                               "create files in every journal, ledger and index directory (check the volume's "
                               "mount options and ownership)", termination.DIRECTORY_NOT_WRITABLE) from None
        finally:
            with contextlib.suppress(OSError):
                probe.unlink()


def expected_cookie(conf: BookieConfig, instance_id: str | None) -> Cookie:
    index = [str(p) for p in conf.index_directories] if conf.index_directories else None
    return Cookie.generate(conf.effective_bookie_id, [str(p) for p in conf.journal_directories],
                           [str(p) for p in conf.ledger_directories], index_dirs=index, instance_id=instance_id)


def cookie_dirs(conf: BookieConfig) -> list[Path]:
    dirs = [*conf.journal_directories, *conf.ledger_directories, *(conf.index_directories or [])]
    return list(dict.fromkeys(dirs))


def read_local(dirs: list[Path]) -> dict[Path, Cookie | None]:
    found: dict[Path, Cookie | None] = {}
    for d in dirs:
        path = d / "current" / "VERSION"
        try:
            found[d] = Cookie.parse(path.read_bytes())
        except FileNotFoundError:
            found[d] = None
        except OSError as exc:
            if exc.errno == errno.EIO:
                raise termination.device_error(f"cookie {path}", exc) from None
            raise
        except CookieError as exc:
            raise CookieCheckFailed(f"{path}: {exc}") from None
    return found


def write_local(dirs: list[Path], cookie: Cookie) -> None:
    for d in dirs:
        current = d / "current"
        durable.make_dirs(current)
        durable.write_file(current / "VERSION", cookie.to_bytes())


def has_data(d: Path) -> bool:
    current = d / "current"
    return current.is_dir() and any(p.name != "VERSION" for p in current.iterdir())


def _verify(expected: Cookie, found: Cookie, expand: bool, where: str) -> None:
    try:
        expected.verify(found, superset=expand)
    except CookieMismatch as exc:
        hint = ""
        if not expand:
            try:
                expected.verify(found, superset=True)
                hint = " (directories were added: set allowStorageExpansion=true to accept new empty ones)"
            except CookieMismatch:
                pass
        if expected.instance_id != found.instance_id:
            hint += (f" (this directory belongs to BookKeeper instance {found.instance_id!r}, the metadata service "
                     f"is instance {expected.instance_id!r}: delete the directory's data, or point the bookie at "
                     "the metadata service it belongs to)")
        raise CookieCheckFailed(f"{where}: {exc}{hint}") from None


def known_dirs(cookie: Cookie) -> set[str]:
    """Every directory a cookie names (journal, ledger and index)."""
    dirs = {d for d in cookie.journal_dirs.split(",") if d}
    dirs.update(decode_dirs(cookie.ledger_dirs))
    dirs.update(decode_dirs(cookie.index_dirs or ""))
    return dirs


async def check_and_write(conf: BookieConfig, store: CookieStore, instance_id: str) -> Cookie:
    """Verify or create the cookies (BookKeeper's ``LegacyCookieValidation``); raises ``CookieCheckFailed``.

    - new bookie (no cookie anywhere): every directory must be empty; the cookie is stamped everywhere;
    - a directory the cookie in ZooKeeper names but that has no ``VERSION`` was wiped or replaced: refused;
    - a directory the cookie does not name yet (storage expansion) is accepted only with
      ``allowStorageExpansion=true`` and only when empty; the cookie is then updated in ZooKeeper and
      every directory;
    - a ``VERSION`` or the ZooKeeper cookie that disagrees with the configuration: refused, naming both.
    """
    bookie_id = conf.effective_bookie_id
    expand = conf.allow_storage_expansion
    expected = expected_cookie(conf, instance_id)
    dirs = cookie_dirs(conf)
    local = read_local(dirs)  # small files, read once at start before serving
    remote = await store.read_cookie(bookie_id)
    # Local cookies first, another bookie's first of all: a foreign directory is named by its own VERSION.
    present = {d: c for d, c in local.items() if c is not None}
    for d, c in sorted(present.items(), key=lambda item: item[1].bookie_id == bookie_id):
        _verify(expected, c, expand, f"{d / 'current' / 'VERSION'}")
    if remote is not None:
        _verify(expected, remote.value, expand, "cookie in ZooKeeper")
    missing = [d for d, c in local.items() if c is None]
    if remote is not None and missing:
        known = known_dirs(remote.value)
        wiped = [str(d) for d in missing if str(d) in known]
        if wiped:
            raise CookieCheckFailed(
                f"cookie for {bookie_id} exists in ZooKeeper but not locally in {', '.join(wiped)} "
                "(no current/VERSION): the directory was wiped or replaced. Restore it, or decommission "
                "the bookie (its cookie is then deleted) and start it as a new one.")
        new = [str(d) for d in missing]
        if not expand:
            raise CookieCheckFailed(
                f"directories {', '.join(new)} have no cookie and the cookie of {bookie_id} in ZooKeeper "
                "does not name them: set allowStorageExpansion=true to add empty directories")
    stray = [str(d) for d in missing if has_data(d)]
    if stray:
        raise CookieCheckFailed(f"directories {', '.join(stray)} hold data but no cookie: not this bookie's")
    if remote is None and present:
        # Our directories, but ZooKeeper forgot us (the bookie was decommissioned and comes back with its
        # volumes retained): the data still here is over-replicated garbage for GC, so registering again is
        # safe. Apache BookKeeper refuses this case; the operator's retain policy relies on it.
        log.warning("cookie of %s missing in ZooKeeper; writing it again", bookie_id)
    if remote is None:
        await store.write_cookie(bookie_id, expected, None)
        write_local(missing, expected)
    elif missing:
        log.info("storage expansion: directories %s get the cookie of %s", [str(d) for d in missing], bookie_id)
        await store.write_cookie(bookie_id, expected, remote.version)
        write_local(dirs, expected)
    return expected
