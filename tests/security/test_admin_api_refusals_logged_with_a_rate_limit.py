"""A client retrying a refused admin call in a loop cannot flood the bookie's log: from one host, one refusal
line per reason per 10 s reaches the audit log, the next one counts those left out; a refusal for another
reason is still logged at once, and allowed calls are each logged."""

from __future__ import annotations

from tests.support.admin_api import audit_records
from tests.support.bookies import BookieFactory
from tests.support.rest import call, put

READ_ONLY = "/api/v1/bookie/state/readonly"
ATTEMPTS = 60


async def test_refusals_are_logged_once_per_reason_and_host(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1)[0]
    for _ in range(ATTEMPTS):
        assert (await put(bookie.http_url + READ_ONLY, {"readOnly": True}, token=None)).status == 401
    assert (await put(bookie.http_url + READ_ONLY, {"readOnly": True}, token="w" * 32)).status == 401
    assert (await call("GET", bookie.http_url + "/api/v1/bookie/sanity")).status == 200
    assert (await call("GET", bookie.http_url + "/api/v1/bookie/sanity")).status == 200

    records = audit_records(bookie.log_path)
    assert [(r["outcome"], r["reason"].split(":")[0]) for r in records] == [
        ("refused", "a credential is required"), ("refused", "bearer token not accepted"),
        ("allowed", "bearer token (admin scope)"), ("allowed", "bearer token (admin scope)")]
    log_bytes = len(bookie.log_path.read_bytes())
    assert log_bytes < 64 * 1024, log_bytes
