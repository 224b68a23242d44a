"""Bookie cookies (``Cookie.java``): who owns a set of journal and ledger directories.

Layout 5 text: ``"5\\n"`` + protobuf text format of ``CookieFormat``. The same text is stored in ZooKeeper
(``<root>/cookies/<bookieId>``) and in ``VERSION`` files of each ``current/`` directory; start-up compares
them so a bookie never serves a foreign or wiped directory.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from google.protobuf import text_format

from bookie.protocol.proto import DataFormats_pb2 as _df

df: Any = _df

CURRENT_COOKIE_LAYOUT_VERSION = 5


class CookieError(ValueError):
    """Unparseable cookie text."""


class CookieMismatch(Exception):
    """Two cookies that should describe the same bookie and directories do not."""


def encode_dirs(dirs: Sequence[str]) -> str:
    """``"<count>\\t<dir1>\\t<dir2>..."`` as BookKeeper stores ledger and index dirs."""
    return "\t".join([str(len(dirs)), *dirs])


def decode_dirs(encoded: str) -> list[str]:
    return encoded.split("\t")[1:] if encoded else []


@dataclass(frozen=True)
class Cookie:
    """Directories are kept in their encoded form, which is what BookKeeper compares."""

    bookie_id: str
    journal_dirs: str  # comma-joined
    ledger_dirs: str  # "<count>\t<dir>..."
    instance_id: str | None = None
    index_dirs: str | None = None
    layout_version: int = CURRENT_COOKIE_LAYOUT_VERSION

    @classmethod
    def generate(cls, bookie_id: str, journal_dirs: Sequence[str], ledger_dirs: Sequence[str], *,
                 index_dirs: Sequence[str] | None = None, instance_id: str | None = None) -> Cookie:
        return cls(bookie_id, ",".join(journal_dirs), encode_dirs(ledger_dirs), instance_id,
                   encode_dirs(index_dirs) if index_dirs is not None else None)

    def with_instance_id(self, instance_id: str | None) -> Cookie:
        return replace(self, instance_id=instance_id)

    def render(self) -> str:
        if self.layout_version <= 3:
            lines = (str(CURRENT_COOKIE_LAYOUT_VERSION), self.bookie_id, self.journal_dirs, self.ledger_dirs)
            return "\n".join(lines) + "\n"
        fmt = df.CookieFormat(bookieHost=self.bookie_id, journalDir=self.journal_dirs,
                              ledgerDirs=self.ledger_dirs)
        if self.instance_id is not None:
            fmt.instanceId = self.instance_id
        if self.index_dirs is not None:
            fmt.indexDirs = self.index_dirs
        return f"{CURRENT_COOKIE_LAYOUT_VERSION}\n{text_format.MessageToString(fmt)}"

    def to_bytes(self) -> bytes:
        return self.render().encode()

    @classmethod
    def parse(cls, data: bytes | str) -> Cookie:
        text = data.decode() if isinstance(data, bytes) else data
        first, _, rest = text.partition("\n")
        try:
            version = int(first.strip())
        except ValueError as exc:
            raise CookieError(f"invalid cookie layout version {first.strip()!r}") from exc
        if version == 3:
            lines = rest.split("\n")
            if len(lines) < 3:
                raise CookieError("layout 3 cookie needs bookie id, journal dirs and ledger dirs lines")
            return cls(lines[0], lines[1], lines[2], layout_version=3)
        if version < 4:
            raise CookieError(f"cookie layout {version} is too old")
        fmt = df.CookieFormat()
        try:
            text_format.Parse(rest, fmt)
        except text_format.ParseError as exc:
            raise CookieError(f"invalid cookie: {exc}") from exc
        if not fmt.IsInitialized():
            raise CookieError(f"cookie misses {fmt.FindInitializationErrors()}")
        return cls(fmt.bookieHost, fmt.journalDir, fmt.ledgerDirs, fmt.instanceId or None,
                   fmt.indexDirs or None, version)

    def verify(self, other: Cookie, *, superset: bool = False) -> None:
        """``Cookie.verify``: raise ``CookieMismatch`` naming both sides unless ``other`` matches.

        ``self`` is what this bookie expects (from its configuration); ``other`` is what was found.
        ``superset`` accepts directories added since ``other`` was written (storage expansion).
        """
        differences = self._differences(other, superset)
        if differences:
            raise CookieMismatch(
                f"cookie mismatch ({', '.join(differences)}): expected [{self.render().strip()!r}] "
                f"but found [{other.render().strip()!r}] (foreign or wiped directory, or changed bookie id)")

    def _differences(self, other: Cookie, superset: bool) -> list[str]:
        out = []
        if other.layout_version < 3:
            out.append(f"layout version {other.layout_version} too old")
        if self.bookie_id != other.bookie_id:
            out.append(f"bookie id {self.bookie_id!r} != {other.bookie_id!r}")
        if self.journal_dirs != other.journal_dirs:
            out.append(f"journal dirs {self.journal_dirs!r} != {other.journal_dirs!r}")
        if not _dirs_match(self.ledger_dirs, other.ledger_dirs, superset):
            out.append(f"ledger dirs {decode_dirs(self.ledger_dirs)} != {decode_dirs(other.ledger_dirs)}")
        mine = self.index_dirs or self.ledger_dirs
        theirs = other.index_dirs or other.ledger_dirs
        if not _dirs_match(mine, theirs, superset):
            out.append(f"index dirs {decode_dirs(mine)} != {decode_dirs(theirs)}")
        if self.instance_id != other.instance_id:
            out.append(f"instance id {self.instance_id!r} != {other.instance_id!r}")
        return out


def _dirs_match(mine: str, theirs: str, superset: bool) -> bool:
    if not superset:
        return mine == theirs
    return set(decode_dirs(mine)) >= set(decode_dirs(theirs))
