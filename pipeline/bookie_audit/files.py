"""Finding entry logs and reading their bytes: local directories (mmap), ``webhdfs://`` URIs (HDFS over its REST
API, ``bookie_audit.webhdfs``), ``bookie+http(s)://`` URIs (live bookies' logs read through their admin API,
``bookie_audit.bookie_http``) or any other pyarrow file-system URI.

A log input is ``[bookieId=]path``, searched recursively for ``<hex>.log`` files (RocksDB index
directories, whose WAL files are named ``<n>.log`` too, are skipped). Without an explicit bookie id, each
log's bookie is the ``bookieHost`` of the cookie (``VERSION``) next to it, as every BookKeeper ledger
directory ``<dir>/current/`` holds one (a live bookie read through ``bookie+http(s)://`` says its id itself);
failing that, the first folder under the given root (``root/<bookie>/...``), or the root's own name.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from bookie.metadata.cookie import Cookie, CookieError
from bookie.storage.entrylog_format import parse_log_file_name

from bookie_audit import bookie_http, webhdfs


class AuditInputError(ValueError):
    """Input the audit cannot work with (no logs, unreadable paths, a bad snapshot); the message says why."""


@dataclass(frozen=True, slots=True)
class LogInput:
    """One ``--logs`` argument."""

    path: str
    bookie: str | None = None

    @staticmethod
    def parse(text: str) -> LogInput:
        """``bookie=path`` or ``path`` (a ``=`` inside a URI's query is not a bookie id)."""
        head, sep, tail = text.partition("=")
        if sep and "/" not in head and head:
            return LogInput(tail, head)
        return LogInput(text)


@dataclass(frozen=True, slots=True)
class LogFile:
    bookie: str
    path: str  # as given to the file system (URI or local path)
    log_id: int
    size: int
    mtime_ms: int


def _filesystem(path: str) -> tuple[Any, str, bool]:
    """(pyarrow file system, path in it, is local)."""
    if "://" not in path:
        return None, os.path.abspath(path), True
    from pyarrow import fs as pafs

    if path.split("://", 1)[0].lower() == webhdfs.SCHEME:
        filesystem, inner = webhdfs.filesystem_from_uri(path)
        return filesystem, inner, False
    if bookie_http.is_bookie_uri(path):
        try:
            filesystem, inner = bookie_http.filesystem_from_uri(path)
        except ValueError as exc:
            raise AuditInputError(str(exc)) from None
        return filesystem, inner, False
    filesystem, inner = pafs.FileSystem.from_uri(path)
    return filesystem, inner, isinstance(filesystem, pafs.LocalFileSystem)


def _uri_prefix(uri: str, inner: str) -> str:
    """What makes a path of ``uri``'s file system a URI again: ``scheme://authority`` where paths are absolute
    (``hdfs://namenode:8020`` + ``/a/b``), ``scheme://`` where they start with the bucket (``s3://`` + ``b/k``)."""
    parts = urlsplit(uri)
    return f"{parts.scheme}://{parts.netloc}" if inner.startswith("/") else f"{parts.scheme}://"


def _cookie_bookie(prefix: str, directory: str, read: Callable[[str], bytes],
                   cache: dict[str, str | None]) -> str | None:
    """The bookie id in ``directory/VERSION`` (``read`` gets a file's bytes), cached per ``prefix + directory``."""
    key = prefix + directory
    if key not in cache:
        found: str | None = None
        try:
            found = Cookie.parse(read(f"{directory}/VERSION")).bookie_id
        except (OSError, CookieError, ValueError):
            found = None
        cache[key] = found
    return cache[key]


def _read_local(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# DbLedgerStorage keeps RocksDB indexes in <dir>/current/{ledgers,locations}; RocksDB's WAL files are also
# named <number>.log, which would parse as entry-log names.
_ROCKSDB_DIRS = ("ledgers", "locations")


def _is_rocksdb(dirpath: str, names: Sequence[str]) -> bool:
    return "IDENTITY" in names or "CURRENT" in names or (
        os.path.basename(dirpath) in _ROCKSDB_DIRS and os.path.basename(os.path.dirname(dirpath)) == "current")


def discover(inputs: Sequence[LogInput]) -> list[LogFile]:
    """Every ``<hex>.log`` under the inputs (recursively), sorted by bookie, path. Raises ``AuditInputError``."""
    return discover_bookies(inputs)[0]


def discover_bookies(inputs: Sequence[LogInput]) -> tuple[list[LogFile], list[str]]:
    """``discover``'s logs, and the bookies read: those of the logs found, plus each input whose bookie is known
    without a log (``ID=PATH``, or a live bookie's listing, which names it). A bookie that holds no entry log (a
    new, empty one) has still been read: the replicas metadata places there are then missing, not unverified."""
    if not inputs:
        raise AuditInputError("no entry-log input given (use --logs [bookieId=]DIR)")
    found: dict[str, LogFile] = {}
    cookies: dict[str, str | None] = {}
    named_inputs: set[str] = set()
    for item in inputs:
        filesystem, root, local = _filesystem(item.path)
        entries: list[tuple[str, int, int]] = []  # path in the file system, size, mtime_ms
        named = item.bookie
        read: Callable[[str], bytes]
        if filesystem is None or local:
            prefix, read = "", _read_local
            if not os.path.exists(root):
                raise AuditInputError(f"entry-log input {item.path} does not exist")
            if os.path.isfile(root):
                st = os.stat(root)
                entries.append((root, st.st_size, st.st_mtime_ns // 1_000_000))
            else:
                for dirpath, dirs, names in os.walk(root):
                    if _is_rocksdb(dirpath, names):
                        dirs[:] = []
                        continue
                    for name in names:
                        if parse_log_file_name(name) is not None:
                            full = os.path.join(dirpath, name)
                            st = os.stat(full)
                            entries.append((full, st.st_size, st.st_mtime_ns // 1_000_000))
        else:
            from pyarrow import fs as pafs

            prefix = _uri_prefix(item.path, root)
            read = _remote_reader(filesystem)
            try:
                info = filesystem.get_file_info(root)
                infos = [info] if info.type != pafs.FileType.Directory else filesystem.get_file_info(
                    pafs.FileSelector(root, recursive=True))
                named = named or bookie_http.bookie_id_of(filesystem)
            except OSError as exc:
                raise AuditInputError(f"entry-log input {item.path} cannot be listed: {exc}") from exc
            if info.type == pafs.FileType.NotFound:
                raise AuditInputError(f"entry-log input {item.path} does not exist")
            for fi in infos:
                parent = fi.path.rsplit("/", 2)
                if len(parent) == 3 and parent[0].endswith("/current") and parent[1] in _ROCKSDB_DIRS:
                    continue
                if fi.type == pafs.FileType.File and parse_log_file_name(fi.base_name) is not None:
                    mtime = fi.mtime_ns // 1_000_000 if fi.mtime_ns is not None else 0
                    entries.append((fi.path, fi.size, mtime))
        if named is not None:
            named_inputs.add(named)
        for inner, size, mtime_ms in entries:
            full = prefix + inner
            name = inner.rsplit("/", 1)[-1]
            log_id = parse_log_file_name(name)
            assert log_id is not None
            bookie = named
            if bookie is None:
                bookie = _cookie_bookie(prefix, inner.rsplit("/", 1)[0], read, cookies)
            if bookie is None:
                rel = inner[len(root):].strip("/") if inner.startswith(root) else name
                parts = rel.split("/")
                bookie = parts[0] if len(parts) > 1 and parts[0] != "current" else (
                    os.path.basename(root.rstrip("/")) or root)
            found[full] = LogFile(bookie, full, log_id, size, mtime_ms)
    if not found:
        roots = ", ".join(i.path for i in inputs)
        raise AuditInputError(f"no entry logs (<hex>.log files) found under {roots}")
    files = sorted(found.values(), key=lambda f: (f.bookie, f.path))
    return files, sorted(named_inputs | {f.bookie for f in files})


def _remote_reader(filesystem: Any) -> Callable[[str], bytes]:
    def read(path: str) -> bytes:
        with filesystem.open_input_stream(path) as f:
            data: bytes = f.read()
            return data

    return read


class LogReader:
    """Random access to one log: a zero-copy ``memoryview`` for local files, ranged reads otherwise."""

    def __init__(self, path: str, *, ranged: bool = False) -> None:
        """``ranged``: read a local file like a remote one (tests of the ranged-read path)."""
        self.path = path
        filesystem, inner, local = _filesystem(path)
        if ranged and filesystem is None:
            from pyarrow import fs as pafs

            filesystem = pafs.LocalFileSystem()
        self._mmap: mmap.mmap | None = None
        self._file: Any = None
        self._view: memoryview | None = None
        if local and not ranged:
            with open(inner, "rb") as f:
                self.size = os.fstat(f.fileno()).st_size
                if self.size:
                    self._mmap = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                    self._view = memoryview(self._mmap)
        else:
            self._file = filesystem.open_input_file(inner)
            self.size = int(self._file.size())

    @property
    def whole(self) -> memoryview | None:
        """The whole file, when it is mapped (local files)."""
        return self._view

    def read(self, offset: int, length: int) -> memoryview:
        length = max(0, min(length, self.size - offset))
        if self._view is not None:
            return self._view[offset:offset + length]
        if self._file is None or length == 0:
            return memoryview(b"")
        return memoryview(self._file.read_at(length, offset))  # bytes or a pyarrow Buffer

    def close(self) -> None:
        if self._view is not None:
            self._view.release()
            self._view = None
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:  # a record view is still alive somewhere; the GC unmaps it later
                pass
            self._mmap = None
        if self._file is not None:
            self._file.close()
            self._file = None


@contextmanager
def open_log(path: str) -> Iterator[LogReader]:
    reader = LogReader(path)
    try:
        yield reader
    finally:
        reader.close()
