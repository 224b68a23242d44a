"""``/api/v1/bookie/entry_log_files*``: entry logs read through the bookie (not in BookKeeper), read-only.

The storage audit reads a live bookie's entry logs here instead of from a copy of its disks:

* ``GET /api/v1/bookie/entry_log_files``: every entry log of every ledger directory, with size, mtime and
  whether it is the active log;
* ``GET|HEAD /api/v1/bookie/entry_log_files/{dir}/{name}``: the log's bytes; a ``Range: bytes=...`` header
  (one range) gives 206 and those bytes, a range that starts at or after the end of the file gives 416
  naming the file's size, a malformed or multi-part one 400;
* ``GET .../{dir}/{name}/header`` and ``.../ledgers_map``: the header and the ledgers map, decoded.

The log is held for the whole response (GC's reference-counted deletion waits for the reader, up to
``gcEntryLogForcedDestroyIntervalMs``); reads are throttled by the backend (``httpEntryLogReadRateByBytes``,
``httpEntryLogReadConcurrency``).
"""

from __future__ import annotations

import re

from aiohttp import web

from bookie.http.backend import EntryLogFilesAdmin, EntryLogNotFound, EntryLogsBackend, EntryLogUnreadable
from bookie.http.common import BadRequest, Handler, methods, plain, pretty

PREFIX = "/api/v1/bookie/entry_log_files"
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
_NAME = re.compile(r"([0-9a-fA-F]{1,16})\.log")


def byte_range(header: str | None, size: int, name: str) -> tuple[int, int] | None:
    """``[start, end)`` of a ``Range`` header against a file of ``size`` bytes; None: no header (whole file).

    A last byte past the end is cut to the end (RFC 9110: the active log grows, a client's size may be old);
    a first byte at or past the end is refused with 416."""
    if header is None:
        return None
    match = _RANGE.fullmatch(header.strip())
    if match is None or match.group(1) == match.group(2) == "":
        raise BadRequest(f"Range must be one range bytes=FIRST-LAST, bytes=FIRST- or bytes=-SUFFIX, got {header!r}")
    first, last = match.group(1), match.group(2)
    if first == "":
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise _unsatisfiable(header, size, name)
        return max(0, size - suffix), size
    start = int(first)
    if last != "" and int(last) < start:
        raise BadRequest(f"Range {header!r}: last byte {last} is before first byte {start}")
    if start >= size:
        raise _unsatisfiable(header, size, name)
    return start, size if last == "" else min(size, int(last) + 1)


def _unsatisfiable(header: str, size: int, name: str) -> web.HTTPRequestRangeNotSatisfiable:
    return web.HTTPRequestRangeNotSatisfiable(
        headers={"Content-Range": f"bytes */{size}"},
        text=f"Range {header!r} is outside entry log {name}, which has {size} bytes\n")


def _log_path(request: web.Request) -> tuple[int, int, str]:
    """(ledger directory index, log id, file name) from the path."""
    raw_dir, name = request.match_info["dir"], request.match_info["name"]
    if not raw_dir.isdigit():
        raise BadRequest(f"ledger directory index must be a non-negative integer, got {raw_dir!r}")
    match = _NAME.fullmatch(name)
    if match is None:
        raise BadRequest(f"entry log name must be <hex id>.log, got {name!r}")
    return int(raw_dir), int(match.group(1), 16), name


def routes(b: EntryLogsBackend) -> dict[str, Handler]:
    def files() -> EntryLogFilesAdmin:
        if b.entry_log_files is None:
            raise web.HTTPNotImplemented(text="Entry-log reads are not available on this bookie\n")
        return b.entry_log_files

    async def listing(_: web.Request) -> web.Response:
        logs = await files().list_files()
        return pretty({"bookieId": b.bookie_id, "entryLogs": [
            {"ledgerDir": f.ledger_dir, "dirIndex": f.dir_index, "logId": f"{f.log_id:x}",
             "name": f"{f.log_id:x}.log", "size": f.size, "mtimeMs": f.mtime_ms, "active": f.active,
             "url": f"{PREFIX}/{f.dir_index}/{f.log_id:x}.log"} for f in logs]})

    async def content(request: web.Request) -> web.StreamResponse:
        dir_index, log_id, name = _log_path(request)
        try:
            async with files().open(dir_index, log_id) as held:
                span = byte_range(request.headers.get("Range"), held.size, name)
                start, end = span if span is not None else (0, held.size)
                response = web.StreamResponse(status=206 if span is not None else 200, headers={
                    "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream",
                    "X-Entry-Log-Size": str(held.size), "X-Entry-Log-Mtime-Ms": str(held.mtime_ms)})
                if span is not None:
                    response.headers["Content-Range"] = f"bytes {start}-{end - 1}/{held.size}"
                response.content_length = end - start
                await response.prepare(request)
                try:
                    if request.method != "HEAD":
                        async for chunk in held.chunks(start, end - start):
                            await response.write(chunk)
                    await response.write_eof()
                except ConnectionResetError:  # the reader went away: nothing to answer, the log is released
                    pass
                return response
        except EntryLogNotFound as exc:
            return plain(f"{exc}\n", status=404)

    async def header(request: web.Request) -> web.Response:
        dir_index, log_id, name = _log_path(request)
        try:
            return pretty({"name": name, **await files().header(dir_index, log_id)})
        except EntryLogNotFound as exc:
            return plain(f"{exc}\n", status=404)
        except EntryLogUnreadable as exc:
            return plain(f"{exc}\n", status=422)

    async def ledgers_map(request: web.Request) -> web.Response:
        dir_index, log_id, name = _log_path(request)
        try:
            ledgers = await files().ledgers_map(dir_index, log_id)
        except EntryLogNotFound as exc:
            return plain(f"{exc}\n", status=404)
        except EntryLogUnreadable as exc:
            return plain(f"{exc}\n", status=422)
        return pretty({"name": name, "ledgersCount": len(ledgers),
                       "ledgers": {str(k): v for k, v in sorted(ledgers.items())}})

    return {
        PREFIX: methods(GET=listing),
        f"{PREFIX}/{{dir}}/{{name}}": methods(GET=content, HEAD=content),
        f"{PREFIX}/{{dir}}/{{name}}/header": methods(GET=header),
        f"{PREFIX}/{{dir}}/{{name}}/ledgers_map": methods(GET=ledgers_map),
    }
