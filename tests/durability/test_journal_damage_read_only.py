"""A journal with a damaged group followed by valid ones (acknowledged entries after the damage) brings the
bookie up read-only, serving everything it still has, with the reason in its REST state, metrics and log, and
the damaged journal kept for inspection; it stays read-only across restarts until an operator has removed the
kept damage.

Before, the replay stopped at the damage and silently dropped the acknowledged entries after it; then the
bookie refused to start, leaving every entry it held unreachable.
"""

from __future__ import annotations

import random
import shutil
from typing import Any

from bookie.protocol.codes import StatusCode
from bookie.storage import journal_format as jf

from tests.support import rest
from tests.support.bookies import BookieFactory
from tests.support.raw_client import RawConnection, entry

ENTRIES = 6
DAMAGED = 2


async def _state(url: str) -> dict[str, Any]:
    answer = await rest.get(f"{url}/api/v1/bookie/state")
    assert answer.status == 200, answer.text
    return dict(answer.json())


async def test_damaged_journal_group_brings_the_bookie_up_read_only(bookie_factory: BookieFactory) -> None:
    # No checkpoint during the test: every acknowledged entry is only in the journal when the bookie dies,
    # one group each.
    bookie = bookie_factory(1, flushInterval=3_600_000, journalMaxGroupWaitMSec=0)[0]
    ledger = random.randrange(1, 2**40)
    bodies = [entry(ledger, i, random.randbytes(1000)) for i in range(ENTRIES)]
    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(ENTRIES):
            assert (await conn.add(ledger, i, body=bodies[i])).status == StatusCode.EOK
    bookie.kill()

    (path,) = [p for p in (bookie.journal_dir / "current").glob("*.txn") if p.stat().st_size > jf.HEADER_SIZE]
    data = bytearray(path.read_bytes())
    damaged = [r for r in jf.iter_journal(data) if r.kind is jf.Kind.ENTRY][DAMAGED]
    data[damaged.end - 10] ^= 0xFF
    path.write_bytes(bytes(data))

    bookie.start()
    state = await _state(bookie.http_url)
    assert state["readOnly"] is True and state["readOnlyReason"] == "journal-corrupt", state
    [damage] = state["journalDamage"]
    assert damage["file"] == str(path) and damage["offset"] <= damaged.offset, damage
    kept = bookie.journal_dir / "corrupt" / path.name
    assert damage["keptAs"] == str(kept) and kept.read_bytes() == bytes(data), "the damaged bytes are kept"
    log = bookie.log_path.read_text()
    assert f"{path} damaged at offset {damage['offset']}" in log and "starts read-only" in log
    metrics = (await rest.get(f"{bookie.http_url}/metrics")).text
    assert "bookie_journal_damaged_groups 1" in metrics
    assert 'bookie_read_only_reason{reason="journal-corrupt"} 1' in metrics

    async with await RawConnection.open(bookie.bookie_id) as conn:
        for i in range(ENTRIES):
            response = await conn.read(ledger, i)
            if i == DAMAGED:  # its only copy here is the damaged one
                assert response.status == StatusCode.ENOENTRY
            else:  # the entries after the damage too
                assert response.status == StatusCode.EOK and bytes(response.body) == bodies[i], i
        assert (await conn.add(ledger, ENTRIES, b"more")).status == StatusCode.EREADONLY
    refused = await rest.put(f"{bookie.http_url}/api/v1/bookie/state/readonly", {"readOnly": False})
    assert refused.status == 400 and str(bookie.journal_dir / "corrupt") in refused.text, refused.text

    bookie.stop()  # the replay moved past the damage; the kept damage keeps the bookie read-only
    bookie.start()
    assert (await _state(bookie.http_url))["readOnlyReason"] == "journal-corrupt"
    async with await RawConnection.open(bookie.bookie_id) as conn:
        assert bytes((await conn.read(ledger, ENTRIES - 1)).body) == bodies[-1]

    bookie.stop()  # the operator has looked at the damage and removes it
    shutil.rmtree(bookie.journal_dir / "corrupt")
    bookie.start()
    state = await _state(bookie.http_url)
    assert state["readOnly"] is False and state["journalDamage"] == [], state
    async with await RawConnection.open(bookie.bookie_id) as conn:
        assert (await conn.add(ledger, ENTRIES, b"more")).status == StatusCode.EOK
