"""The report store of audits run on Kubernetes (``bookie-audit serve-reports``): a run's output published file
by file with the store's token, complete once its summary arrived, served to anyone who can reach it, the newest
``keep`` complete runs kept; uploads without the token and names that would leave its directory refused. The store
may hold only the token's hash (``sha256:<hex>``, as the operator mounts it); a token file it cannot use stops it
at start with the file and line named."""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from bookie.tokens import TokenFileError
from bookie_audit.reports import publish, serve

TOKEN = "report-store-token-0123456789"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    (tmp_path / "token").write_text(f"# the store's token\n{TOKEN}\n")
    server = serve(tmp_path / "reports", 0, 2, tmp_path / "token", host="127.0.0.1")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", tmp_path / "reports"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _out(path: Path, run: str) -> Path:
    path.mkdir()
    (path / "report.html").write_text(f"<html>{run}</html>")
    (path / "usage_logs.parquet").write_bytes(b"PAR1" + run.encode())
    (path / "summary.json").write_text(json.dumps({"run": run}))
    return path


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _put(url: str, data: bytes, token: str | None) -> int:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=data, method="PUT", headers=headers),
                                    timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_runs_published_served_and_kept(store: tuple[str, Path], tmp_path: Path) -> None:
    url, root = store
    for run in ("20261124t0100", "20261124t0200", "20261124t0300"):
        names = publish(str(_out(tmp_path / run, run)), url, run, TOKEN)
        assert names[-1] == "summary.json", "the summary last: it marks the run complete"
    runs = json.loads(_get(f"{url}/runs.json")[1])
    assert [r["run"] for r in runs] == ["20261124t0300", "20261124t0200"], "the newest two complete runs kept"
    assert not (root / "20261124t0100").exists()
    assert _get(f"{url}/runs/20261124t0200/report.html") == (200, b"<html>20261124t0200</html>")
    assert _get(f"{url}/latest/summary.json") == (200, b'{"run": "20261124t0300"}')
    status, index = _get(f"{url}/")
    assert status == 200 and b'href="/runs/20261124t0300/report.html"' in index

    # A run still being written (no summary yet) is listed, not complete, and not the latest.
    assert _put(f"{url}/runs/20261124t0400/report.html", b"<html>partial</html>", TOKEN) == 201
    runs = json.loads(_get(f"{url}/runs.json")[1])
    assert runs[0] == {"run": "20261124t0400", "complete": False, "files": ["report.html"]}
    assert _get(f"{url}/latest/report.html")[1] == b"<html>20261124t0300</html>"


def test_uploads_need_the_token_and_safe_names(store: tuple[str, Path], tmp_path: Path) -> None:
    url, root = store
    assert _put(f"{url}/runs/r1/report.html", b"x", None) == 401
    assert _put(f"{url}/runs/r1/report.html", b"x", "not-the-token") == 401
    assert not (root / "r1").exists()
    for bad in ("runs/..%2f..%2fetc/passwd", "runs/r1/.hidden", "runs/r1/a/b", "other/r1/x"):
        assert _put(f"{url}/{bad}", b"x", TOKEN) in (400, 404), bad
    assert sorted(p.name for p in root.iterdir()) == []
    with pytest.raises(OSError, match="HTTP 401"):
        publish(str(_out(tmp_path / "out", "r2")), url, "r2", "wrong-token")


def test_a_store_holding_only_the_tokens_hash_takes_uploads_with_the_token(tmp_path: Path) -> None:
    (tmp_path / "hashes").write_text("sha256:" + hashlib.sha256(TOKEN.encode()).hexdigest() + "\n")
    server = serve(tmp_path / "reports", 0, 2, tmp_path / "hashes", host="127.0.0.1")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        assert _put(f"{url}/runs/r1/report.html", b"x", TOKEN) == 201
        hashed = (tmp_path / "hashes").read_text().strip()
        assert _put(f"{url}/runs/r1/summary.json", b"{}", hashed) == 401, "the hash itself is no token"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize(("content", "problem"), [("short\n", "a token must have at least 16 characters"),
                                                  ("sha256:abc\n", "a hashed token is sha256: then 64")])
def test_a_token_file_it_cannot_use_stops_the_store_at_start(tmp_path: Path, content: str, problem: str) -> None:
    (tmp_path / "token").write_text(content)
    with pytest.raises(TokenFileError, match=f"--token-file {tmp_path / 'token'}:1: {problem}"):
        serve(tmp_path / "reports", 0, 2, tmp_path / "token", host="127.0.0.1")
