"""cluster_info, list_bookies and list_bookie_info describe the whole cluster, not only the bookie asked."""

from __future__ import annotations

import re

from tests.support.bookies import BookieSet
from tests.support.rest import get


async def test_cluster_info_counts_the_bookies(bookies: BookieSet) -> None:
    info = (await get(f"{bookies[0].http_url}/api/v1/bookie/cluster_info")).json()
    assert info == {
        "auditorElected": False, "auditorId": "", "clusterUnderReplicated": False,
        "ledgerReplicationEnabled": True, "totalBookiesCount": 3, "writableBookiesCount": 3,
        "readonlyBookiesCount": 0, "unavailableBookiesCount": 0,
    }


async def test_list_bookies_writable_and_read_only(bookies: BookieSet) -> None:
    url = f"{bookies[1].http_url}/api/v1/bookie/list_bookies"
    assert (await get(url)).json() == {bookie_id: None for bookie_id in bookies.ids}
    assert (await get(url, type="rw")).json() == {bookie_id: None for bookie_id in bookies.ids}
    assert (await get(url, type="ro")).json() == {}
    with_hosts = (await get(url, print_hostnames="true")).json()
    assert with_hosts == {b.bookie_id: b.address for b in bookies.bookies}


async def test_list_bookie_info_has_every_writable_bookie_and_the_cluster_total(bookies: BookieSet) -> None:
    info = (await get(f"{bookies[2].http_url}/api/v1/bookie/list_bookie_info")).json()
    assert set(info) == {*bookies.ids, "ClusterInfo: "}
    pattern = r"{Free: (\d+)\([\d.]+[KMGT]?B?\), Total: (\d+)\([\d.]+[KMGT]?B?\)}"
    totals = [0, 0]
    for bookie_id in bookies.ids:
        found = re.fullmatch(f": {pattern},", info[bookie_id])
        assert found, info[bookie_id]
        free, total = int(found[1]), int(found[2])
        assert 0 < free <= total
        totals = [totals[0] + free, totals[1] + total]
    cluster = re.fullmatch(pattern, info["ClusterInfo: "])
    assert cluster, info["ClusterInfo: "]
    assert int(cluster[2]) == totals[1]
