"""A bookie serves its entry logs read-only over the admin API (``/api/v1/bookie/entry_log_files``), to holders of
its admin credential only: the listing says what ``stat`` says, a range gives exactly the file's bytes, header
and ledgers map are decoded with the one parser of the format, and a read without the credential, a range
outside the file, a malformed range or an unknown log are refused with a 4xx naming the problem."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from bookie.storage import entrylog_format as ef

from tests.support.admin_api import ADMIN_HEADERS
from tests.support.bookies import BookieFactory, BookieSet
from tests.support.raw_client import RawConnection, entry

ENTRY_BYTES = 6000
ENTRIES = 40
LEDGERS = (501, 502)
PREFIX = "/api/v1/bookie/entry_log_files"


async def request(method: str, url: str, headers: dict[str, str] | None = None, *,
                  credential: dict[str, str] = ADMIN_HEADERS) -> tuple[int, dict[str, str], bytes]:
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        async with session.request(method, url, headers={**credential, **(headers or {})}) as response:
            return response.status, dict(response.headers), await response.read()


@pytest.fixture
async def written(bookie_factory: BookieFactory) -> BookieSet:
    """One bookie that wrote two ledgers over several rolled logs, restarted so that every log is finalized."""
    cluster = bookie_factory(1, logSizeLimit=200_000)
    async with await RawConnection.open(cluster[0].bookie_id) as conn:
        for entry_id in range(ENTRIES):
            for ledger in LEDGERS:
                resp = await conn.add(ledger, entry_id, bytes([entry_id % 256]) * ENTRY_BYTES)
                assert resp.status == 0, (ledger, entry_id, resp)
    await asyncio.to_thread(cluster[0].restart)
    return cluster


def on_disk(cluster: BookieSet) -> dict[str, Path]:
    return {p.name: p for p in sorted((cluster[0].ledger_dir / "current").glob("*.log"))}


async def listing(cluster: BookieSet) -> dict[str, Any]:
    status, _, body = await request("GET", cluster[0].http_url + PREFIX)
    assert status == 200, body
    return dict(json.loads(body))


async def test_listing_is_what_is_on_disk(written: BookieSet) -> None:
    answer = await listing(written)
    files = on_disk(written)
    assert len(files) >= 3, "several rolled logs"
    assert answer["bookieId"] == written[0].bookie_id
    got = {e["name"]: e for e in answer["entryLogs"]}
    assert set(got) == set(files)
    for name, path in files.items():
        st = path.stat()
        entry = got[name]
        assert (entry["size"], entry["mtimeMs"]) == (st.st_size, st.st_mtime_ns // 1_000_000)
        assert entry["ledgerDir"] == str(written[0].ledger_dir) and entry["dirIndex"] == 0
        assert entry["url"] == f"{PREFIX}/0/{name}" and entry["active"] is False


async def test_ranges_give_the_file_bytes(written: BookieSet) -> None:
    name, path = next(iter(on_disk(written).items()))
    data = path.read_bytes()
    url = f"{written[0].http_url}{PREFIX}/0/{name}"
    status, headers, body = await request("GET", url)
    assert (status, body) == (200, data)
    assert headers["Accept-Ranges"] == "bytes"
    cases = {"bytes=0-1023": (0, 1024), "bytes=1000-": (1000, len(data)), "bytes=-100": (len(data) - 100, len(data)),
             f"bytes=5-{len(data) + 50}": (5, len(data))}  # a last byte past the end is cut to the end
    for spec, (start, end) in cases.items():
        status, headers, body = await request("GET", url, {"Range": spec})
        assert status == 206, (spec, body)
        assert body == data[start:end], spec
        assert headers["Content-Range"] == f"bytes {start}-{end - 1}/{len(data)}"
    status, headers, body = await request("HEAD", url)
    assert (status, headers["Content-Length"], body) == (200, str(len(data)), b"")


async def test_range_outside_the_file_is_refused(written: BookieSet) -> None:
    name, path = next(iter(on_disk(written).items()))
    size = path.stat().st_size
    url = f"{written[0].http_url}{PREFIX}/0/{name}"
    for spec in (f"bytes={size}-", f"bytes={size + 10}-{size + 20}", "bytes=-0"):
        status, headers, body = await request("GET", url, {"Range": spec})
        assert status == 416, (spec, status)
        assert headers["Content-Range"] == f"bytes */{size}"
        assert f"outside entry log {name}, which has {size} bytes" in body.decode()
    for spec in ("bytes=10-5", "bytes=0-10,20-30", "lines=1-2", "bytes=-"):
        status, _, body = await request("GET", url, {"Range": spec})
        assert status == 400, (spec, status)
        assert "Range" in body.decode()


async def test_unknown_logs_and_bad_names(written: BookieSet) -> None:
    base = f"{written[0].http_url}{PREFIX}"
    status, _, body = await request("GET", f"{base}/0/ffff.log")
    assert status == 404 and b"ffff.log" in body and b"does not exist" in body
    status, _, body = await request("GET", f"{base}/3/0.log")
    assert status == 404 and b"1 ledger directories" in body
    status, _, body = await request("GET", f"{base}/0/VERSION")
    assert status == 400 and b"<hex id>.log" in body
    status, _, body = await request("PUT", f"{base}/0/0.log")
    assert status == 405


async def test_header_and_ledgers_map_decoded(written: BookieSet) -> None:
    base = f"{written[0].http_url}{PREFIX}"
    totals: dict[int, int] = {}
    for name, path in on_disk(written).items():
        data = path.read_bytes()
        header = ef.LogHeader.decode(data)
        status, _, body = await request("GET", f"{base}/0/{name}/header")
        assert status == 200
        assert json.loads(body) == {"name": name, "size": len(data), "mtimeMs": path.stat().st_mtime_ns // 1_000_000,
                                    "version": header.version, "ledgersMapOffset": header.ledgers_map_offset,
                                    "ledgersCount": header.ledgers_count, "hasLedgersMap": True}
        status, _, body = await request("GET", f"{base}/0/{name}/ledgers_map")
        assert status == 200
        answer = json.loads(body)
        expected = ef.decode_ledgers_map(data, header)
        assert answer["ledgers"] == {str(k): v for k, v in expected.items()}
        for k, v in expected.items():
            totals[k] = totals.get(k, 0) + v
    record = len(entry(LEDGERS[0], 0, bytes(ENTRY_BYTES))) + 4  # a ledgers map counts an entry and its size prefix
    assert totals == dict.fromkeys(LEDGERS, ENTRIES * record)


async def test_a_log_without_ledgers_map_says_so(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1)
    async with await RawConnection.open(cluster[0].bookie_id) as conn:
        assert (await conn.add(LEDGERS[0], 0, b"x" * ENTRY_BYTES)).status == 0
    base = f"{cluster[0].http_url}{PREFIX}"
    for _ in range(100):  # the checkpoint (flushInterval 1 s) creates the active log
        active = [e for e in (await listing(cluster))["entryLogs"] if e["active"]]
        if active:
            break
        await asyncio.sleep(0.2)
    [log] = active
    status, _, body = await request("GET", f"{base}/0/{log['name']}/ledgers_map")
    assert status == 422 and b"has no ledgers map" in body


async def test_reads_without_the_admin_credential_are_refused(written: BookieSet) -> None:
    name, _ = next(iter(on_disk(written).items()))
    base = f"{written[0].http_url}{PREFIX}"
    for credential in ({}, {"Authorization": "Bearer not-the-token-of-this-bookie"}):
        for method, url in (("GET", base), ("GET", f"{base}/0/{name}"), ("HEAD", f"{base}/0/{name}"),
                            ("GET", f"{base}/0/{name}/header"), ("GET", f"{base}/0/{name}/ledgers_map")):
            status, headers, body = await request(method, url, {"Range": "bytes=0-1023"}, credential=credential)
            assert status == 401, (method, url, credential, status)
            assert headers["WWW-Authenticate"].startswith("Bearer")
            assert ef.MAGIC not in body, "no byte of the log"
