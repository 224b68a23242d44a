"""state, is_ready, info, sanity and last_log_mark answer with BookKeeper's JSON shapes."""

from __future__ import annotations

import asyncio
import random
import re

from tests.support.bookies import BookieSet
from tests.support.raw_client import RawConnection
from tests.support.rest import get


async def test_state_of_a_running_writable_bookie(bookies: BookieSet) -> None:
    answer = await get(f"{bookies[0].http_url}/api/v1/bookie/state")
    assert answer.status == 200
    assert answer.content_type == "application/json"
    state = answer.json()
    assert {k: state[k] for k in ("running", "readOnly", "shuttingDown", "availableForHighPriorityWrites")} == {
        "running": True, "readOnly": False, "shuttingDown": False, "availableForHighPriorityWrites": True}
    assert (await get(f"{bookies[0].http_url}/api/v1/bookie/state/readonly")).json() == {"readOnly": False}


async def test_is_ready_once_started(bookies: BookieSet) -> None:
    answer = await get(f"{bookies[0].http_url}/api/v1/bookie/is_ready")
    assert (answer.status, answer.text) == (200, "OK")


async def test_info_reports_the_ledger_disk_space(bookies: BookieSet) -> None:
    info = (await get(f"{bookies[0].http_url}/api/v1/bookie/info")).json()
    assert set(info) == {"freeSpace", "totalSpace"}
    assert 0 < info["freeSpace"] <= info["totalSpace"]


async def test_sanity_writes_and_reads_back_an_entry(bookies: BookieSet) -> None:
    answer = await get(f"{bookies[2].http_url}/api/v1/bookie/sanity")
    assert answer.status == 200
    assert answer.json() == {"passed": True, "readOnly": False}


async def test_last_log_mark_moves_to_a_journal_file_once_a_checkpoint_covers_an_add(bookies: BookieSet) -> None:
    async with await RawConnection.open(bookies[0].bookie_id) as conn:
        await conn.add(random.randrange(1, 2**40), 0)
    url = f"{bookies[0].http_url}/api/v1/bookie/last_log_mark"
    pattern = r"LastLogMark: Journal Id - (\d+)\(([0-9a-f]+)\.txn\)"
    for _ in range(300):  # checkpoints run every flushInterval (1 s in tests)
        [(key, value)] = (await get(url)).json().items()
        found = re.fullmatch(pattern, key)
        assert found is not None, key
        assert re.fullmatch(r"Pos - \d+", value), value
        log_id, log_hex = found[1], found[2]
        if log_id != "0":
            break
        await asyncio.sleep(0.1)
    assert int(log_id) == int(log_hex, 16) > 0
    assert int(value.removeprefix("Pos - ")) >= 512  # past the journal header
    assert (bookies[0].journal_dir / "current" / f"{log_hex}.txn").exists()
