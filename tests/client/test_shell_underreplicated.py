"""``bookie-shell underreplicated`` lists the ledgers marked in BookKeeper's underreplication layout with
their missing replicas, and forgets them once the marks are cleared."""

from __future__ import annotations

import json

from tests.client.shell_support import client, shell
from tests.support.bookies import BookieSet


async def test_marked_ledgers_are_listed_with_their_missing_replicas(bookies: BookieSet) -> None:
    async with client(bookies) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        await lh.close()
        await bk.store.mark_ledger_underreplicated(lh.ledger_id, ["10.9.9.9:3181"])
        try:
            text = (await shell(bookies, "underreplicated")).stdout.splitlines()
            assert f"{lh.ledger_id}\tmissing: 10.9.9.9:3181" in text
            marks = json.loads((await shell(bookies, "underreplicated", "--json")).stdout)
            assert marks[str(lh.ledger_id)] == ["10.9.9.9:3181"]
        finally:
            await bk.store.mark_ledger_replicated(lh.ledger_id)
        marks = json.loads((await shell(bookies, "underreplicated", "--json")).stdout)
        assert str(lh.ledger_id) not in marks
        await bk.delete_ledger(lh.ledger_id)
