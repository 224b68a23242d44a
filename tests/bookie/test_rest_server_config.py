"""GET server_config shows the configuration under BookKeeper's key names; PUT changes it all or nothing,
and a refused change names the key and what is allowed."""

from __future__ import annotations

from typing import Any

from tests.support.bookies import BookieFactory, BookieSet, LocalBookie
from tests.support.rest import get, put

PATH = "/api/v1/config/server_config"


async def config(bookie: LocalBookie) -> dict[str, Any]:
    answer = await get(bookie.http_url + PATH)
    assert answer.status == 200
    result: dict[str, Any] = answer.json()
    return result


async def test_get_shows_the_running_configuration_by_bookkeeper_keys(bookies: BookieSet) -> None:
    bookie = bookies[0]
    conf = await config(bookie)
    assert conf["bookiePort"] == bookie.port
    assert conf["journalDirectories"] == str(bookie.journal_dir)
    assert conf["ledgerDirectories"] == str(bookie.ledger_dir)
    assert conf["diskCheckInterval"] == 500
    assert conf["dbStorage_writeCacheMaxSizeMb"] == 64


async def test_valid_changes_are_applied_together(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    answer = await put(bookie.http_url + PATH, {"diskCheckInterval": 700})
    assert (answer.status, answer.text) == (200, "Success set server config.")
    assert (await config(bookie))["diskCheckInterval"] == 700
    # Valid only together: each alone would break warn <= threshold.
    answer = await put(bookie.http_url + PATH, {"diskUsageThreshold": 0.5, "diskUsageWarnThreshold": 0.4})
    assert answer.status == 200, answer.text
    conf = await config(bookie)
    assert (conf["diskUsageThreshold"], conf["diskUsageWarnThreshold"]) == (0.5, 0.4)


async def test_unknown_key_is_refused_by_name_and_nothing_is_applied(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    answer = await put(bookie.http_url + PATH, {"diskCheckInterval": 800, "diskChekInterval": 900})
    assert answer.status == 400
    assert "diskChekInterval: unknown configuration key" in answer.text
    assert "did you mean diskCheckInterval" in answer.text
    assert (await config(bookie))["diskCheckInterval"] == 500


async def test_out_of_range_value_is_refused_naming_the_allowed_range(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, diskUsageThreshold=0.95, diskUsageWarnThreshold=0.9)[0]
    answer = await put(bookie.http_url + PATH, {"diskCheckInterval": 800, "diskUsageThreshold": 1.5})
    assert answer.status == 400
    assert "diskUsageThreshold" in answer.text and "allowed: 0 < diskUsageThreshold < 1" in answer.text
    answer = await put(bookie.http_url + PATH, {"diskUsageLwmThreshold": 0.97})
    assert answer.status == 400
    assert "diskUsageLwmThreshold must be <= diskUsageThreshold" in answer.text
    answer = await put(bookie.http_url + PATH, {"journalSyncData": "sometimes"})
    assert answer.status == 400 and "journalSyncData" in answer.text
    conf = await config(bookie)
    assert (conf["diskCheckInterval"], conf["diskUsageThreshold"], conf["diskUsageLwmThreshold"],
            conf["journalSyncData"]) == (500, 0.95, None, True)


async def test_a_body_that_is_not_a_json_object_is_refused(bookies: BookieSet) -> None:
    bookie = bookies[1]
    for data, message in (("", "request body is empty"), ("{diskCheckInterval: 1}", "not valid JSON"),
                          ("[1, 2]", "must be a JSON object")):
        answer = await put(bookie.http_url + PATH, data=data)
        assert answer.status == 400
        assert message in answer.text
