"""The storage audit's token (the read scope, ``httpServerReadTokenFile``, the Secret the operator mounts into the
audit's pods) reads what the audit needs from our real bookie over HTTP, the explain endpoint and the entry-log
files, yet cannot delete a ledger (it survives a GC cycle and reads back whole) nor switch the bookie read-only
(it keeps taking adds); the admin token can do both."""

from __future__ import annotations

from pathlib import Path

from tests.gc.gcutil import GC_OVERRIDES, client, gc_now, read_all, write_ledger
from tests.support.bookies import BookieFactory
from tests.support.rest import call

AUDIT_TOKEN = "the-audit-jobs-token-0123456789ab"


async def test_the_audit_token_reads_and_changes_nothing(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    read_tokens = tmp_path / "audit-token"
    read_tokens.write_text(AUDIT_TOKEN + "\n")
    cluster = bookie_factory(1, httpServerReadTokenFile=str(read_tokens), **GC_OVERRIDES)
    url = cluster[0].http_url
    async with client(cluster) as bk:
        ledger_id, payloads = await write_ledger(bk, 50, 1024, seed=11)
        explain = await call("GET", url + "/api/v1/bookie/entry_logs", token=AUDIT_TOKEN)
        listing = await call("GET", url + "/api/v1/bookie/entry_log_files", token=AUDIT_TOKEN)
        assert (explain.status, listing.status) == (200, 200), (explain.text, listing.text)

        delete = await call("DELETE", url + "/api/v1/ledger/delete", params={"ledger_id": str(ledger_id)},
                            token=AUDIT_TOKEN)
        assert delete.status == 403 and "needs the admin scope" in delete.json()["reason"]
        read_only = await call("PUT", url + "/api/v1/bookie/state/readonly", body={"readOnly": True},
                               token=AUDIT_TOKEN)
        assert read_only.status == 403
        gc = await call("PUT", url + "/api/v1/bookie/gc", body={}, token=AUDIT_TOKEN)
        assert gc.status == 403
        await gc_now(cluster[0])
        assert ledger_id in await bk.list_ledgers()
        assert await read_all(bk, ledger_id) == payloads
        state = (await call("GET", url + "/api/v1/bookie/state", token=None)).json()
        assert state["readOnly"] is False
        await write_ledger(bk, 5, 1024, seed=12)                 # still writable

        assert (await call("DELETE", url + "/api/v1/ledger/delete",
                           params={"ledger_id": str(ledger_id)})).status == 200   # the admin token
        assert ledger_id not in await bk.list_ledgers()
