"""Who may call the admin API: the bookie's token (re-read when its file changes), nobody when no credential is
configured, everybody only with the explicit development opt-out; refusals are 401/403 with a JSON reason, the
open reads stay open, and every call that needs a credential writes one audit line."""

from __future__ import annotations

import pytest

from tests.support.admin_api import TEST_ADMIN_TOKEN, audit_records
from tests.support.bookies import BookieFactory
from tests.support.rest import call, get, put

READ_ONLY = "/api/v1/bookie/state/readonly"


async def _read_only(url: str) -> bool:
    return bool((await get(url + "/api/v1/bookie/state")).json()["readOnly"])


async def test_a_wrong_or_missing_token_is_refused_and_nothing_changes(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    for token, reason in ((None, "a credential is required"), ("x" * 32, "bearer token not accepted")):
        answer = await put(bookie.http_url + READ_ONLY, {"readOnly": True}, token=token)
        assert answer.status == 401
        assert answer.json() == {"error": "unauthorized", "reason": answer.json()["reason"]}
        assert reason in answer.json()["reason"]
        assert not await _read_only(bookie.http_url)
    answer = await put(bookie.http_url + READ_ONLY, {"readOnly": True})
    assert answer.status == 200 and await _read_only(bookie.http_url)

    records = audit_records(bookie.log_path)
    assert [(r["outcome"], r["status"], r["method"], r["path"]) for r in records] == [
        ("refused", 401, "PUT", READ_ONLY), ("refused", 401, "PUT", READ_ONLY), ("allowed", 200, "PUT", READ_ONLY)]
    assert records[0]["who"] == records[1]["who"] == "anonymous"
    assert records[2]["who"].startswith("token:") and TEST_ADMIN_TOKEN not in bookie.log_path.read_text()
    assert all(r["peer"].startswith("127.0.0.") for r in records)


async def test_open_reads_need_no_credential_and_ledger_data_does(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    for path in ("/heartbeat", "/metrics", "/api/v1/bookie/state", "/api/v1/bookie/is_ready",
                 "/api/v1/bookie/info", "/api/v1/bookie/gc",
                 "/api/v1/bookie/gc_details", "/api/v1/bookie/list_bookies"):
        assert (await call("GET", bookie.http_url + path, token=None)).status == 200, path
    for path in ("/api/v1/config/server_config", "/api/v1/ledger/list", "/api/v1/ledger/metadata",
                 "/api/v1/ledger/read"):
        assert (await call("GET", bookie.http_url + path, params={"ledger_id": "1"}, token=None)).status == 401
    # the first refusal; the next three, for the same reason from the same host, are only counted
    assert [r["path"] for r in audit_records(bookie.log_path)] == ["/api/v1/config/server_config?ledger_id=1"]


async def test_a_rotated_token_file_applies_without_a_restart(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    new_token = "rotated-token-abcdef0123456789"
    bookie.admin_token_file.write_text(f"# rotated\n{new_token}\n")
    assert (await put(bookie.http_url + READ_ONLY, {"readOnly": True})).status == 401  # the old token
    assert (await put(bookie.http_url + READ_ONLY, {"readOnly": True}, token=new_token)).status == 200
    assert await _read_only(bookie.http_url)


async def test_without_a_configured_credential_mutating_calls_are_forbidden(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, admin_token=None)[0]
    answer = await put(bookie.http_url + READ_ONLY, {"readOnly": True}, token=None)
    assert answer.status == 403
    assert "httpServerAuthTokenFile" in answer.json()["reason"]
    assert not await _read_only(bookie.http_url)
    assert audit_records(bookie.log_path)[-1]["outcome"] == "refused"


async def test_the_development_opt_out_accepts_every_call_and_still_audits(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, admin_token=None, httpServerAuthDisabled=True)[0]
    assert (await put(bookie.http_url + READ_ONLY, {"readOnly": True}, token=None)).status == 200
    assert await _read_only(bookie.http_url)
    [record] = audit_records(bookie.log_path)
    assert (record["outcome"], record["who"], record["reason"]) == ("allowed", "anonymous", "httpServerAuthDisabled")


async def test_a_token_file_that_cannot_serve_stops_the_start(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1, admin_token="short", start=False)
    with pytest.raises(RuntimeError, match="at least 16 characters"):
        cluster[0].start()
    assert "httpServerAuthTokenFile" in cluster[0].tail_log()
