"""Wrong methods get 405 naming the method; malformed bodies get 400 with a message; nothing changes."""

from __future__ import annotations

import pytest

from tests.support.bookies import BookieSet
from tests.support.rest import call, get

WRONG_METHODS = [
    ("POST", "/metrics"), ("DELETE", "/api/v1/config/server_config"), ("PUT", "/api/v1/bookie/state"),
    ("DELETE", "/api/v1/bookie/state/readonly"), ("PUT", "/api/v1/bookie/is_ready"), ("PUT", "/api/v1/bookie/info"),
    ("POST", "/api/v1/bookie/sanity"), ("PUT", "/api/v1/bookie/last_log_mark"),
    ("DELETE", "/api/v1/bookie/list_disk_file"), ("PUT", "/api/v1/bookie/cluster_info"),
    ("PUT", "/api/v1/bookie/list_bookies"), ("POST", "/api/v1/bookie/list_bookie_info"),
    ("DELETE", "/api/v1/bookie/gc"), ("PUT", "/api/v1/bookie/gc_details"),
    ("DELETE", "/api/v1/bookie/gc/suspend_compaction"), ("GET", "/api/v1/bookie/gc/resume_compaction"),
    ("DELETE", "/api/v1/ledger/list"), ("PUT", "/api/v1/ledger/metadata"), ("POST", "/api/v1/ledger/read"),
    ("GET", "/api/v1/ledger/delete"),
]


@pytest.mark.parametrize(("method", "path"), WRONG_METHODS)
async def test_wrong_method_is_405(bookies: BookieSet, method: str, path: str) -> None:
    answer = await call(method, bookies[0].http_url + path)
    assert (answer.status, answer.text) == (405, f"Method {method} not allowed")


async def test_unknown_path_is_404(bookies: BookieSet) -> None:
    assert (await get(f"{bookies[0].http_url}/api/v1/bookie/no_such_thing")).status == 404


@pytest.mark.parametrize("data", ["{readOnly: true}", "{\"readOnly\": tru", "not json"])
async def test_malformed_json_is_400_and_changes_nothing(bookies: BookieSet, data: str) -> None:
    url = f"{bookies[2].http_url}/api/v1/bookie/state/readonly"
    answer = await call("PUT", url, data=data)
    assert answer.status == 400
    assert answer.text.startswith("request body is not valid JSON: ")
    assert (await get(url)).json() == {"readOnly": False}


@pytest.mark.parametrize(("body", "message"), [
    ("{}", 'expected {"readOnly": true|false}'),
    ('{"readOnly": "maybe"}', "readOnly must be true or false, got 'maybe'"),
    ("[true]", "request body must be a JSON object"),
    ("", "request body is empty; expected a JSON object"),
])
async def test_read_only_body_must_say_true_or_false(bookies: BookieSet, body: str, message: str) -> None:
    url = f"{bookies[2].http_url}/api/v1/bookie/state/readonly"
    answer = await call("PUT", url, data=body)
    assert (answer.status, answer.text) == (400, message)
    assert (await get(url)).json() == {"readOnly": False}
