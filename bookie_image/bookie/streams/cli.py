"""``bookie-stream``: streams over ledgers from the command line.

    bookie-stream --zk HOST:PORT [--ledgers-root /ledgers] [--streams-root /streams]
                  [--zk-tls [--zk-tls-ca CA] [--zk-tls-cert C --zk-tls-key K]] [--zk-digest-file F]
                  [--zk-enable-security] COMMAND ...

    namespace create NS [POLICY=VALUE ...]     a namespace and its default policies
    namespace set NS POLICY=VALUE ...          change a namespace's defaults
    create NS/STREAM [POLICY=VALUE ...]        a stream (policies override the namespace's)
    set-policy NS/STREAM POLICY=VALUE ...      change a stream's policies
    list [NS]                                  streams
    describe NS/STREAM                         metadata, segments, effective policies, cleanable ratio (JSON)
    append NS/STREAM [VALUE ...] [--key K] [--tombstone]
                                               append values (or stdin lines; --keyed: "key<TAB>value", a
                                               line with a key and no tab is a tombstone); prints positions
    read NS/STREAM [--from P] [--max N]        "<position>\\t<key>\\t<value>" lines (--json: JSON lines)
    tail NS/STREAM [--from P | --end] [--count N] [--idle-timeout S]
    clean [--stream NS/STREAM] [--map-bytes N] a compaction pass (dirtiest stream by default) with a progress
                                               bar and a summary of bytes reclaimed
    retention [--stream NS/STREAM] [--bookie-http URL ...]
                                               a retention pass (window / disk pressure), summary as JSON

Policies: roll_bytes, roll_ms, max_record_bytes, ensemble, write_quorum, ack_quorum, cleanup_policy
(delete | compact | compact,delete), retention_ms, retention_bytes, delete_when ("04", "02;04"),
disk_pressure_ratio, delete_pause_ms, min_cleanable_ratio, delete_retention_ms.

The ``--zk-*`` options are the bookie's ZooKeeper TLS and identity keys (``bookie.metadata.zk_options``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence

import uvloop

from bookie.client import errors as e
from bookie.client.progress import ProgressBar
from bookie.metadata import store as ms
from bookie.metadata import zk_options
from bookie.metadata.security import ZkSecurityError
from bookie.streams.cleaner import Cleaner
from bookie.streams.metadata import StreamError
from bookie.streams.policies import Policies
from bookie.streams.records import Record
from bookie.streams.retention import Retention
from bookie.streams.stream import Streams


def _split(full: str) -> tuple[str, str]:
    ns, sep, name = full.partition("/")
    if not sep or not ns or not name:
        raise StreamError(f"expected NAMESPACE/STREAM, got {full!r}")
    return ns, name


def _text(data: bytes | None) -> str:
    if data is None:
        return ""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return "0x" + data.hex()
    return text if text.isprintable() else "0x" + data.hex()


def _line(r: Record, as_json: bool) -> str:
    if as_json:
        return json.dumps({"position": r.position, "key": _text(r.key) if r.key is not None else None,
                           "value": _text(r.value) if r.value is not None else None, "timestamp": r.timestamp})
    return f"{r.position}\t{_text(r.key)}\t{'<tombstone>' if r.value is None else _text(r.value)}"


async def cmd_namespace(s: Streams, args: argparse.Namespace) -> None:
    policies = Policies.parse(args.policies)
    if args.action == "create":
        await s.create_namespace(args.namespace, policies)
        print(json.dumps({"namespace": args.namespace, "policies": policies.to_json()}))
    else:
        merged = await s.store.set_namespace_policies(args.namespace, policies)
        print(json.dumps({"namespace": args.namespace, "policies": merged.to_json()}))


async def cmd_create(s: Streams, args: argparse.Namespace) -> None:
    ns, name = _split(args.stream)
    await s.create_stream(ns, name, Policies.parse(args.policies))
    print(json.dumps(await s.describe(ns, name), indent=2))


async def cmd_set_policy(s: Streams, args: argparse.Namespace) -> None:
    ns, name = _split(args.stream)
    md = await s.set_policies(ns, name, Policies.parse(args.policies))
    print(json.dumps({"stream": md.full_name, "policies": md.policies.to_json(),
                      "effective_policies": (await s.store.effective_policies(md)).to_json()}, indent=2))


async def cmd_list(s: Streams, args: argparse.Namespace) -> None:
    for ns in [args.namespace] if args.namespace else await s.store.namespaces():
        for name in await s.store.streams(ns):
            print(f"{ns}/{name}")


async def cmd_describe(s: Streams, args: argparse.Namespace) -> None:
    print(json.dumps(await s.describe(*_split(args.stream)), indent=2))


async def cmd_append(s: Streams, args: argparse.Namespace) -> None:
    ns, name = _split(args.stream)
    items: list[tuple[bytes | None, bytes | None, int | None]] = []
    key = args.key.encode() if args.key is not None else None
    if args.tombstone:
        if key is None:
            raise StreamError("--tombstone needs --key")
        items.append((key, None, args.timestamp))
    items.extend((key, v.encode(), args.timestamp) for v in args.values)
    if not args.values and not args.tombstone:
        for raw in sys.stdin:
            line = raw.rstrip("\n")
            if args.keyed:
                k, tab, v = line.partition("\t")
                items.append((k.encode(), v.encode() if tab else None, args.timestamp))
            else:
                items.append((key, line.encode(), args.timestamp))
    async with await s.writer(ns, name) as writer:
        for position in await writer.append_many(items):
            print(position)


async def cmd_read(s: Streams, args: argparse.Namespace) -> None:
    reader = s.reader(*_split(args.stream), args.start)
    count = 0
    while args.max is None or count < args.max:
        batch = await reader.read(1000 if args.max is None else min(1000, args.max - count))
        if not batch:
            break
        for r in batch:
            print(_line(r, args.json))
        count += len(batch)
    sys.stdout.flush()


async def cmd_tail(s: Streams, args: argparse.Namespace) -> None:
    ns, name = _split(args.stream)
    start = args.start
    if args.end:
        md = await s.metadata(ns, name)
        start = md.next_position if md.open_segment is None else md.open_segment.first
    reader = s.reader(ns, name, start)
    if args.end:
        await reader.read_all()  # skip what is there
    count = 0
    while args.count is None or count < args.count:
        batch = await reader.tail(timeout_s=args.idle_timeout)
        if not batch:
            break
        for r in batch:
            print(_line(r, args.json), flush=True)
        count += len(batch)


async def cmd_clean(s: Streams, args: argparse.Namespace) -> None:
    bar: ProgressBar | None = None

    def progress(done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = ProgressBar("clean", total, unit="records")
        bar.set(done, total)

    cleaner = Cleaner(s, map_bytes=args.map_bytes, progress=progress)
    if args.stream:
        ns, name = _split(args.stream)
        result = await cleaner.clean(ns, name)
    else:
        chosen = await cleaner.run_once(args.min_ratio)
        if chosen is None:
            print(json.dumps({"cleaned": None, "reason": "no compacted stream above its min_cleanable_ratio"}))
            return
        result = chosen
    if bar is not None:
        bar.finish()
    summary = result.to_json()
    print(json.dumps(summary, indent=2))
    print(f"{result.stream}: read {result.records_read} records, kept {result.records_kept}, reclaimed "
          f"{result.bytes_reclaimed} bytes ({result.bytes_before} -> {result.bytes_after})"
          + (" - lost the swap to another cleaner" if result.lost_race else ""), file=sys.stderr)


async def cmd_retention(s: Streams, args: argparse.Namespace) -> None:
    only = [_split(args.stream)] if args.stream else None
    report = await Retention(s, args.bookie_http).run_once(now_ms=args.now_ms, only=only)
    print(json.dumps(report.to_json(), indent=2))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bookie-stream", description="streams over BookKeeper ledgers",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--zk", default=os.environ.get("BOOKIE_ZK", "127.0.0.1:2181"))
    parser.add_argument("--ledgers-root", default=os.environ.get("BOOKIE_LEDGERS_ROOT", "/ledgers"))
    parser.add_argument("--streams-root", default=os.environ.get("BOOKIE_STREAMS_ROOT", "/streams"))
    parser.add_argument("--zk-session-timeout", type=float, default=10.0, help="seconds")
    zk_options.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("namespace", help="create a namespace or set its default policies")
    p.add_argument("action", choices=["create", "set"])
    p.add_argument("namespace")
    p.add_argument("policies", nargs="*", metavar="POLICY=VALUE")
    p.set_defaults(func=cmd_namespace)

    p = sub.add_parser("create", help="create a stream")
    p.add_argument("stream", metavar="NS/STREAM")
    p.add_argument("policies", nargs="*", metavar="POLICY=VALUE")
    p.set_defaults(func=cmd_create)

    p = sub.add_parser("set-policy", help="change a stream's policies")
    p.add_argument("stream", metavar="NS/STREAM")
    p.add_argument("policies", nargs="+", metavar="POLICY=VALUE")
    p.set_defaults(func=cmd_set_policy)

    p = sub.add_parser("list", help="list streams")
    p.add_argument("namespace", nargs="?")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("describe", help="a stream's metadata")
    p.add_argument("stream", metavar="NS/STREAM")
    p.set_defaults(func=cmd_describe)

    p = sub.add_parser("append", help="append records")
    p.add_argument("stream", metavar="NS/STREAM")
    p.add_argument("values", nargs="*")
    p.add_argument("--key")
    p.add_argument("--tombstone", action="store_true", help="append a tombstone for --key")
    p.add_argument("--keyed", action="store_true", help="stdin lines are key<TAB>value")
    p.add_argument("--timestamp", type=int, default=None, help="ms since the epoch (default: now)")
    p.set_defaults(func=cmd_append)

    for command, helptext in (("read", "read records"), ("tail", "follow a stream")):
        p = sub.add_parser(command, help=helptext)
        p.add_argument("stream", metavar="NS/STREAM")
        p.add_argument("--from", dest="start", type=int, default=0)
        p.add_argument("--json", action="store_true", help="JSON lines")
        if command == "read":
            p.add_argument("--max", type=int, default=None)
            p.set_defaults(func=cmd_read)
        else:
            p.add_argument("--end", action="store_true", help="only records appended from now on")
            p.add_argument("--count", type=int, default=None, help="stop after this many records")
            p.add_argument("--idle-timeout", type=float, default=30.0, help="stop after this long without news")
            p.set_defaults(func=cmd_tail)

    p = sub.add_parser("clean", help="run a compaction pass")
    p.add_argument("--stream", metavar="NS/STREAM", help="this stream (default: the dirtiest)")
    p.add_argument("--map-bytes", type=int, default=64 * 1024 * 1024, help="offset map memory bound")
    p.add_argument("--min-ratio", type=float, default=None, help="override min_cleanable_ratio")
    p.set_defaults(func=cmd_clean)

    p = sub.add_parser("retention", help="run a retention pass")
    p.add_argument("--stream", metavar="NS/STREAM")
    p.add_argument("--bookie-http", action="append", default=[], metavar="URL",
                   help="a bookie's admin URL, for fleet disk pressure (repeat for every bookie)")
    p.add_argument("--now-ms", type=int, default=None, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_retention)
    return parser


async def _run(args: argparse.Namespace) -> None:
    zk_security = zk_options.security_from_args(args)
    await asyncio.to_thread(zk_options.check_reachable, zk_security, args.zk)
    async with Streams(args.zk, ledgers_root=args.ledgers_root, streams_root=args.streams_root,
                       session_timeout_s=args.zk_session_timeout, zk_security=zk_security) as streams:
        await args.func(streams, args)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        uvloop.run(_run(args))
    except (StreamError, ValueError, e.BKError, ms.MetadataError, ZkSecurityError) as exc:
        print(f"bookie-stream {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
