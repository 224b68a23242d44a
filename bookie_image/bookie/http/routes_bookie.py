"""/heartbeat, /metrics, /api/v1/config/*, /api/v1/bookie/{state,info,is_ready,sanity,...}."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from bookie.http.backend import AdminBackend
from bookie.http.common import BadRequest, Handler, bool_value, json_body, methods, plain, pretty


def readable(size: int) -> str:
    """``(1.5GB)`` as BookKeeper's ListBookieInfoService appends to byte counts (powers of 1000)."""
    value, unit = float(size), ""
    for unit in ("", "KB", "MB", "GB", "TB"):
        if value < 1000 or unit == "TB":
            break
        value /= 1000
    return f"({value:.3f}".rstrip("0").rstrip(".") + f"{unit})"


def routes(b: AdminBackend) -> dict[str, Handler]:
    async def heartbeat(_: web.Request) -> web.Response:
        return plain("OK\n")

    async def metrics(_: web.Request) -> web.Response:
        body, content_type = b.metrics_text()
        return web.Response(body=body, headers={"Content-Type": content_type})

    async def get_config(_: web.Request) -> web.Response:
        return pretty(b.server_config())

    async def put_config(request: web.Request) -> web.Response:
        values = await json_body(request, required=True)
        try:
            b.update_server_config(values)
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return plain("Success set server config.")

    async def state(_: web.Request) -> web.Response:
        return pretty(b.state_json())

    async def get_readonly(_: web.Request) -> web.Response:
        return pretty({"readOnly": b.state_json()["readOnly"]})

    async def put_readonly(request: web.Request) -> web.Response:
        body = await json_body(request, required=True)
        if "readOnly" not in body:
            raise BadRequest('expected {"readOnly": true|false}')
        try:
            await b.set_read_only(bool_value(body["readOnly"], "readOnly"))
        except ValueError as exc:
            raise BadRequest(str(exc)) from None
        return pretty({"readOnly": b.state_json()["readOnly"]})

    async def is_ready(_: web.Request) -> web.Response:
        if b.is_ready():
            return plain("OK")
        return plain("Bookie is not fully started yet", status=503)

    async def info(_: web.Request) -> web.Response:
        free, total = b.disk_space()
        return pretty({"freeSpace": free, "totalSpace": total})

    async def sanity(_: web.Request) -> web.Response:
        read_only = bool(b.state_json()["readOnly"])
        return pretty({"passed": await b.sanity_check(), "readOnly": read_only})

    async def last_log_mark(_: web.Request) -> web.Response:
        log_id, offset = b.last_log_mark()
        return pretty({f"LastLogMark: Journal Id - {log_id}({log_id:x}.txn)": f"Pos - {offset}"})

    async def list_disk_file(request: web.Request) -> web.Response:
        wanted = request.query.get("file_type")
        names = {"journal": "journal files", "entrylog": "entrylog files", "index": "index files"}
        if wanted is not None and wanted not in names:
            raise BadRequest(f"file_type must be one of {', '.join(names)}, got {wanted!r}")
        files = b.list_disk_files()
        out = {names[k]: "\t".join(v) for k, v in files.items() if wanted in (None, k)}
        return pretty(out)

    async def cluster_info(_: web.Request) -> web.Response:
        return pretty(await b.cluster_info())

    async def list_bookies(request: web.Request) -> web.Response:
        read_only = request.query.get("type") == "ro"
        hostnames = request.query.get("print_hostnames") == "true"
        out: dict[str, Any] = {}
        for bookie_id in await b.list_bookies(read_only):
            out[bookie_id] = bookie_id.rsplit(":", 1)[0] if hostnames else None
        return pretty(out)

    async def list_bookie_info(_: web.Request) -> web.Response:
        info = await b.bookie_disk_info()
        if not info:
            return plain("Not found any Bookie info.", status=404)
        # BookKeeper's ListBookieInfoService strings, byte for byte.
        out: dict[str, Any] = {
            bid: f": {{Free: {free}{readable(free)}, Total: {total}{readable(total)}}},"
            for bid, (free, total) in info.items()
        }
        free_all = sum(f for f, _ in info.values())
        total_all = sum(t for _, t in info.values())
        out["ClusterInfo: "] = f"{{Free: {free_all}{readable(free_all)}, Total: {total_all}{readable(total_all)}}}"
        return pretty(out)

    return {
        "/heartbeat": methods(ANY=heartbeat),
        "/metrics": methods(GET=metrics),
        "/api/v1/config/server_config": methods(GET=get_config, PUT=put_config),
        "/api/v1/bookie/state": methods(GET=state),
        "/api/v1/bookie/state/readonly": methods(GET=get_readonly, PUT=put_readonly),
        "/api/v1/bookie/is_ready": methods(GET=is_ready),
        "/api/v1/bookie/info": methods(GET=info),
        "/api/v1/bookie/sanity": methods(GET=sanity),
        "/api/v1/bookie/last_log_mark": methods(GET=last_log_mark),
        "/api/v1/bookie/list_disk_file": methods(GET=list_disk_file),
        "/api/v1/bookie/cluster_info": methods(GET=cluster_info),
        "/api/v1/bookie/list_bookies": methods(GET=list_bookies),
        "/api/v1/bookie/list_bookie_info": methods(GET=list_bookie_info),
    }
