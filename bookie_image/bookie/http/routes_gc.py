"""/api/v1/bookie/gc*, suspend/resume compaction, entry_location_compact.

The GC controller (``bookie.gc``) does the work; until it is configured these answer 501 so a tool can
tell "not implemented here" from "failed".
"""

from __future__ import annotations

from aiohttp import web

from bookie.http.backend import AdminBackend
from bookie.http.common import BadRequest, Handler, bool_value, json_body, methods, plain, pretty


def routes(b: AdminBackend) -> dict[str, Handler]:
    def unavailable() -> web.Response:
        return plain("Garbage collection is not available on this bookie", status=501)

    async def put_gc(request: web.Request) -> web.Response:
        if b.gc is None:
            return unavailable()
        body = await json_body(request)
        force_major = bool_value(body["forceMajor"], "forceMajor") if "forceMajor" in body else None
        force_minor = bool_value(body["forceMinor"], "forceMinor") if "forceMinor" in body else None
        b.gc.trigger(force_major=force_major, force_minor=force_minor)
        return pretty(f"Triggered GC on BookieServer: {b.bookie_id}")

    async def get_gc(_: web.Request) -> web.Response:
        if b.gc is None:
            return unavailable()
        return pretty({"is_in_force_gc": str(b.gc.is_in_force_gc()).lower()})

    async def gc_details(_: web.Request) -> web.Response:
        if b.gc is None:
            return unavailable()
        return pretty(b.gc.details())

    async def get_suspend(_: web.Request) -> web.Response:
        if b.gc is None:
            return unavailable()
        major, minor = b.gc.suspended()
        return pretty({"isMajorGcSuspended": str(major).lower(), "isMinorGcSuspended": str(minor).lower()})

    async def put_suspend(request: web.Request) -> web.Response:
        if b.gc is None:
            return unavailable()
        body = await json_body(request, required=True)
        major = bool_value(body.get("suspendMajor", False), "suspendMajor")
        minor = bool_value(body.get("suspendMinor", False), "suspendMinor")
        b.gc.suspend(major=major, minor=minor)
        return pretty(f"Suspend compaction: major={major}, minor={minor}")

    async def put_resume(request: web.Request) -> web.Response:
        if b.gc is None:
            return unavailable()
        body = await json_body(request, required=True)
        major = bool_value(body.get("resumeMajor", False), "resumeMajor")
        minor = bool_value(body.get("resumeMinor", False), "resumeMinor")
        b.gc.resume(major=major, minor=minor)
        return pretty(f"Resume compaction: major={major}, minor={minor}")

    async def put_location_compact(request: web.Request) -> web.Response:
        if b.gc is None:
            return unavailable()
        body = await json_body(request, required=True)
        if not bool_value(body.get("entryLocationRocksDBCompact", False), "entryLocationRocksDBCompact"):
            raise BadRequest("entryLocationRocksDBCompact must be true to trigger a compaction")
        paths = [p.strip() for p in str(body.get("entryLocations", "")).split(",") if p.strip()] or None
        unknown = b.gc.entry_location_compact(paths)
        if unknown:
            raise BadRequest(f"not a locations index of this bookie: {', '.join(unknown)}")
        which = ",".join(paths) if paths else "all"
        return pretty(f"Triggered entry Location RocksDB: {which} compact on bookie:{b.bookie_id}.")

    async def get_location_compact(_: web.Request) -> web.Response:
        if b.gc is None:
            return unavailable()
        return pretty(b.gc.entry_location_compacting())

    return {
        "/api/v1/bookie/entry_location_compact": methods(GET=get_location_compact, PUT=put_location_compact),
        "/api/v1/bookie/gc": methods(GET=get_gc, PUT=put_gc),
        "/api/v1/bookie/gc_details": methods(GET=gc_details),
        "/api/v1/bookie/gc/suspend_compaction": methods(GET=get_suspend, PUT=put_suspend),
        "/api/v1/bookie/gc/resume_compaction": methods(PUT=put_resume),
    }
