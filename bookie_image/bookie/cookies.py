"""Cookies: proof that a bookie's directories and its registration in ZooKeeper belong together.

BookKeeper writes the same cookie to ``<dir>/current/VERSION`` of every journal and ledger directory and to
``<ledgers root>/cookies/<bookie id>``. At start they must agree, so a bookie never serves a foreign or
wiped disk under an id whose data other bookies and clients expect.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from bookie.config import BookieConfig
from bookie.metadata.cookie import Cookie, CookieError, CookieMismatch
from bookie.metadata.store import MetadataStore

log = logging.getLogger(__name__)


class CookieCheckFailed(Exception):
    """The bookie must not start: the message says which directory or znode disagrees and why."""


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
        except CookieError as exc:
            raise CookieCheckFailed(f"{path}: {exc}") from None
    return found


def write_local(dirs: list[Path], cookie: Cookie) -> None:
    for d in dirs:
        current = d / "current"
        current.mkdir(parents=True, exist_ok=True)
        tmp = current / "VERSION.tmp"
        tmp.write_bytes(cookie.to_bytes())
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        tmp.replace(current / "VERSION")


def has_data(d: Path) -> bool:
    current = d / "current"
    return current.is_dir() and any(p.name != "VERSION" for p in current.iterdir())


async def check_and_write(conf: BookieConfig, store: MetadataStore) -> Cookie:
    """Verify or create the cookies; raises ``CookieCheckFailed`` with the reason."""
    instance_id = await store.instance_id()
    expected = expected_cookie(conf, instance_id)
    dirs = cookie_dirs(conf)
    local = read_local(dirs)  # small files, read once at start before serving
    remote = await store.read_cookie(conf.effective_bookie_id)
    present = {d: c for d, c in local.items() if c is not None}
    for d, c in present.items():
        try:
            expected.verify(c)
        except CookieMismatch as exc:
            raise CookieCheckFailed(f"{d / 'current' / 'VERSION'}: {exc}") from None
    if remote is not None:
        try:
            expected.verify(remote.value)
        except CookieMismatch as exc:
            raise CookieCheckFailed(f"cookie in ZooKeeper: {exc}") from None
    missing = [d for d, c in local.items() if c is None]
    if remote is not None and not present:
        raise CookieCheckFailed(
            f"cookie for {conf.effective_bookie_id} exists in ZooKeeper but none of its directories has one: "
            "the disks were wiped or replaced. Decommission the old bookie (its cookie is then deleted) "
            "or restore its directories.")
    if present and missing:
        stray = [str(d) for d in missing if has_data(d)]
        if stray:
            raise CookieCheckFailed(f"directories {stray} hold data but no cookie: not this bookie's")
        log.info("new directories %s get the bookie's cookie", [str(d) for d in missing])
    if remote is None and present:
        # Our directories, but ZooKeeper forgot us (the bookie was decommissioned and comes back): the data
        # that is still here is over-replicated garbage for GC, so registering again is safe.
        log.warning("cookie of %s missing in ZooKeeper; writing it again", conf.effective_bookie_id)
    if remote is None:
        await store.write_cookie(conf.effective_bookie_id, expected, None)
    if missing:
        write_local(missing, expected)
    return expected
