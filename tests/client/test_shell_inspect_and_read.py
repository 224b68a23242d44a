"""``bookie-shell ledgers / inspect / read``: a ledger written by the client is listed, its metadata shown as
BookKeeper has it, and its entries printed one per line (text as text, binary as hex). Reading an open ledger
does not fence its writer unless ``--recover`` is given."""

from __future__ import annotations

import json

from tests.client.shell_support import client, shell
from tests.support.bookies import BookieSet


async def test_a_closed_ledger_is_listed_inspected_and_read(bookies: BookieSet) -> None:
    async with client(bookies) as bk:
        lh = await bk.create_ledger(3, 2, 2, custom_metadata={"app": b"shell-spec"})
        for i in range(5):
            await lh.add(f"hello-{i}".encode())
        await lh.add(b"\x00\xffbinary")
        await lh.close()

    assert str(lh.ledger_id) in (await shell(bookies, "ledgers")).stdout.split()

    md = json.loads((await shell(bookies, "inspect", str(lh.ledger_id))).stdout)
    assert md["ledgerId"] == lh.ledger_id
    assert md["state"] == "CLOSED" and md["lastEntryId"] == 5
    assert (md["ensembleSize"], md["writeQuorumSize"], md["ackQuorumSize"]) == (3, 2, 2)
    assert sorted(md["ensembles"]["0"]) == sorted(bookies.ids)
    assert md["customMetadata"] == {"app": "shell-spec"}

    lines = (await shell(bookies, "read", str(lh.ledger_id))).stdout.splitlines()
    assert lines == [f"{i}\thello-{i}" for i in range(5)] + ["5\t0x" + b"\x00\xffbinary".hex()]

    ranged = (await shell(bookies, "read", str(lh.ledger_id), "--first", "1", "--last", "2")).stdout
    assert ranged.splitlines() == ["1\thello-1", "2\thello-2"]


async def test_reading_an_open_ledger_leaves_its_writer_writing(bookies: BookieSet) -> None:
    async with client(bookies) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        for i in range(3):
            await lh.add(f"open-{i}".encode())

        lines = (await shell(bookies, "read", str(lh.ledger_id))).stdout.splitlines()
        # Without recovery a reader sees what is confirmed (the LAC trails the last add by one).
        assert lines and lines == [f"{i}\topen-{i}" for i in range(len(lines))]

        assert await lh.add(b"still-writable") == 3

        await shell(bookies, "read", "--recover", str(lh.ledger_id))
        md = json.loads((await shell(bookies, "inspect", str(lh.ledger_id))).stdout)
        assert md["state"] == "CLOSED" and md["lastEntryId"] == 3


async def test_a_missing_ledger_is_a_clear_error(bookies: BookieSet) -> None:
    proc = await shell(bookies, "inspect", "987654321", check=False)
    assert proc.returncode == 1
    assert "ledger 987654321 does not exist" in proc.stderr
