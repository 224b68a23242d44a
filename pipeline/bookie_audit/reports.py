"""Where audits run on Kubernetes keep their results: a small HTTP store of runs (``bookie-audit serve-reports``) on
one volume, and the upload of a run's output directory to it (``bookie-audit run --publish URL``).

Why a store with an upload rather than a volume the Spark driver mounts: the driver is a new pod at every run,
possibly on another node, and a ReadWriteOnce volume can only be mounted on one node; the store is the volume's
only user, and the driver needs nothing but HTTP to it.

    GET  /                          the runs, newest first, with links to their reports
    GET  /runs.json                 the same as JSON: [{"run", "complete", "files"}]
    GET  /runs/RUN/FILE             a file of a run (report.html, summary.json, <table>.parquet)
    GET  /latest/FILE               that file of the newest complete run
    PUT  /runs/RUN/FILE             store a file (bearer token of --token-file); ``summary.json`` last: it marks
                                    the run complete, and only the newest ``--keep`` complete runs are kept

Run and file names are ``[A-Za-z0-9][A-Za-z0-9._-]*`` (at most 100 characters): no path ever leaves the store's
directory. Uploads go to a temporary file renamed into place, so a reader never sees half a file.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from bookie.tokens import TokenFile

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
COMPLETE = ".complete"
MAX_FILE_BYTES = 4 << 30
CHUNK = 1 << 20
UPLOAD_TIMEOUT_S = 120.0
_TYPES = {".html": "text/html; charset=utf-8", ".json": "application/json", ".parquet": "application/octet-stream"}


class ReportStore:
    """Runs under ``root``: one directory per run, ``.complete`` once its summary arrived."""

    def __init__(self, root: Path, keep: int) -> None:
        self.root = root
        self.keep = keep
        self._lock = threading.Lock()
        root.mkdir(parents=True, exist_ok=True)

    def runs(self) -> list[dict[str, Any]]:
        """Newest first (run ids are meant to sort by time: the operator names them by their schedule time)."""
        found = []
        for d in sorted((p for p in self.root.iterdir() if p.is_dir() and NAME.fullmatch(p.name)),
                        key=lambda p: p.name, reverse=True):
            found.append({"run": d.name, "complete": (d / COMPLETE).exists(),
                          "files": sorted(f.name for f in d.iterdir() if NAME.fullmatch(f.name))})
        return found

    def latest(self) -> str | None:
        return next((r["run"] for r in self.runs() if r["complete"]), None)

    def path(self, run: str, name: str) -> Path:
        if not NAME.fullmatch(run) or not NAME.fullmatch(name):
            raise ValueError(f"run and file names must match {NAME.pattern}: {run!r}, {name!r}")
        return self.root / run / name

    def store(self, run: str, name: str, read: Callable[[int], bytes], length: int) -> None:
        target = self.path(run, name)
        target.parent.mkdir(exist_ok=True)
        tmp = target.with_name(f".{name}.part")
        with open(tmp, "wb") as f:
            left = length
            while left > 0:
                chunk = read(min(CHUNK, left))
                if not chunk:
                    raise ValueError(f"upload of {run}/{name} ended after {length - left} of {length} bytes")
                f.write(chunk)
                left -= len(chunk)
        os.replace(tmp, target)
        if name == "summary.json":
            (target.parent / COMPLETE).touch()
            self.prune()

    def prune(self) -> list[str]:
        """Delete complete runs beyond the newest ``keep``; returns their names."""
        with self._lock:
            complete = [r["run"] for r in self.runs() if r["complete"]]
            gone = complete[self.keep:]
            for run in gone:
                shutil.rmtree(self.root / run, ignore_errors=True)
            return gone


def _index(store: ReportStore) -> bytes:
    rows = []
    for r in store.runs():
        report = f'<a href="/runs/{r["run"]}/report.html">report</a>' if "report.html" in r["files"] else ""
        state = "complete" if r["complete"] else "in progress or failed"
        rows.append(f"<tr><td>{html.escape(r['run'])}</td><td>{state}</td><td>{report}</td>"
                    f"<td>{len(r['files'])} files</td></tr>")
    body = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>bookie-audit runs</title></head><body>"
            "<h1>Storage audit runs</h1><table border=1 cellpadding=4><tr><th>run</th><th>state</th><th>report</th>"
            "<th>files</th></tr>" + "".join(rows) + "</table></body></html>")
    return body.encode()


def handler_class(store: ReportStore, tokens: TokenFile | None) -> type[BaseHTTPRequestHandler]:
    tokens_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        server_version = "bookie-audit-reports"

        def _send(self, status: int, body: bytes, content_type: str = "text/plain; charset=utf-8") -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _file(self, path: Path) -> None:
            if not path.is_file():
                self._send(404, f"no such file: {self.path}\n".encode())
                return
            self.send_response(200)
            self.send_header("Content-Type", _TYPES.get(path.suffix, "application/octet-stream"))
            self.send_header("Content-Length", str(path.stat().st_size))
            self.end_headers()
            if self.command != "HEAD":
                with open(path, "rb") as f:
                    shutil.copyfileobj(f, self.wfile, CHUNK)

        def do_GET(self) -> None:
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            try:
                if parts == [""]:
                    self._send(200, _index(store), "text/html; charset=utf-8")
                elif parts == ["runs.json"]:
                    self._send(200, json.dumps(store.runs()).encode(), "application/json")
                elif len(parts) == 3 and parts[0] == "runs":
                    self._file(store.path(parts[1], parts[2]))
                elif len(parts) == 2 and parts[0] == "latest":
                    latest = store.latest()
                    if latest is None:
                        self._send(404, b"no complete audit run yet\n")
                    else:
                        self._file(store.path(latest, parts[1]))
                else:
                    self._send(404, b"not found: see / for the runs\n")
            except ValueError as exc:
                self._send(400, f"{exc}\n".encode())

        do_HEAD = do_GET

        def do_PUT(self) -> None:
            if not self._authorized():
                self._send(401, b"a bearer token of the report store's token file is required\n")
                return
            parts = self.path.split("?", 1)[0].strip("/").split("/")
            length = int(self.headers.get("Content-Length") or -1)
            if len(parts) != 3 or parts[0] != "runs" or not 0 <= length <= MAX_FILE_BYTES:
                self._send(400, b"PUT /runs/RUN/FILE with a Content-Length of at most 4 GiB\n")
                return
            try:
                store.store(parts[1], parts[2], self.rfile.read, length)
            except ValueError as exc:
                self._send(400, f"{exc}\n".encode())
                return
            self._send(201, b"stored\n")

        def _authorized(self) -> bool:
            if tokens is None:
                return False
            header = self.headers.get("Authorization") or ""
            scheme, _, presented = header.partition(" ")
            if scheme.lower() != "bearer":
                return False
            with tokens_lock:  # the server's threads share one token file
                tokens.refresh()
                return tokens.identify(presented.strip()) is not None

        def log_message(self, format: str, *args: Any) -> None:
            print(f"[reports] {self.address_string()} {format % args}", flush=True)

    return Handler


def serve(root: Path, port: int, keep: int, token_file: Path | None, host: str = "0.0.0.0") -> ThreadingHTTPServer:
    """The store's HTTP server (call ``serve_forever``). ``token_file`` lists the tokens allowed to store runs,
    as the bookies' token files do: each token or ``sha256:<hex>`` of it, so the store need not hold the token;
    a file that cannot be used raises ``TokenFileError`` naming it."""
    tokens = None
    if token_file is not None:
        tokens = TokenFile(token_file, "--token-file")
        tokens.load()
    store = ReportStore(root, keep)
    store.prune()
    return ThreadingHTTPServer((host, port), handler_class(store, tokens))


def publish(out_dir: str, url: str, run: str, token: str | None) -> list[str]:
    """PUT every file of an audit's output directory to the store at ``url``, ``summary.json`` last (it marks the
    run complete). Raises OSError naming the file that could not be stored."""
    names = sorted(n for n in os.listdir(out_dir) if NAME.fullmatch(n) and os.path.isfile(os.path.join(out_dir, n)))
    names.sort(key=lambda n: n == "summary.json")
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    for name in names:
        path = os.path.join(out_dir, name)
        with open(path, "rb") as f:
            request = urllib.request.Request(f"{url.rstrip('/')}/runs/{run}/{name}", data=f, method="PUT",
                                             headers={**headers, "Content-Length": str(os.path.getsize(path))})
            try:
                with urllib.request.urlopen(request, timeout=UPLOAD_TIMEOUT_S):
                    pass
            except urllib.error.HTTPError as exc:
                raise OSError(f"report store {url}: storing {run}/{name}: HTTP {exc.code}: "
                              f"{exc.read().decode(errors='replace').strip()}") from None
            except urllib.error.URLError as exc:
                raise OSError(f"report store {url}: cannot reach it: {exc.reason}") from None
    return names
