"""Every route of the admin API needs the scope this file names for it, on our real bookie over HTTP: the open
reads answer anyone; the read routes (ledger ids, topic names, entry data, the configuration) refuse a call
without a token or with a wrong one (401) and answer the read token; the admin routes, every other method
included, refuse the read token (403) and answer the admin token. HEAD needs what GET needs, and a path spelled
otherwise (escaped, a trailing slash, a dot segment, another case) gets no more than the path it stands for. The
bookie holds the read token as its hash (``sha256:<hex>``), as a bookie that must not hold a usable token does."""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bookie.http import (
    routes_autorecovery,
    routes_bookie,
    routes_entrylog_files,
    routes_entrylogs,
    routes_gc,
    routes_ledger,
)

from tests.support.admin_api import TEST_ADMIN_TOKEN
from tests.support.bookies import BookieFactory, LocalBookie
from tests.support.rest import Answer, call

READ_TOKEN = "test-read-token-abcdef0123456789"
WRONG_TOKEN = "not-a-token-of-this-bookie-0123"
AR = "/api/v1/autorecovery"
# Written out here rather than read from the bookie's table, so a change of the table has to change this too.
OPEN_GETS = {"/heartbeat", "/metrics", "/api/v1/bookie/state", "/api/v1/bookie/state/readonly",
             "/api/v1/bookie/is_ready", "/api/v1/bookie/info", "/api/v1/bookie/last_log_mark",
             "/api/v1/bookie/cluster_info", "/api/v1/bookie/list_bookies", "/api/v1/bookie/gc",
             "/api/v1/bookie/gc_details", "/api/v1/bookie/gc/suspend_compaction",
             "/api/v1/bookie/entry_location_compact", f"{AR}/status", f"{AR}/who_is_auditor",
             f"{AR}/lost_bookie_recovery_delay", f"{AR}/decommission"}
READ_GETS = {"/api/v1/bookie/entry_logs", "/api/v1/bookie/entry_log_files", f"{AR}/list_under_replicated_ledger",
             f"{AR}/move_replica",
             "/api/v1/config/server_config", "/api/v1/bookie/list_disk_file", "/api/v1/bookie/list_bookie_info",
             "/api/v1/ledger/list", "/api/v1/ledger/read"}
ENTRY_LOG_FILE = "/api/v1/bookie/entry_log_files/0/0.log"


def every_path() -> list[str]:
    """The route table as the bookie builds it (handlers are closures; nothing is called here)."""
    backend: Any = SimpleNamespace(gc=None, autorecovery=None, bookie_id="b")
    paths: list[str] = []
    for module in (routes_bookie, routes_gc, routes_entrylogs, routes_entrylog_files, routes_ledger):
        paths += module.routes(backend)
    paths += routes_autorecovery.routes(SimpleNamespace(store=None))
    return [p.replace("{dir}/{name}", "0/0.log") for p in paths]


def scoped_bookie(bookie_factory: BookieFactory, tmp_path: Path) -> LocalBookie:
    read_tokens = tmp_path / "read-tokens"
    digest = hashlib.sha256(READ_TOKEN.encode()).hexdigest()
    read_tokens.write_text(f"# the audit's token\nsha256:{digest}\n")
    bookie: LocalBookie = bookie_factory(1, autoRecoveryDaemonEnabled=True,
                                         httpServerReadTokenFile=str(read_tokens))[0]
    return bookie


async def ask(bookie: LocalBookie, method: str, path: str, token: str | None) -> Answer:
    return await call(method, bookie.http_url + path, token=token, params={"ledger_id": "1"} if "ledger" in path
                      else None)


async def test_each_route_needs_its_scope(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie = scoped_bookie(bookie_factory, tmp_path)
    paths = every_path()
    assert len(paths) >= 33 and ENTRY_LOG_FILE in paths and f"{ENTRY_LOG_FILE}/header" in paths
    for path in paths:
        read_route = path in READ_GETS or path.startswith(ENTRY_LOG_FILE)
        for method in ("GET", "HEAD"):
            anonymous = await ask(bookie, method, path, None)
            wrong = await ask(bookie, method, path, WRONG_TOKEN)
            reader = await ask(bookie, method, path, READ_TOKEN)
            if path in OPEN_GETS:
                assert anonymous.status not in (401, 403), (method, path, anonymous.status, anonymous.text)
                continue
            assert (anonymous.status, wrong.status) == (401, 401), (method, path, anonymous.text, wrong.text)
            if read_route:
                assert reader.status not in (401, 403), (method, path, reader.status, reader.text)
            else:
                assert reader.status == 403, (method, path, reader.status, reader.text)
                if method == "GET":
                    assert "needs the admin scope" in reader.json()["reason"]
        for method in ("PUT", "POST", "DELETE", "PATCH"):
            for token, status in ((None, 401), (WRONG_TOKEN, 401), (READ_TOKEN, 403)):
                answer = await ask(bookie, method, path, token)
                assert answer.status == status, (method, path, token, answer.status, answer.text)
    admin = await ask(bookie, "GET", "/api/v1/ledger/metadata", TEST_ADMIN_TOKEN)
    assert admin.status not in (401, 403), admin.text           # the admin token has every scope
    assert (await ask(bookie, "GET", "/api/v1/bookie/entry_logs", TEST_ADMIN_TOKEN)).status == 200


async def test_a_path_spelled_otherwise_gets_no_more(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie = scoped_bookie(bookie_factory, tmp_path)
    for path in ("/api/v1/bookie/%65ntry_logs", "/api/v1/bookie/entry_logs/", "//api/v1/bookie/entry_logs",
                 "/api/v1/bookie/./entry_logs", "/api/v1/bookie/gc/../entry_logs", "/API/v1/bookie/entry_logs",
                 "/api/v1/bookie/entry_log_files/0/../../entry_logs", "/api/v1/bookie/entry_log_files/0/0.log/x"):
        answer = await ask(bookie, "GET", path, None)
        assert answer.status == 401, (path, answer.status, answer.text)
    for path in ("/api/v1/ledger/%64elete", "/api/v1/ledger/delete/", "/api/v1/ledger/list/../delete",
                 "/api/v1/bookie/entry_log_files/../../ledger/delete"):
        answer = await ask(bookie, "DELETE", path, READ_TOKEN)
        assert answer.status == 403, (path, answer.status, answer.text)
    for path in ("/api/v1/bookie/%73anity", "/api/v1/bookie/sanity/", "/api/v1/ledger/%6Detadata"):
        answer = await ask(bookie, "GET", path, READ_TOKEN)
        assert answer.status == 403, (path, answer.status, answer.text)
