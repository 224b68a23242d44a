"""WebHDFS, Hadoop's REST file system (``webhdfs://namenode:http-port/path``), as a read-only pyarrow file system.

pyarrow's own ``hdfs://`` goes through libhdfs: a JNI library, a JVM and Hadoop's jars on every Spark worker.
WebHDFS needs only HTTP to the NameNode's HTTP port (9870 unless configured otherwise) and to the DataNodes it
redirects reads to, so any Python worker can read logs straight from HDFS. This client uses the documented
REST operations GETFILESTATUS, LISTSTATUS and OPEN with ``offset`` and ``length``: a reader fetches exactly
the byte ranges it reads, so a task reading one offset range of a large log transfers only that range.

Simple authentication only: requests carry ``user.name=$HADOOP_USER_NAME`` when that is set (as Hadoop's own
clients do), else none, and the NameNode treats them as its anonymous web user, who can read files and
list directories with the default permissions. Kerberos (SPNEGO), delegation tokens and HTTPS
(``swebhdfs://``) are not supported.
"""

from __future__ import annotations

import errno
import io
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs

SCHEME = "webhdfs"
DEFAULT_PORT = 9870  # dfs.namenode.http-address in Hadoop 3
USER_ENV = "HADOOP_USER_NAME"
TIMEOUT_S = 60.0

_TYPES = {"FILE": pafs.FileType.File, "DIRECTORY": pafs.FileType.Directory}


def _remote_error(exc: urllib.error.HTTPError, op: str, path: str) -> OSError:
    """The NameNode's ``RemoteException`` (a JSON body) as the matching Python error."""
    try:
        remote = json.loads(exc.read())["RemoteException"]
        kind, message = str(remote.get("exception", "")), str(remote.get("message", ""))
    except (ValueError, KeyError, TypeError):
        kind, message = "", f"HTTP {exc.code} {exc.reason}"
    text = f"WebHDFS {op} {path}: {kind + ': ' if kind else ''}{message}"
    if kind == "FileNotFoundException" or (not kind and exc.code == 404):
        return FileNotFoundError(errno.ENOENT, text, path)
    if kind == "AccessControlException" or exc.code in (401, 403):
        return PermissionError(errno.EACCES, text, path)
    return OSError(text)


class WebHdfsClient:
    """The read operations of WebHDFS on one NameNode's HTTP address."""

    def __init__(self, host: str, port: int = DEFAULT_PORT, *, user: str | None = None,
                 timeout_s: float = TIMEOUT_S) -> None:
        self.host = host
        self.port = port
        self.user = user if user is not None else os.environ.get(USER_ENV) or None
        self.timeout_s = timeout_s

    def url(self, path: str, op: str, **params: Any) -> str:
        query: dict[str, Any] = {"op": op, **params}
        if self.user:
            query["user.name"] = self.user
        return (f"http://{self.host}:{self.port}/webhdfs/v1{urllib.parse.quote(path, safe='/')}"
                f"?{urllib.parse.urlencode(query)}")

    def _get(self, path: str, op: str, **params: Any) -> bytes:
        # OPEN answers with a redirect to a DataNode holding the data; urllib follows it (GET, 307).
        try:
            with urllib.request.urlopen(self.url(path, op, **params), timeout=self.timeout_s) as resp:
                body: bytes = resp.read()
                return body
        except urllib.error.HTTPError as exc:
            raise _remote_error(exc, op, path) from None
        except urllib.error.URLError as exc:
            raise OSError(f"WebHDFS {op} {path}: cannot reach {self.host}:{self.port}: {exc.reason}") from None

    def status(self, path: str) -> dict[str, Any] | None:
        """GETFILESTATUS: the ``FileStatus`` object, or None when nothing is at ``path``."""
        try:
            found: dict[str, Any] = json.loads(self._get(path, "GETFILESTATUS"))["FileStatus"]
            return found
        except FileNotFoundError:
            return None

    def list(self, path: str) -> list[dict[str, Any]]:
        """LISTSTATUS of a directory: ``FileStatus`` objects, each named by its ``pathSuffix``."""
        found: list[dict[str, Any]] = json.loads(self._get(path, "LISTSTATUS"))["FileStatuses"]["FileStatus"]
        return found

    def read(self, path: str, offset: int, length: int) -> bytes:
        """OPEN of ``length`` bytes from ``offset`` (fewer at the end of the file)."""
        if length <= 0:
            return b""
        return self._get(path, "OPEN", offset=offset, length=length)


def _info(path: str, status: dict[str, Any] | None) -> pafs.FileInfo:
    if status is None:
        return pafs.FileInfo(path, pafs.FileType.NotFound)
    kind = _TYPES.get(str(status.get("type")), pafs.FileType.Unknown)
    mtime_ms = status.get("modificationTime")
    return pafs.FileInfo(path, kind, size=int(status["length"]) if kind == pafs.FileType.File else None,
                         mtime_ns=int(mtime_ms) * 1_000_000 if mtime_ms is not None else None)


class _RangeFile(io.RawIOBase):
    """A seekable file whose reads are OPEN requests for exactly the bytes asked (wrapped in ``pa.PythonFile``)."""

    def __init__(self, client: WebHdfsClient, path: str, size: int) -> None:
        super().__init__()
        self._client = client
        self._path = path
        self._size = size
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise OSError(errno.EINVAL, f"negative position in {self._path}")
        self._pos = base + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        want = self._size - self._pos if size is None or size < 0 else min(size, self._size - self._pos)
        data = self._client.read(self._path, self._pos, want)
        self._pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        memoryview(buffer).cast("B")[:len(data)] = data
        return len(data)


class WebHdfsHandler(pafs.FileSystemHandler):
    """The handler of ``pyarrow.fs.PyFileSystem``: paths are absolute HDFS paths (``/a/b``). Read-only."""

    def __init__(self, client: WebHdfsClient) -> None:
        self.client = client

    def get_type_name(self) -> str:
        return SCHEME

    def equals(self, other: Any) -> bool:
        return isinstance(other, WebHdfsHandler) and (other.client.host, other.client.port, other.client.user) == (
            self.client.host, self.client.port, self.client.user)

    def normalize_path(self, path: str) -> str:
        return "/" + path.strip("/")

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [_info(self.normalize_path(p), self.client.status(self.normalize_path(p))) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = self.normalize_path(selector.base_dir)
        try:
            listing = self.client.list(base)
        except FileNotFoundError:
            if selector.allow_not_found:
                return []
            raise
        found: list[pafs.FileInfo] = []
        for status in listing:
            info = _info(f"{base.rstrip('/')}/{status['pathSuffix']}", status)
            found.append(info)
            if selector.recursive and info.type == pafs.FileType.Directory:
                found += self.get_file_info_selector(pafs.FileSelector(info.path, recursive=True))
        return found

    def open_input_file(self, path: str) -> pa.NativeFile:
        path = self.normalize_path(path)
        status = self.client.status(path)
        if status is None:
            raise FileNotFoundError(errno.ENOENT, f"WebHDFS: {path} does not exist", path)
        if status.get("type") != "FILE":
            raise IsADirectoryError(errno.EISDIR, f"WebHDFS: {path} is not a file", path)
        return pa.PythonFile(_RangeFile(self.client, path, int(status["length"])), mode="r")

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    # The audit only reads; writing would need CREATE's two-step DataNode upload, which nothing here uses.
    def _read_only(self, *_args: Any, **_kwargs: Any) -> Any:
        raise NotImplementedError("webhdfs:// is read-only in bookie_audit")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only


def parse_uri(uri: str) -> tuple[str, int, str]:
    """``webhdfs://host[:port]/path`` -> (host, port, path)."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme.lower() != SCHEME or not parts.hostname:
        raise ValueError(f"not a webhdfs://host[:port]/path URI: {uri!r}")
    return parts.hostname, parts.port or DEFAULT_PORT, "/" + urllib.parse.unquote(parts.path).strip("/")


def filesystem_from_uri(uri: str) -> tuple[pafs.PyFileSystem, str]:
    """(file system, path in it) for a ``webhdfs://`` URI, as ``pyarrow.fs.FileSystem.from_uri`` answers."""
    host, port, path = parse_uri(uri)
    return pafs.PyFileSystem(WebHdfsHandler(WebHdfsClient(host, port))), path
