"""``bookie-shell bookies`` lists the writable bookies and the read-only ones, as text and as JSON."""

from __future__ import annotations

import json

from tests.client.shell_support import shell
from tests.support.bookies import BookieSet


async def test_every_registered_bookie_is_listed_as_writable(bookies: BookieSet) -> None:
    out = (await shell(bookies, "bookies")).stdout.splitlines()
    assert sorted(out) == sorted(f"writable\t{b}" for b in bookies.ids)


async def test_json_separates_writable_from_read_only(bookies: BookieSet) -> None:
    listed = json.loads((await shell(bookies, "bookies", "--json")).stdout)
    assert sorted(listed["writable"]) == sorted(bookies.ids)
    assert listed["readonly"] == []
