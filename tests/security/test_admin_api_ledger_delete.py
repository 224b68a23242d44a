"""DELETE /api/v1/ledger/delete without a credential is refused (401) and the ledger survives a GC cycle; with
the bookie's token it deletes the ledger, whose data GC then reclaims."""

from __future__ import annotations

import pytest
from bookie.client import errors as client_errors

from tests.gc.gcutil import GC_OVERRIDES, client, gc_now, read_all, write_ledger
from tests.support.bookies import BookieFactory
from tests.support.rest import call


async def test_unauthenticated_delete_is_refused_and_the_ledger_survives_gc(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, **GC_OVERRIDES)
    bookie = cluster[0]
    url = f"{bookie.http_url}/api/v1/ledger/delete"
    async with client(cluster) as bk:
        ledger_id, payloads = await write_ledger(bk, 200, 1024, seed=7)

        for token in (None, "not-the-token-0123456789"):
            answer = await call("DELETE", url, params={"ledger_id": str(ledger_id)}, token=token)
            assert answer.status == 401, answer.text
            assert answer.json()["error"] == "unauthorized" and answer.json()["reason"]
        await gc_now(bookie)
        assert await read_all(bk, ledger_id) == payloads

        answer = await call("DELETE", url, params={"ledger_id": str(ledger_id)})
        assert answer.status == 200, answer.text
        assert ledger_id not in await bk.list_ledgers()
        await gc_now(bookie)
        with pytest.raises(client_errors.NoSuchLedger):
            await bk.open_ledger(ledger_id, b"gc")
