"""Every route of the admin API (BookKeeper's and ours, autorecovery included) refuses every method but GET and
HEAD without a credential, before doing anything; GETs answer without one, except the ledger data routes, the
sanity check (it writes an entry) and the routes that disclose ledger ids, topic names or the configuration
(tests/security/test_admin_api_scopes.py says which scope each needs)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bookie.http import routes_autorecovery, routes_bookie, routes_entrylogs, routes_gc, routes_ledger

from tests.support.bookies import BookieFactory
from tests.support.rest import call

DISCLOSING_OR_WRITING_GETS = {"/api/v1/bookie/sanity", "/api/v1/bookie/entry_logs", "/api/v1/config/server_config",
                              "/api/v1/bookie/list_disk_file", "/api/v1/bookie/list_bookie_info",
                              "/api/v1/autorecovery/list_under_replicated_ledger",
                              "/api/v1/autorecovery/move_replica",
                              # no GET at all: a method a route does not list needs the admin credential
                              "/api/v1/bookie/gc/resume_compaction", "/api/v1/autorecovery/trigger_audit",
                              "/api/v1/autorecovery/bookie"}


def every_path() -> list[str]:
    """The route table as the bookie builds it (handlers are closures; nothing is called here)."""
    backend: Any = SimpleNamespace(gc=None, autorecovery=None, bookie_id="b")
    paths: list[str] = []
    for module in (routes_bookie, routes_gc, routes_entrylogs, routes_ledger):
        paths += module.routes(backend)
    paths += routes_autorecovery.routes(SimpleNamespace(store=None))
    return paths


async def test_no_route_changes_anything_without_a_credential(bookie_factory: BookieFactory) -> None:
    bookie = bookie_factory(1, autoRecoveryDaemonEnabled=True)[0]
    paths = every_path()
    assert len(paths) >= 30 and "/api/v1/ledger/delete" in paths and "/api/v1/autorecovery/decommission" in paths
    for path in paths:
        for method in ("PUT", "POST", "DELETE", "PATCH"):
            answer = await call(method, bookie.http_url + path, body={"readOnly": True}, token=None)
            assert answer.status == 401, (method, path, answer.status, answer.text)
        answer = await call("GET", bookie.http_url + path, token=None)
        expected_401 = path.startswith("/api/v1/ledger/") or path in DISCLOSING_OR_WRITING_GETS
        assert (answer.status == 401) == expected_401, (path, answer.status, answer.text)
    state = (await call("GET", bookie.http_url + "/api/v1/bookie/state", token=None)).json()
    assert state["readOnly"] is False
