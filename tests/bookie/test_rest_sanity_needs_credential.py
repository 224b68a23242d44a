"""``GET /api/v1/bookie/sanity`` writes an entry to the journal and the index (BookKeeper's sanity check), so it
needs a credential like every other call that changes something: without a token, with a wrong one, by HEAD,
or spelled with an escaped letter or a trailing slash, it is refused before the bookie writes anything (its
journal's add counter does not move); with the bookie's token it runs."""

from __future__ import annotations

import re

import pytest

from tests.support.bookies import BookieFactory
from tests.support.rest import call

SANITY = "/api/v1/bookie/sanity"
JOURNAL_ADDS = re.compile(r'^bookie_journal_JOURNAL_ADD_ENTRY_count\{success="true"[^}]*\} (\d+)$', re.M)


async def journal_adds(http_url: str) -> int:
    text = (await call("GET", http_url + "/metrics", token=None)).text
    return sum(int(n) for n in JOURNAL_ADDS.findall(text))


@pytest.mark.parametrize(("method", "path", "token"), [
    ("GET", SANITY, None),
    ("GET", SANITY, "not-the-bookies-token-at-all"),
    ("HEAD", SANITY, None),
    ("GET", "/api/v1/bookie/%73anity", None),
    ("GET", SANITY + "/", None),
], ids=["no token", "wrong token", "HEAD", "escaped path", "trailing slash"])
async def test_sanity_is_refused_without_a_credential(bookie_factory: BookieFactory, method: str, path: str,
                                                      token: str | None) -> None:
    bookie = bookie_factory(1)[0]
    before = await journal_adds(bookie.http_url)
    answer = await call(method, bookie.http_url + path, token=token)
    assert answer.status == 401, (answer.status, answer.text)
    if method == "GET":
        assert "credential" in answer.text or "not accepted" in answer.text
    assert await journal_adds(bookie.http_url) == before

    allowed = await call("GET", bookie.http_url + SANITY)      # the test bookies' token
    assert (allowed.status, allowed.json()) == (200, {"passed": True, "readOnly": False})
    assert await journal_adds(bookie.http_url) > before                 # the entry, and its ledger's deletion
