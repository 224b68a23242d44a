"""list_disk_file lists journal, entry-log and index file names by type, tab separated, like BookKeeper."""

from __future__ import annotations

from tests.support.bookies import BookieSet
from tests.support.rest import get


async def test_all_file_types_by_default(bookies: BookieSet) -> None:
    files = (await get(f"{bookies[0].http_url}/api/v1/bookie/list_disk_file")).json()
    assert set(files) == {"journal files", "entrylog files", "index files"}
    journals = files["journal files"].split("\t")
    assert journals and all(name.endswith(".txn") and "/" not in name for name in journals)
    assert {p.name for p in (bookies[0].journal_dir / "current").glob("*.txn")} >= set(journals)
    assert set(files["index files"].split("\t")) == {"ledgers", "locations"}
    logs = [name for name in files["entrylog files"].split("\t") if name]
    assert all(name.endswith(".log") and (bookies[0].ledger_dir / "current" / name).exists() for name in logs)


async def test_one_file_type(bookies: BookieSet) -> None:
    url = f"{bookies[0].http_url}/api/v1/bookie/list_disk_file"
    assert set((await get(url, file_type="journal")).json()) == {"journal files"}
    assert set((await get(url, file_type="entrylog")).json()) == {"entrylog files"}
    assert set((await get(url, file_type="index")).json()) == {"index files"}


async def test_unknown_file_type_is_refused_naming_the_allowed_ones(bookies: BookieSet) -> None:
    answer = await get(f"{bookies[0].http_url}/api/v1/bookie/list_disk_file", file_type="txn")
    assert answer.status == 400
    assert "'txn'" in answer.text and "journal, entrylog, index" in answer.text
