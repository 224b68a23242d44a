"""The ``bookie`` command: run a bookie, and inspect its files at 3 a.m.

    bookie serve --conf bookie.conf [--termination-log PATH]
    bookie inspect serve --conf inspector.conf [--termination-log PATH]
    bookie journal dump FILE.txn [--limit N]
    bookie entrylog dump FILE.log [--limit N] [--map-only]
    bookie ledger locations --conf bookie.conf LEDGER_ID
    bookie check --conf bookie.conf
    bookie scrub LEDGER_DIR...
    bookie index rebuild {ledgers,locations} --conf bookie.conf
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bookie.config import BookieConfig, ConfigError


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, default=str)
    sys.stdout.write("\n")


def cmd_serve(args: argparse.Namespace) -> int:
    """Run a bookie; a start-up failure is also the container's termination message (``bookie.termination``)."""
    import os

    from bookie import termination
    from bookie.server import run_bookie

    wrong = termination.wrong_image(os.environ)
    if wrong is not None:      # before the configuration: a pod built for another bookie has none of ours
        termination.write(termination.WRONG_IMAGE, wrong, args.termination_log)
        print(f"bookie: bookie cannot start ({termination.WRONG_IMAGE}): {wrong}", file=sys.stderr)
        return 1
    return _run_service("bookie", run_bookie, args)


def cmd_inspect_serve(args: argparse.Namespace) -> int:
    """Run the inspector beside another bookie (``bookie.inspector``), with the same start-up reporting."""
    from bookie.inspector.process import run_inspector

    return _run_service("inspector", run_inspector, args)


def _run_service(what: str, run: Callable[[BookieConfig], int], args: argparse.Namespace) -> int:
    from bookie import termination

    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        conf = BookieConfig.from_file(args.conf)
    except ConfigError as exc:
        termination.write(termination.INVALID_CONFIG, str(exc), args.termination_log)
        raise
    try:
        return run(conf)
    except termination.StartFailure as exc:
        termination.write(exc.reason, str(exc), args.termination_log)
        print(f"bookie: {what} cannot start ({exc.reason}): {exc}", file=sys.stderr)
        return 1


def cmd_journal_dump(args: argparse.Namespace) -> int:
    from bookie.storage import inspect
    from bookie.storage.journal_format import CorruptJournal

    try:
        for n, record in enumerate(inspect.dump_journal(Path(args.file))):
            if args.limit is not None and n >= args.limit:
                break
            _print_json(record)
    except CorruptJournal as exc:
        print(f"bookie: {args.file}: {exc}", file=sys.stderr)
        return 1
    return 0


def cmd_entrylog_dump(args: argparse.Namespace) -> int:
    from bookie.storage import inspect

    dump = inspect.dump_entry_log(Path(args.file), include_records=not args.map_only, limit=args.limit)
    _print_json(dump)
    problems = [f"{key} {dump[key]}" for key in ("error", "ledgers_map_error", "corrupt_at") if key in dump]
    if problems:  # a damaged log is never shown as if it were merely empty
        print(f"bookie: {args.file}: {'; '.join(problems)}", file=sys.stderr)
        return 1
    return 0


def cmd_ledger_locations(args: argparse.Namespace) -> int:
    from bookie.storage import inspect

    conf = BookieConfig.from_file(args.conf)
    _print_json(inspect.ledger_locations(conf, args.ledger_id))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from bookie.storage import inspect

    conf = BookieConfig.from_file(args.conf)
    report = inspect.check_directories(conf)
    _print_json(report)
    return 0 if not report.get("problems") else 1


def cmd_index_rebuild(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from bookie.storage.index_rebuild import RebuildRefusedError, rebuild

    conf = BookieConfig.from_file(args.conf)
    try:
        reports = rebuild(conf, args.index)
    except RebuildRefusedError as exc:
        print(f"bookie: index rebuild refused, nothing changed: {exc}", file=sys.stderr)
        return 1
    _print_json([asdict(report) for report in reports])
    damaged = [line for report in reports for line in report.damaged]
    for line in damaged:  # rebuilt all the same: what the damaged files held before the damage is indexed
        print(f"bookie: read only up to a damaged record: {line}", file=sys.stderr)
    return 1 if damaged else 0


def cmd_scrub(args: argparse.Namespace) -> int:
    from bookie.scrub import scrub

    report = scrub([Path(d) for d in args.ledger_dirs])
    _print_json(report.as_json())
    for damaged in report.damaged:
        print(f"bookie: damaged: ledger {damaged.ledger} entry {damaged.entry} in {damaged.log} at offset "
              f"{damaged.offset} (its {damaged.digest} digest does not match)", file=sys.stderr)
    for problem in report.problems:
        print(f"bookie: {problem}", file=sys.stderr)
    return 1 if report.damaged or report.problems else 0


def _service_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--conf", required=True, help="bk_server.conf-style file")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--termination-log", default=None, metavar="PATH",
                        help="file for the reason of a failed start (default: $BOOKIE_TERMINATION_LOG, else "
                             "/dev/termination-log when it exists; '' for none)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bookie", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run a bookie")
    _service_arguments(serve)
    serve.set_defaults(func=cmd_serve)

    inspect = sub.add_parser("inspect", help="the inspector beside another bookie (an Apache BookKeeper one)")
    iserve = inspect.add_subparsers(dest="action", required=True).add_parser(
        "serve", help="serve the explain endpoint, entry-log metrics and entry-log files of another bookie's "
                      "ledger directories, read-only (ledgerDirectories, metadataServiceUri, httpServer* keys)")
    _service_arguments(iserve)
    iserve.set_defaults(func=cmd_inspect_serve)

    journal = sub.add_parser("journal", help="journal files").add_subparsers(dest="action", required=True)
    jdump = journal.add_parser("dump", help="print the records of a journal file")
    jdump.add_argument("file")
    jdump.add_argument("--limit", type=int)
    jdump.set_defaults(func=cmd_journal_dump)

    entrylog = sub.add_parser("entrylog", help="entry log files").add_subparsers(dest="action", required=True)
    edump = entrylog.add_parser("dump", help="print an entry log's header, records and ledgers map")
    edump.add_argument("file")
    edump.add_argument("--limit", type=int)
    edump.add_argument("--map-only", action="store_true", help="header and ledgers map only")
    edump.set_defaults(func=cmd_entrylog_dump)

    ledger = sub.add_parser("ledger", help="local ledger data").add_subparsers(dest="action", required=True)
    loc = ledger.add_parser("locations", help="entry locations of a ledger in this bookie's index")
    loc.add_argument("--conf", required=True)
    loc.add_argument("ledger_id", type=int)
    loc.set_defaults(func=cmd_ledger_locations)

    check = sub.add_parser("check", help="check a bookie's directories for consistency")
    check.add_argument("--conf", required=True)
    check.set_defaults(func=cmd_check)

    scrub = sub.add_parser(
        "scrub", help="check every entry of the entry logs against its digest and name the damaged ones (CRC32C "
                      "and CRC32 ledgers; HMAC and DUMMY ones are listed as not verified); the bookie may run")
    scrub.add_argument("ledger_dirs", nargs="+", metavar="LEDGER_DIR",
                       help="a ledger directory (ledgerDirectories), of this bookie or an Apache BookKeeper one")
    scrub.set_defaults(func=cmd_scrub)

    index = sub.add_parser("index", help="the RocksDB indexes of the ledger directories").add_subparsers(
        dest="action", required=True)
    irebuild = index.add_parser(
        "rebuild", help="rebuild an index from the entry logs (and journals), the bookie stopped; the old index is "
                        "kept beside it as <name>.BACKUP-<time>. The same index as Apache BookKeeper's "
                        "rebuild-db-ledgers-index and rebuild-db-ledger-locations-index: every ledger the ledgers "
                        "index gets is fenced, with an empty master key")
    irebuild.add_argument("index", choices=["ledgers", "locations"],
                          help="ledgers first when both are lost: the location index keeps the ledgers it holds")
    irebuild.add_argument("--conf", required=True, help="the bookie's bk_server.conf-style file")
    irebuild.set_defaults(func=cmd_index_rebuild)

    from bookie.client.autorecovery_main import add_parser as add_autorecovery

    add_autorecovery(sub)  # bookie autorecovery: auditor and replication worker
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except ConfigError as exc:
        print(f"bookie: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a missing or unreadable file or RocksDB, named
        print(f"bookie: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
