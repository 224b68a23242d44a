"""``bookie-shell bookies`` lists the writable bookies and the read-only ones (a bookie made read-only through
its REST API moves to the second list), as text and as JSON."""

from __future__ import annotations

import json

from tests.client.shell_support import shell
from tests.support.bookies import BookieFactory, BookieSet
from tests.support.rest import put


async def test_every_registered_bookie_is_listed_as_writable(bookies: BookieSet) -> None:
    out = (await shell(bookies, "bookies")).stdout.splitlines()
    assert sorted(out) == sorted(f"writable\t{b}" for b in bookies.ids)


async def test_json_separates_writable_from_read_only(bookies: BookieSet) -> None:
    listed = json.loads((await shell(bookies, "bookies", "--json")).stdout)
    assert sorted(listed["writable"]) == sorted(bookies.ids)
    assert listed["readonly"] == []


async def test_a_read_only_bookie_is_listed_as_read_only(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(2)
    answer = await put(f"{cluster[1].http_url}/api/v1/bookie/state/readonly", {"readOnly": True})
    assert answer.status == 200
    out = (await shell(cluster, "bookies")).stdout.splitlines()
    assert out == [f"writable\t{cluster.ids[0]}", f"read-only\t{cluster.ids[1]}"]
    listed = json.loads((await shell(cluster, "bookies", "--json")).stdout)
    assert listed == {"writable": [cluster.ids[0]], "readonly": [cluster.ids[1]]}
