"""The playground story runs its GC cycle only once the ledgers Pulsar dropped are gone from the metadata
store: a broker drops a ledger from its topic first and deletes it in BookKeeper afterwards, and a cycle
in between would keep the ledger's entries (the explain step would then show no garbage)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from bookie.metadata.ledger_metadata import new_ledger_metadata
from bookie.metadata.store import MetadataStore
from bookie_fleet.bookie_rest import wait_ledgers_deleted

from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.bookies import BookieSet
from tests.support.raw_client import PASSWORD


@pytest_asyncio.fixture
async def store(bookies: BookieSet) -> AsyncIterator[MetadataStore]:
    async with MetadataStore(bookies.zk_connect, bookies.ledgers_root) as connected:
        yield connected


async def new_ledger(store: MetadataStore, bookies: BookieSet) -> int:
    metadata = new_ledger_metadata([bookies[0].bookie_id], 1, 1, password=PASSWORD)
    return (await store.create_ledger(metadata)).value


async def test_the_wait_ends_once_the_ledgers_are_deleted(store: MetadataStore, bookies: BookieSet) -> None:
    first, second = await new_ledger(store, bookies), await new_ledger(store, bookies)
    waited = threading.Event()

    def wait() -> None:
        wait_ledgers_deleted(bookies[0].http_url, TEST_ADMIN_TOKEN, [first, second], 60)
        waited.set()

    waiter = asyncio.get_running_loop().run_in_executor(None, wait)
    await asyncio.sleep(1.5)
    assert not waited.is_set(), "the wait ended while both ledgers still had metadata"
    await store.delete_ledger_metadata(first)
    await asyncio.sleep(1.5)
    assert not waited.is_set(), "the wait ended while one ledger still had metadata"
    await store.delete_ledger_metadata(second)
    async with asyncio.timeout(30):
        await waiter


async def test_a_ledger_that_stays_is_named_when_the_wait_times_out(store: MetadataStore,
                                                                    bookies: BookieSet) -> None:
    kept = await new_ledger(store, bookies)
    with pytest.raises(TimeoutError, match=rf"ledgers \[{kept}\] still have metadata"):
        await asyncio.to_thread(wait_ledgers_deleted, bookies[0].http_url, TEST_ADMIN_TOKEN, [kept], 1)
