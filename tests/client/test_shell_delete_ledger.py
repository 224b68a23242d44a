"""``bookie-shell delete``: a ledger is deleted only when asked with ``--yes`` (or a confirmed prompt); it
then no longer appears in ``ledgers``."""

from __future__ import annotations

from tests.client.shell_support import client, shell
from tests.support.bookies import BookieSet


async def test_delete_needs_confirmation_then_removes_the_ledger(bookies: BookieSet) -> None:
    async with client(bookies) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        await lh.add(b"doomed")
        await lh.close()

    refused = await shell(bookies, "delete", str(lh.ledger_id), check=False)
    assert refused.returncode == 1 and "without --yes" in refused.stderr
    assert str(lh.ledger_id) in (await shell(bookies, "ledgers")).stdout.split()

    done = await shell(bookies, "delete", str(lh.ledger_id), "--yes")
    assert done.stdout.strip() == f"Deleted ledger: {lh.ledger_id}"
    assert str(lh.ledger_id) not in (await shell(bookies, "ledgers")).stdout.split()

    again = await shell(bookies, "delete", str(lh.ledger_id), "--yes", check=False)
    assert again.returncode == 1 and "does not exist" in again.stderr
