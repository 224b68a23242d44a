"""ledger/list, metadata, read and delete over the ledgers in ZooKeeper, with BookKeeper's shapes."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from bookie.metadata.ledger_metadata import new_ledger_metadata
from bookie.metadata.store import MetadataStore

from tests.support.bookies import BookieSet
from tests.support.raw_client import PASSWORD, RawConnection
from tests.support.rest import call, get


@pytest_asyncio.fixture
async def store(bookies: BookieSet) -> AsyncIterator[MetadataStore]:
    async with MetadataStore(bookies.zk_connect, bookies.ledgers_root) as connected:
        yield connected


async def new_ledger(store: MetadataStore, bookies: BookieSet, entries: list[bytes]) -> int:
    """A ledger on bookies[0] alone, its entries written there like a client would."""
    metadata = new_ledger_metadata([bookies[0].bookie_id], 1, 1, password=PASSWORD,
                                   custom_metadata={"application": b"rest-test"})
    ledger_id = (await store.create_ledger(metadata)).value
    async with await RawConnection.open(bookies[0].bookie_id) as conn:
        for entry_id, payload in enumerate(entries):
            await conn.add(ledger_id, entry_id, payload)
    return ledger_id


async def test_list_names_every_ledger_with_or_without_metadata(store: MetadataStore, bookies: BookieSet) -> None:
    first, second = await new_ledger(store, bookies, []), await new_ledger(store, bookies, [])
    url = f"{bookies[1].http_url}/api/v1/ledger/list"
    listed = (await get(url)).json()
    assert listed[str(first)] is None and listed[str(second)] is None
    decoded = (await get(url, print_metadata="true", decode_meta="true")).json()
    assert decoded[str(first)]["allEnsembles"] == {"0": [bookies[0].bookie_id]}
    serialized = (await get(url, print_metadata="true")).json()
    assert serialized[str(first)].startswith("BookieMetadataFormatVersion\t3\n")


async def test_metadata_of_one_ledger_keyed_by_its_id(store: MetadataStore, bookies: BookieSet) -> None:
    ledger_id = await new_ledger(store, bookies, [])
    answer = await get(f"{bookies[2].http_url}/api/v1/ledger/metadata", ledger_id=str(ledger_id))
    assert answer.status == 200
    [(key, metadata)] = answer.json().items()
    assert key == str(ledger_id)
    assert metadata["ensembleSize"] == metadata["writeQuorumSize"] == metadata["ackQuorumSize"] == 1
    assert metadata["state"] == "OPEN" and metadata["lastEntryId"] == -1
    assert metadata["digestType"] == "CRC32C"
    assert metadata["customMetadata"] == {"application": "rest-test"}
    missing = await get(f"{bookies[2].http_url}/api/v1/ledger/metadata", ledger_id=str(2**40 + ledger_id))
    assert missing.status == 404


async def test_read_gives_entry_payloads_up_to_the_last_add_confirmed(store: MetadataStore,
                                                                      bookies: BookieSet) -> None:
    ledger_id = await new_ledger(store, bookies, [b"entry-%d" % i for i in range(5)])
    url = f"{bookies[0].http_url}/api/v1/ledger/read"
    # Entry 4 carries LAC 3: entry 4 itself is not confirmed yet.
    assert (await get(url, ledger_id=str(ledger_id))).json() == {str(i): f"entry-{i}" for i in range(4)}
    ranged = await get(url, ledger_id=str(ledger_id), start_entry_id="1", end_entry_id="4")
    assert ranged.json() == {str(i): f"entry-{i}" for i in range(1, 5)}
    backwards = await get(url, ledger_id=str(ledger_id), start_entry_id="3", end_entry_id="1")
    assert backwards.status == 400 and "end_entry_id" in backwards.text


async def test_delete_removes_the_ledger_metadata(store: MetadataStore, bookies: BookieSet) -> None:
    ledger_id = await new_ledger(store, bookies, [b"doomed"])
    url = f"{bookies[0].http_url}/api/v1/ledger"
    answer = await call("DELETE", f"{url}/delete", params={"ledger_id": str(ledger_id)})
    assert (answer.status, answer.json()) == (200, f"Deleted ledger: {ledger_id}")
    assert not await store.ledger_exists(ledger_id)
    assert (await get(f"{url}/metadata", ledger_id=str(ledger_id))).status == 404
    assert str(ledger_id) not in (await get(f"{url}/list")).json()
    again = await call("DELETE", f"{url}/delete", params={"ledger_id": str(ledger_id)})
    assert again.status == 404


async def test_ledger_id_must_be_given_as_an_integer(bookies: BookieSet) -> None:
    url = f"{bookies[0].http_url}/api/v1/ledger/metadata"
    assert (await get(url)).status == 400
    answer = await get(url, ledger_id="seven")
    assert answer.status == 400 and "ledger_id must be an integer" in answer.text
