"""Entry logs read through live bookies (``bookie+https://host:port[/ledger/dir]``), as a read-only pyarrow file
system over the bookie's admin API (``/api/v1/bookie/entry_log_files``, bookie-fleet's bookies only).

The file system shows each ledger directory under its path on the bookie (``/bookie/ledgers-0/current/1a.log``),
so the audit of a live bookie names its logs exactly as the audit of a copy of its disks does; a URI's path, when
given, keeps only what is under it. Sizes and mtimes come from the bookie's listing (``stat`` on the bookie);
reads are HTTP ranges of exactly the bytes asked, so metadata mode fetches a log's header and ledgers map only,
and a scan task its offset range. The bookie holds a log while a range of it is served (GC waits for the reader,
up to its forced-destroy interval) and throttles what all its readers take together
(``httpEntryLogReadRateByBytes``): the audit's read load on a bookie is bounded by the bookie.

Credentials and TLS, never in a URI (paths end up in the audit's tables): files named by ``configure`` (the
audit's ``--bookie-token-file`` / ``--bookie-ca-file``, which the ``entrylog`` data source hands to every task),
else by the environment:

* ``BOOKIE_AUDIT_TOKEN_FILE``: a file holding the bearer token of the bookies' admin API (read at every
  request, so a rotated token is picked up);
* ``BOOKIE_AUDIT_CA_FILE``: the CA bundle that signed the bookies' certificates (``bookie+https``); without it,
  the system's CAs.

On Spark executors the files must be at the same paths as on the driver (Spark on Kubernetes: the same Secret
mounted in both pods).

Why not fsspec's HTTP file system: it learns what a directory holds by scraping links from an HTML page and has
no modification times, which the audit needs for log ages; this endpoint answers both in one JSON listing. The
client is the standard library's ``http.client`` with one kept-alive connection per thread and bookie.
"""

from __future__ import annotations

import errno
import http.client
import io
import json
import os
import ssl
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyarrow import fs as pafs

SCHEMES = ("bookie+http", "bookie+https")
PREFIX = "/api/v1/bookie/entry_log_files"
TOKEN_FILE_ENV = "BOOKIE_AUDIT_TOKEN_FILE"
CA_FILE_ENV = "BOOKIE_AUDIT_CA_FILE"
TIMEOUT_S = 120.0  # a range waits for the bookie's throttle: generous
LISTING_TTL_S = 30.0


_settings: dict[str, str | None] = {"token_file": None, "ca_file": None}


def configure(token_file: str | None = None, ca_file: str | None = None) -> None:
    """The credential and CA files of this process's bookie clients (over the environment's)."""
    _settings["token_file"] = token_file
    _settings["ca_file"] = ca_file


def token_file() -> str | None:
    return _settings["token_file"] or os.environ.get(TOKEN_FILE_ENV) or None


def ca_file() -> str | None:
    return _settings["ca_file"] or os.environ.get(CA_FILE_ENV) or None


@dataclass(frozen=True, slots=True)
class RemoteLog:
    """One entry log in a bookie's listing."""

    path: str       # on the bookie: <ledger dir>/current/<hex>.log
    url: str        # of its bytes on the admin API
    size: int
    mtime_ms: int


class BookieHttpClient:
    """The entry-log reads of one bookie's admin API."""

    def __init__(self, host: str, port: int, *, tls: bool, timeout_s: float = TIMEOUT_S) -> None:
        self.host = host
        self.port = port
        self.tls = tls
        self.timeout_s = timeout_s
        self._local = threading.local()
        self._listing: tuple[float, str, dict[str, RemoteLog]] | None = None
        self._listing_lock = threading.Lock()

    @property
    def base(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def _connection(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            if self.tls:
                context = ssl.create_default_context(cafile=ca_file())
                conn = http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout_s, context=context)
            else:
                conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            self._local.conn = conn
        return conn

    def _headers(self) -> dict[str, str]:
        headers = {"Accept-Encoding": "identity"}
        path = token_file()
        if path:
            headers["Authorization"] = f"Bearer {read_token(path)}"
        return headers

    def request(self, method: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str],
                                                                                             bytes]:
        """(status, headers, body); a kept-alive connection that broke is opened again once."""
        all_headers = {**self._headers(), **(headers or {})}
        for attempt in (1, 2):
            conn = self._connection()
            try:
                conn.request(method, path, headers=all_headers)
                response = conn.getresponse()
                body = response.read()
                return response.status, {k.lower(): v for k, v in response.getheaders()}, body
            except (http.client.HTTPException, ConnectionError, TimeoutError) as exc:
                conn.close()
                self._local.conn = None
                if attempt == 2 or isinstance(exc, TimeoutError):
                    raise OSError(f"{self.base}{path}: {type(exc).__name__}: {exc}") from None
            except ssl.SSLError as exc:
                conn.close()
                self._local.conn = None
                raise OSError(f"{self.base}{path}: TLS: {exc} (is {ca_file()} the CA of the bookies' "
                              "certificates? --bookie-ca-file or " + CA_FILE_ENV + ")") from None
            except OSError as exc:
                conn.close()
                self._local.conn = None
                raise OSError(f"{self.base}{path}: cannot reach the bookie: {exc}") from None
        raise AssertionError("unreachable")

    def _error(self, status: int, body: bytes, what: str) -> OSError:
        text = f"bookie {self.host}:{self.port}: {what}: HTTP {status}: {body.decode(errors='replace').strip()}"
        if status in (401, 403):
            return PermissionError(errno.EACCES, f"{text} (the admin API's bearer token is read from the file "
                                   f"given by --bookie-token-file or {TOKEN_FILE_ENV}: {token_file()})", what)
        if status == 404:
            return FileNotFoundError(errno.ENOENT, text, what)
        if status == 501:
            return OSError(f"{text} (not a bookie-fleet bookie: Apache BookKeeper's bookies have no entry-log "
                           "reads; audit them with --mode metadata-rest)")
        return OSError(text)

    def listing(self, fresh: bool = False) -> tuple[str, dict[str, RemoteLog]]:
        """(bookie id, path -> log), cached for ``LISTING_TTL_S``."""
        with self._listing_lock:
            now = time.monotonic()
            if fresh or self._listing is None or now - self._listing[0] > LISTING_TTL_S:
                status, _, body = self.request("GET", PREFIX)
                if status in (404, 501):
                    raise OSError(f"bookie {self.host}:{self.port} serves no entry-log reads (HTTP {status}; Apache "
                                  "BookKeeper's bookies do not): audit it with --rest-bookie")
                if status != 200:
                    raise self._error(status, body, "listing entry logs")
                answer = json.loads(body)
                logs = {}
                for e in answer["entryLogs"]:
                    path = f"{e['ledgerDir'].rstrip('/')}/current/{e['name']}"
                    logs[path] = RemoteLog(path, e["url"], int(e["size"]), int(e["mtimeMs"]))
                self._listing = (now, str(answer["bookieId"]), logs)
            return self._listing[1], self._listing[2]

    def find(self, path: str) -> RemoteLog | None:
        found = self.listing()[1].get(path)
        return found if found is not None else self.listing(fresh=True)[1].get(path)

    def size(self, log: RemoteLog) -> int:
        """The log's size now (the active log grows after the listing)."""
        status, headers, body = self.request("HEAD", log.url)
        if status != 200:
            raise self._error(status, body, f"size of {log.path}")
        return int(headers["content-length"])

    def read(self, log: RemoteLog, offset: int, length: int) -> bytes:
        if length <= 0:
            return b""
        status, _, body = self.request("GET", log.url, {"Range": f"bytes={offset}-{offset + length - 1}"})
        if status != 206:
            raise self._error(status, body, f"bytes {offset}-{offset + length - 1} of {log.path}")
        return body


class _RangeFile(io.RawIOBase):
    """A seekable file whose reads are HTTP ranges of exactly the bytes asked (wrapped in ``pa.PythonFile``)."""

    def __init__(self, client: BookieHttpClient, log: RemoteLog, size: int) -> None:
        super().__init__()
        self._client = client
        self._log = log
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
            raise OSError(errno.EINVAL, f"negative position in {self._log.path}")
        self._pos = base + offset
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        want = self._size - self._pos if size is None or size < 0 else min(size, self._size - self._pos)
        data = self._client.read(self._log, self._pos, want)
        self._pos += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        data = self.read(len(buffer))
        memoryview(buffer).cast("B")[:len(data)] = data
        return len(data)


def read_token(path: str) -> str:
    """The first token of a token file (the bookie's own format: one per line, ``#`` comments)."""
    try:
        with open(path) as f:
            lines = [line.strip() for line in f.read().splitlines()]
    except OSError as exc:
        raise PermissionError(errno.EACCES, f"cannot read the bookies' admin token from {path}: {exc.strerror}",
                              path) from None
    tokens = [line for line in lines if line and not line.startswith("#")]
    if not tokens:
        raise PermissionError(errno.EACCES, f"the admin token file {path} holds no token", path)
    return tokens[0]


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]


class BookieHttpHandler(pafs.FileSystemHandler):
    """The handler of ``pyarrow.fs.PyFileSystem``: the bookie's ledger directories under their own paths."""

    def __init__(self, client: BookieHttpClient) -> None:
        self.client = client

    @property
    def bookie_id(self) -> str:
        return self.client.listing()[0]

    def get_type_name(self) -> str:
        return "bookie+https" if self.client.tls else "bookie+http"

    def equals(self, other: Any) -> bool:
        return isinstance(other, BookieHttpHandler) and (other.client.host, other.client.port, other.client.tls) == (
            self.client.host, self.client.port, self.client.tls)

    def normalize_path(self, path: str) -> str:
        return "/" + path.strip("/")

    def _dirs(self) -> set[str]:
        return {"/", *(p for path in self.client.listing()[1] for p in _parents(path))}

    def _info(self, path: str) -> pafs.FileInfo:
        log = self.client.listing()[1].get(path)
        if log is not None:
            return pafs.FileInfo(path, pafs.FileType.File, size=log.size, mtime_ns=log.mtime_ms * 1_000_000)
        if path in self._dirs():
            return pafs.FileInfo(path, pafs.FileType.Directory)
        return pafs.FileInfo(path, pafs.FileType.NotFound)

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return [self._info(self.normalize_path(p)) for p in paths]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        base = self.normalize_path(selector.base_dir)
        if base not in self._dirs():
            if selector.allow_not_found:
                return []
            raise FileNotFoundError(errno.ENOENT, f"{self.client.base}: no ledger directory under {base}", base)
        under = base.rstrip("/") + "/"
        names = {*self._dirs(), *self.client.listing()[1]}
        found = [n for n in names if n.startswith(under) and n != base]
        if not selector.recursive:
            found = [n for n in found if "/" not in n[len(under):]]
        return [self._info(n) for n in sorted(found)]

    def open_input_file(self, path: str) -> pa.NativeFile:
        path = self.normalize_path(path)
        log = self.client.find(path)
        if log is None:
            raise FileNotFoundError(errno.ENOENT, f"{self.client.base}: no entry log {path} (deleted by GC since "
                                    "it was listed?)", path)
        return pa.PythonFile(_RangeFile(self.client, log, self.client.size(log)), mode="r")

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    # Entry logs are only ever read through the bookie.
    def _read_only(self, *_args: Any, **_kwargs: Any) -> Any:
        raise NotImplementedError("bookie+http(s):// is read-only")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only


def is_bookie_uri(path: str) -> bool:
    return path.split("://", 1)[0].lower() in SCHEMES if "://" in path else False


def parse_uri(uri: str) -> tuple[str, int, bool, str]:
    """``bookie+https://host:port[/path]`` -> (host, port, tls, path)."""
    parts = urllib.parse.urlsplit(uri)
    if parts.scheme.lower() not in SCHEMES or not parts.hostname or parts.port is None:
        raise ValueError(f"not a bookie+http(s)://host:port[/path] URI (the port is the bookie's httpServerPort): "
                         f"{uri!r}")
    return parts.hostname, parts.port, parts.scheme.lower() == "bookie+https", "/" + urllib.parse.unquote(
        parts.path).strip("/")


_clients: dict[tuple[str, int, bool], BookieHttpClient] = {}
_clients_lock = threading.Lock()


def filesystem_from_uri(uri: str) -> tuple[pafs.PyFileSystem, str]:
    """(file system, path in it) for a ``bookie+http(s)://`` URI; one client per bookie and process, so a Spark
    worker lists each bookie once and keeps its connections."""
    host, port, tls, path = parse_uri(uri)
    with _clients_lock:
        client = _clients.get((host, port, tls))
        if client is None:
            client = _clients[(host, port, tls)] = BookieHttpClient(host, port, tls=tls)
    return pafs.PyFileSystem(BookieHttpHandler(client)), path


def bookie_id_of(filesystem: Any) -> str | None:
    """The bookie id a ``bookie+http(s)`` file system reads from (its listing says it); None for others."""
    handler = getattr(filesystem, "handler", None)
    return handler.bookie_id if isinstance(handler, BookieHttpHandler) else None
