"""``bookie-shell decommission BOOKIE`` moves every fragment off a bookie, either itself (the autorecovery
library in the shell's process) or through the autorecovery REST endpoint of a bookie running the daemon;
it ends with no ledger referencing the bookie, every entry still readable, and a report of what moved."""

from __future__ import annotations

import json

from tests.client.shell_support import client, shell
from tests.support.bookies import BookieFactory, BookieSet


async def _write_ledgers(cluster: BookieSet, count: int) -> dict[int, list[bytes]]:
    written: dict[int, list[bytes]] = {}
    async with client(cluster) as bk:
        for n in range(count):
            lh = await bk.create_ledger(2, 2, 2)
            payloads = [f"l{n}-e{i}".encode() for i in range(20)]
            for p in payloads:
                await lh.add(p)
            await lh.close()
            written[lh.ledger_id] = payloads
    return written


async def _check_moved_off(cluster: BookieSet, bookie: str, written: dict[int, list[bytes]]) -> None:
    async with client(cluster) as bk:
        for ledger_id, payloads in written.items():
            md = (await bk.ledger_metadata(ledger_id)).value
            assert bookie not in md.bookies()
            rh = await bk.open_ledger(ledger_id)
            assert [e.payload for e in await rh.read(0, len(payloads) - 1)] == payloads


async def test_decommission_from_the_shell_process(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(3)
    written = await _write_ledgers(cluster, 4)
    async with client(cluster) as bk:
        placed = {lid: (await bk.ledger_metadata(lid)).value.bookies() for lid in written}
    # A bookie of the first ledger's ensemble: placement is random, and a fixed bookie held none of the 4 ledgers
    # in about one run of 80.
    victim = sorted(placed[min(placed)])[0]
    holding = [lid for lid, bookies in placed.items() if victim in bookies]

    proc = await shell(cluster, "decommission", victim)
    report = json.loads(proc.stdout)
    assert report == {"bookie": victim, "done": True, "ledgers_moved": sorted(holding), "remaining": []}
    assert f"{len(holding)}/{len(holding)} ledgers" in proc.stderr
    await _check_moved_off(cluster, victim, written)


async def test_decommission_through_the_autorecovery_rest_endpoint(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(3, autoRecoveryDaemonEnabled=True)
    written = await _write_ledgers(cluster, 3)
    victim = cluster.ids[2]
    async with client(cluster) as bk:
        holding = [lid for lid in written if victim in (await bk.ledger_metadata(lid)).value.bookies()]

    proc = await shell(cluster, "decommission", victim, "--rest", cluster[0].http_url,
                       "--rest-token-file", str(cluster[0].admin_token_file), "--timeout", "120")
    report = json.loads(proc.stdout)
    assert report["done"] is True and report["ledgers_moved"] == sorted(holding)
    await _check_moved_off(cluster, victim, written)


async def test_an_unreachable_endpoint_is_a_clear_error(bookies: BookieSet) -> None:
    proc = await shell(bookies, "decommission", "10.9.9.9:3181", "--rest", "http://127.0.0.1:9", check=False)
    assert proc.returncode == 1 and "cannot reach http://127.0.0.1:9" in proc.stderr
