"""The bookie's own clients (autorecovery, the disk figures of the other bookies) take its TLS keys, as
BookKeeper's ``new ClientConfiguration(serverConf)`` does: on bookies that admit only certificate roles, a bookie
still asks the others over TLS with its own certificate."""

from __future__ import annotations

from tests.support.java_bookies import BookieCluster
from tests.support.rest import get


async def test_a_secured_bookie_reads_the_disk_figures_of_the_others(secured_ours: BookieCluster) -> None:
    answer = await get(secured_ours.bookies[0].http_url + "/api/v1/bookie/list_bookie_info")
    assert answer.status == 200, answer.text
    # Every bookie is listed: the two others answered GetBookieInfo over TLS with the asking bookie's certificate.
    assert set(secured_ours.bookie_ids) <= set(answer.json())
