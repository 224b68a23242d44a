"""The GC endpoints: 501 "not available" until garbage collection runs in the bookie, then BookKeeper's
JSON shapes."""

from __future__ import annotations

from tests.support.bookies import BookieSet
from tests.support.rest import Answer, get, put

NOT_AVAILABLE = "Garbage collection is not available on this bookie"


def gc_missing(answer: Answer) -> bool:
    if answer.status == 501:
        assert answer.text == NOT_AVAILABLE
        return True
    assert answer.status == 200, answer.text
    return False


async def test_gc_status_and_trigger(bookies: BookieSet) -> None:
    url = f"{bookies[0].http_url}/api/v1/bookie/gc"
    status = await get(url)
    if not gc_missing(status):
        assert status.json() == {"is_in_force_gc": "false"} or status.json() == {"is_in_force_gc": "true"}
    triggered = await put(url, {"forceMajor": False, "forceMinor": False})
    if not gc_missing(triggered):
        assert triggered.json() == f"Triggered GC on BookieServer: {bookies[0].bookie_id}"


async def test_gc_details_per_ledger_directory(bookies: BookieSet) -> None:
    answer = await get(f"{bookies[0].http_url}/api/v1/bookie/gc_details")
    if not gc_missing(answer):
        details = answer.json()
        assert isinstance(details, list) and details
        assert {"forceCompacting", "majorCompacting", "minorCompacting", "lastMajorCompactionTime",
                "lastMinorCompactionTime", "majorCompactionCounter", "minorCompactionCounter"} <= set(details[0])


async def test_suspend_and_resume_compaction(bookies: BookieSet) -> None:
    base = f"{bookies[1].http_url}/api/v1/bookie/gc"
    if gc_missing(await get(f"{base}/suspend_compaction")):
        assert gc_missing(await put(f"{base}/suspend_compaction", {"suspendMajor": True}))
        assert gc_missing(await put(f"{base}/resume_compaction", {"resumeMajor": True}))
        return
    assert (await put(f"{base}/suspend_compaction", {"suspendMajor": True, "suspendMinor": True})).status == 200
    assert (await get(f"{base}/suspend_compaction")).json() == {
        "isMajorGcSuspended": "true", "isMinorGcSuspended": "true"}
    assert (await put(f"{base}/resume_compaction", {"resumeMajor": True, "resumeMinor": True})).status == 200
    assert (await get(f"{base}/suspend_compaction")).json() == {
        "isMajorGcSuspended": "false", "isMinorGcSuspended": "false"}
