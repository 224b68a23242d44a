"""The inspector's entry-log reads serve the logs of its bookie's ledger directories and nothing else: a name
that is not ``<hex>.log``, a path that climbs out, a directory index it does not have are refused; a log the bookie
deleted is 404 (the audit counts it as vanished garbage, not an error); every read needs the admin credential."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from bookie_fleet.inspectors import InspectorProcess

from tests.inspector.conftest import JavaDisk
from tests.support.rest import call, get

PREFIX = "/api/v1/bookie/entry_log_files"


async def test_only_entry_logs_of_its_directories_with_a_credential(
        java_disk: JavaDisk, inspectors: Callable[..., InspectorProcess], tmp_path: Path) -> None:
    disk = java_disk.copy(tmp_path / "ledgers")
    (disk / "secret.txt").write_text("not an entry log")
    inspector = await asyncio.to_thread(inspectors, disk)
    base = f"{inspector.http_url}{PREFIX}"

    listing = await get(base)
    assert listing.status == 200
    names = [e["name"] for e in listing.json()["entryLogs"]]
    assert names and all(n.endswith(".log") for n in names)
    assert {e["ledgerDir"] for e in listing.json()["entryLogs"]} == {str(disk)}
    first = names[0]
    whole = await call("HEAD", f"{base}/0/{first}")
    assert whole.status == 200

    for path, status in (("/0/..%2Fsecret.txt", 400), ("/0/secret.txt", 400), ("/0/VERSION", 400),
                         (f"/1/{first}", 404), (f"/x/{first}", 400), ("/0/ffffff.log", 404)):
        answer = await get(f"{base}{path}")
        assert answer.status == status, (path, answer.status, answer.text)
    (disk / "current" / first).unlink()   # what the bookie's GC does
    gone = await get(f"{base}/0/{first}")
    assert gone.status == 404 and first in gone.text
    for method in ("GET", "HEAD"):
        refused = await call(method, f"{base}/0/{names[-1]}", token=None)
        assert refused.status == 401, (method, refused.status)
        wrong = await call(method, f"{base}/0/{names[-1]}", token="not-the-token-0123456789")
        assert wrong.status == 401, (method, wrong.status)
