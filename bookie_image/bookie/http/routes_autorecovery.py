"""``/api/v1/autorecovery/*`` over the auditor and replication worker (``bookie.client.autorecovery``).

Mounted by the bookie's admin API (``build_app``, when autorecovery runs in the bookie) and by
``bookie autorecovery --http-port``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bookie.http.backend import AutorecoveryAdmin
from bookie.http.common import BadRequest, Handler, bool_value, int_param, json_body, methods, plain, pretty

PREFIX = "/api/v1/autorecovery"


def routes(ar: AutorecoveryAdmin) -> dict[str, Handler]:
    store = ar.store

    async def get_status(request: web.Request) -> web.Response:
        return pretty({"enabled": await store.is_replication_enabled()})

    async def put_status(request: web.Request) -> web.Response:
        enabled = bool_value(request.query.get("enabled", ""), "enabled")
        await store.set_replication_enabled(enabled)
        return pretty({"enabled": enabled})

    async def list_ur(request: web.Request) -> web.Response:
        only = request.query.get("missingreplica")
        excluding = request.query.get("excludingmissingreplica")
        show = "printmissingreplica" in request.query
        result: dict[str, list[str]] = {}
        for ledger_id in await store.list_underreplicated():
            mark = await store.get_underreplicated(ledger_id)
            replicas = list(mark.replicas) if mark else []
            if (only and only not in replicas) or (excluding and excluding in replicas):
                continue
            result[str(ledger_id)] = replicas
        if not result:
            return plain("No under replicated ledgers found", status=404)
        return pretty(result if show else [int(k) for k in result])

    async def who(request: web.Request) -> web.Response:
        auditor = await store.auditor_id()
        if auditor is None:
            return plain("No auditor elected", status=404)
        return plain(f"Auditor: {auditor}")

    async def trigger(request: web.Request) -> web.Response:
        ar.trigger_audit()
        return plain("Success trigger audit.")

    async def get_delay(request: web.Request) -> web.Response:
        return plain(f"lostBookieRecoveryDelay value: {await ar.lost_bookie_recovery_delay()}")

    async def put_delay(request: web.Request) -> web.Response:
        body = await json_body(request, required=True)
        delay = body.get("delay_seconds")
        if not isinstance(delay, int) or delay < 0:
            raise BadRequest("delay_seconds must be a non-negative integer")
        await store.set_lost_bookie_recovery_delay(delay)
        return plain(f"Successfully set lostBookieRecoveryDelay to {delay}")

    async def put_decommission(request: web.Request) -> web.Response:
        body = await json_body(request, required=True)
        bookie = body.get("bookie_src")
        if not isinstance(bookie, str) or ":" not in bookie:
            raise BadRequest("bookie_src must be host:port")
        await ar.decommission(bookie, _delete_cookie(body))
        return plain(f"Success send decommission Bookie command {bookie}")

    async def get_decommission(request: web.Request) -> web.Response:
        bookie = request.query.get("bookie_src", "")
        report = ar.decommissions.get(bookie)
        if report is None:
            return plain(f"No decommission of {bookie!r} in progress", status=404)
        return pretty(report.to_json())

    async def put_bookie(request: web.Request) -> web.Response:
        body = await json_body(request, required=True)
        sources = body.get("bookie_src")
        if not isinstance(sources, list) or not all(isinstance(s, str) for s in sources):
            raise BadRequest("bookie_src must be a list of host:port")
        delete_cookie = _delete_cookie(body)
        for bookie in sources:
            await ar.decommission(bookie, delete_cookie)
        return plain("Success send recovery request command.")

    async def put_move(request: web.Request) -> web.Response:
        ledger_id, source, target, rate = _move_request(await json_body(request, required=True))
        try:
            move = ar.replica_moves.start(ledger_id, source, target, rate)
        except ValueError as exc:   # MoveRefused: another move of that ledger is running
            raise BadRequest(str(exc)) from None
        return pretty(move.to_json(), status=202)

    async def get_move(request: web.Request) -> web.Response:
        ledger_id = int_param(request, "ledger_id")
        move = ar.replica_moves.moves.get(ledger_id)
        if move is None:
            return plain(f"No move of ledger {ledger_id} known", status=404)
        return pretty(move.to_json())

    return {
        f"{PREFIX}/status": methods(GET=get_status, PUT=put_status),
        f"{PREFIX}/list_under_replicated_ledger": methods(GET=list_ur),
        f"{PREFIX}/who_is_auditor": methods(GET=who),
        f"{PREFIX}/trigger_audit": methods(PUT=trigger),
        f"{PREFIX}/lost_bookie_recovery_delay": methods(GET=get_delay, PUT=put_delay),
        f"{PREFIX}/decommission": methods(PUT=put_decommission, GET=get_decommission),
        f"{PREFIX}/bookie": methods(PUT=put_bookie),
        f"{PREFIX}/move_replica": methods(PUT=put_move, GET=get_move),
    }


def _delete_cookie(body: dict[str, Any]) -> bool:
    """``delete_cookie`` as Apache BookKeeper 4.18 takes it: a JSON boolean or the string "true" / "false"
    (its documentation's own example), false when absent."""
    value = body.get("delete_cookie", False)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise BadRequest(f"delete_cookie must be true or false, not {value!r}")


def _move_request(body: dict[str, Any]) -> tuple[int, str, str, int | None]:
    """``{"ledger_id", "bookie_src", "bookie_dest", "rate_bytes_per_second"?}``, each checked."""
    ledger_id = body.get("ledger_id")
    if not isinstance(ledger_id, int) or isinstance(ledger_id, bool) or ledger_id < 0:
        raise BadRequest("ledger_id must be a non-negative integer")
    source, target = body.get("bookie_src"), body.get("bookie_dest")
    for name, value in (("bookie_src", source), ("bookie_dest", target)):
        if not isinstance(value, str) or ":" not in value:
            raise BadRequest(f"{name} must be host:port")
    if source == target:
        raise BadRequest("bookie_src and bookie_dest are the same bookie")
    rate = body.get("rate_bytes_per_second")
    if rate is not None and (not isinstance(rate, int) or isinstance(rate, bool) or rate <= 0):
        raise BadRequest("rate_bytes_per_second must be a positive integer")
    assert isinstance(source, str) and isinstance(target, str)
    return ledger_id, source, target, rate
