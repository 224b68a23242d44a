"""``bookie-shell``: the ledger client's command line for humans.

    bookie-shell --zk HOST:PORT [--ledgers-root /ledgers] [--tls-trust-store CA [--tls-certificate C --tls-key K]]
                 [--zk-tls [--zk-tls-ca CA] [--zk-tls-cert C --zk-tls-key K]] [--zk-digest-file F]
                 [--zk-enable-security] COMMAND ...

    bookies [--json]                         writable and read-only bookies
    ledgers [--json]                         ledger ids
    inspect LEDGER                           a ledger's metadata (JSON)
    read LEDGER [--first N] [--last N]       entries, one per line: "<entry id>\\t<payload>"
    delete LEDGER --yes                      delete a ledger (the bookies garbage-collect its data)
    underreplicated [--json]                 ledgers marked under-replicated and their missing replicas
    decommission BOOKIE [--rest URL [--rest-token-file F]]  move every fragment off BOOKIE, report what moved
    load [--entries N] [--size B]            write then read back a ledger, with a progress bar

Results go to stdout, progress and errors to stderr; the exit status is 0 on success, 1 on a failure the
command explains, 2 on bad usage. ``--zk`` and ``--ledgers-root`` default to ``$BOOKIE_ZK`` and
``$BOOKIE_LEDGERS_ROOT``; with ``--tls-trust-store`` every bookie connection starts TLS, and bookies that admit
certificate roles need ``--tls-certificate``/``--tls-key`` (docs/security.md). The ``--zk-*`` options are the
bookie's ZooKeeper TLS and identity keys (``bookie.metadata.zk_options``): a TLS-only ZooKeeper, or a fleet
with ``zkEnableSecurity``, needs them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import uvloop

from bookie.client import errors as e
from bookie.client.bookkeeper import BookKeeper
from bookie.client.config import ClientConfig
from bookie.client.progress import ProgressBar
from bookie.metadata import store as ms
from bookie.metadata import zk_options
from bookie.metadata.ledger_metadata import LedgerMetadata
from bookie.metadata.security import ZkSecurity, ZkSecurityError
from bookie.protocol.entry import DigestType
from bookie.tls import ClientTLS


class CommandError(Exception):
    """A failure the command explains on stderr (exit status 1)."""


# ------------------------------------------------------------------ formatting


def printable(payload: bytes, *, as_hex: bool = False) -> str:
    """UTF-8 text when the payload is printable text, else ``0x`` + hex."""
    if not as_hex:
        try:
            text = payload.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            if text.isprintable():
                return text
    return "0x" + payload.hex()


def metadata_json(ledger_id: int, md: LedgerMetadata) -> dict[str, Any]:
    return {
        "ledgerId": ledger_id,
        "state": md.state.name,
        "ensembleSize": md.ensemble_size,
        "writeQuorumSize": md.write_quorum_size,
        "ackQuorumSize": md.ack_quorum_size,
        "lastEntryId": md.last_entry_id,
        "length": md.length,
        "digestType": md.digest_type.name if md.digest_type is not None else None,
        "ctime": md.ctime,
        "ensembles": {str(first): list(bookies) for first, bookies in md.ensembles.items()},
        "customMetadata": {k: printable(v) for k, v in md.custom_metadata.items()},
    }


# ------------------------------------------------------------------ commands


async def cmd_bookies(bk: BookKeeper, args: argparse.Namespace) -> None:
    writable = sorted(await bk.writable_bookies())
    readonly = sorted(await bk.readonly_bookies())
    if args.json:
        print(json.dumps({"writable": writable, "readonly": readonly}, indent=2))
        return
    for bookie in writable:
        print(f"writable\t{bookie}")
    for bookie in readonly:
        print(f"read-only\t{bookie}")
    print(f"{len(writable)} writable, {len(readonly)} read-only", file=sys.stderr)


async def cmd_ledgers(bk: BookKeeper, args: argparse.Namespace) -> None:
    ids = await bk.list_ledgers()
    if args.json:
        print(json.dumps(ids))
        return
    for ledger_id in ids:
        print(ledger_id)


async def cmd_inspect(bk: BookKeeper, args: argparse.Namespace) -> None:
    versioned = await bk.ledger_metadata(args.ledger)
    out = metadata_json(args.ledger, versioned.value)
    out["metadataVersion"] = versioned.version
    print(json.dumps(out, indent=2))


async def cmd_read(bk: BookKeeper, args: argparse.Namespace) -> None:
    handle = await bk.open_ledger(args.ledger, args.password.encode(), recovery=args.recover)
    lac = handle.last_add_confirmed if handle.closed else await handle.read_last_add_confirmed()
    last = lac if args.last is None else min(args.last, lac)
    if args.first > last:
        print(f"ledger {args.ledger}: no entries in [{args.first}, {args.last if args.last is not None else lac}]"
              f" (last add confirmed {lac})", file=sys.stderr)
        return
    for start in range(args.first, last + 1, 1000):
        for entry in await handle.read(start, min(last, start + 999)):
            print(f"{entry.entry_id}\t{printable(entry.payload, as_hex=args.hex)}")


async def cmd_delete(bk: BookKeeper, args: argparse.Namespace) -> None:
    if not args.yes:
        if not sys.stdin.isatty():
            raise CommandError(f"refusing to delete ledger {args.ledger} without --yes")
        answer = await asyncio.to_thread(input, f"delete ledger {args.ledger}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            raise CommandError("not deleted")
    await bk.delete_ledger(args.ledger)
    print(f"Deleted ledger: {args.ledger}")


async def cmd_underreplicated(bk: BookKeeper, args: argparse.Namespace) -> None:
    marks: dict[str, list[str]] = {}
    for ledger_id in await bk.store.list_underreplicated():
        mark = await bk.store.get_underreplicated(ledger_id)
        if mark is not None:
            marks[str(ledger_id)] = list(mark.replicas)
    if args.json:
        print(json.dumps(marks, indent=2))
        return
    for key, replicas in marks.items():
        print(f"{key}\tmissing: {','.join(replicas)}")
    print(f"{len(marks)} under-replicated ledger(s)", file=sys.stderr)


async def ledgers_holding(bk: BookKeeper, bookie: str, candidates: Sequence[int] | None = None) -> list[int]:
    """Ledgers whose ensembles (any segment) still reference ``bookie``."""
    held = []
    for ledger_id in candidates if candidates is not None else await bk.list_ledgers():
        try:
            md = (await bk.store.read_ledger_metadata(ledger_id)).value
        except ms.NoSuchLedger:
            continue
        if bookie in md.bookies():
            held.append(ledger_id)
    return held


def _http(method: str, url: str, body: dict[str, Any] | None = None, token: str | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except urllib.error.URLError as exc:
        raise CommandError(f"cannot reach {url}: {exc.reason}") from exc


def _admin_token(path: str | None) -> str | None:
    """The first token of an admin token file (the bookie's httpServerAuthTokenFile format)."""
    if path is None:
        return None
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise CommandError(f"--rest-token-file {path}: {exc.strerror}") from exc
    token = next((t.strip() for t in lines if t.strip() and not t.strip().startswith("#")), None)
    if token is None:
        raise CommandError(f"--rest-token-file {path}: no token in it")
    return token


async def cmd_decommission(bk: BookKeeper, args: argparse.Namespace) -> None:
    """Through a bookie's/autorecovery's REST endpoint (``--rest``) or in this process with the library."""
    bookie = args.bookie
    ledgers = await ledgers_holding(bk, bookie)
    step: Callable[[], Awaitable[Any]]
    if args.rest:
        base = args.rest.rstrip("/") + "/api/v1/autorecovery"
        token = _admin_token(args.rest_token_file)
        status, text = await asyncio.to_thread(_http, "PUT", f"{base}/decommission", {"bookie_src": bookie}, token)
        if status != 200:
            raise CommandError(f"decommission refused by {args.rest}: HTTP {status}: {text.strip()}")

        async def step() -> None:
            await asyncio.to_thread(_http, "PUT", f"{base}/trigger_audit", None, token)
    else:
        from bookie.client.autorecovery import Autorecovery

        ar = Autorecovery(bk, f"bookie-shell-{os.getpid()}", open_ledger_grace_s=args.open_ledger_grace)
        await ar.decommission(bookie)
        step = ar.replicate_marked
    deadline = time.monotonic() + args.timeout
    remaining = list(ledgers)
    with ProgressBar(f"decommission {bookie}", len(ledgers), unit="ledgers") as bar:
        while remaining:
            await step()
            remaining = await ledgers_holding(bk, bookie, remaining)
            bar.set(len(ledgers) - len(remaining))
            if remaining:
                if time.monotonic() > deadline:
                    raise CommandError(f"decommission of {bookie} not done after {args.timeout}s; still "
                                       f"referenced by ledgers {remaining}")
                await asyncio.sleep(0.5)
    report = {"bookie": bookie, "done": True, "ledgers_moved": sorted(ledgers), "remaining": []}
    print(json.dumps(report, indent=2))


async def cmd_load(bk: BookKeeper, args: argparse.Namespace) -> None:
    def payload_of(i: int) -> bytes:
        return (f"{i:012d}".encode() * (args.size // 12 + 1))[:args.size]

    handle = await bk.create_ledger(args.ensemble, args.write_quorum, args.ack_quorum,
                                    digest_type=DigestType.CRC32C)
    latencies: list[float] = []
    window = asyncio.Semaphore(args.in_flight)
    loop = asyncio.get_running_loop()
    started = time.monotonic()
    with ProgressBar(f"write ledger {handle.ledger_id}", args.entries, unit="entries") as bar:
        futures = []
        for i in range(args.entries):
            await window.acquire()
            sent = loop.time()
            fut = handle.append(payload_of(i))

            def done(f: asyncio.Future[int], sent: float = sent) -> None:
                window.release()
                if not f.cancelled() and f.exception() is None:
                    latencies.append(loop.time() - sent)
                    bar.advance()

            fut.add_done_callback(done)
            futures.append(fut)
        ids = await asyncio.gather(*futures)
    write_s = time.monotonic() - started
    await handle.close()
    if ids != list(range(args.entries)):
        raise CommandError("entry ids were not acknowledged in order")
    started = time.monotonic()
    reader = await bk.open_ledger(handle.ledger_id)
    mismatched = 0
    with ProgressBar(f"read ledger {handle.ledger_id}", args.entries, unit="entries") as bar:
        for start in range(0, args.entries, 500):
            batch = await reader.read(start, min(args.entries, start + 500) - 1)
            mismatched += sum(1 for entry in batch if entry.payload != payload_of(entry.entry_id))
            bar.advance(len(batch))
    read_s = time.monotonic() - started
    if args.delete:
        await bk.delete_ledger(handle.ledger_id)
    latencies.sort()
    summary = {
        "ledger": handle.ledger_id,
        "entries": args.entries,
        "entry_size": args.size,
        "written": len(ids),
        "read_verified": args.entries - mismatched,
        "mismatched": mismatched,
        "write_entries_per_s": round(args.entries / max(write_s, 1e-9), 1),
        "write_mb_per_s": round(args.entries * args.size / max(write_s, 1e-9) / 1e6, 3),
        "read_entries_per_s": round(args.entries / max(read_s, 1e-9), 1),
        "add_latency_ms_p50": round(statistics.median(latencies) * 1000, 3) if latencies else None,
        "add_latency_ms_p99": round(latencies[int(len(latencies) * 0.99) - 1 if len(latencies) > 1 else 0]
                                    * 1000, 3) if latencies else None,
        "deleted": bool(args.delete),
    }
    print(json.dumps(summary, indent=2))
    if mismatched:
        raise CommandError(f"{mismatched} entries read back differ from what was written")


# ------------------------------------------------------------------ parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bookie-shell", description="BookKeeper ledger client shell",
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--zk", default=os.environ.get("BOOKIE_ZK", "127.0.0.1:2181"),
                        help="ZooKeeper connect string (default $BOOKIE_ZK or 127.0.0.1:2181)")
    parser.add_argument("--ledgers-root", default=os.environ.get("BOOKIE_LEDGERS_ROOT", "/ledgers"))
    tls = parser.add_argument_group("TLS to the bookies (BookKeeper's START_TLS; PEM files)")
    tls.add_argument("--tls-trust-store", default=os.environ.get("BOOKIE_TLS_TRUST_STORE"),
                     help="CA certificates the bookies' certificates must chain to; turns TLS on "
                          "(clientTrustStore; default $BOOKIE_TLS_TRUST_STORE)")
    tls.add_argument("--tls-certificate", default=os.environ.get("BOOKIE_TLS_CERTIFICATE"),
                     help="client certificate, for bookies that require one (tlsCertificatePath)")
    tls.add_argument("--tls-key", default=os.environ.get("BOOKIE_TLS_KEY"),
                     help="its private key (clientKeyStore)")
    zk_options.add_arguments(parser)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("bookies", help="list writable and read-only bookies")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_bookies)

    p = sub.add_parser("ledgers", help="list ledger ids")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_ledgers)

    p = sub.add_parser("inspect", help="a ledger's metadata")
    p.add_argument("ledger", type=int)
    p.set_defaults(func=cmd_inspect)

    p = sub.add_parser("read", help="read a ledger's entries")
    p.add_argument("ledger", type=int)
    p.add_argument("--first", type=int, default=0)
    p.add_argument("--last", type=int, default=None)
    p.add_argument("--password", default="")
    p.add_argument("--hex", action="store_true", help="payloads as hex even when they are text")
    p.add_argument("--recover", action="store_true",
                   help="fence and close an open ledger first (stops its writer); default: read without recovery")
    p.set_defaults(func=cmd_read)

    p = sub.add_parser("delete", help="delete a ledger")
    p.add_argument("ledger", type=int)
    p.add_argument("--yes", action="store_true", help="do not ask")
    p.set_defaults(func=cmd_delete)

    p = sub.add_parser("underreplicated", help="ledgers marked under-replicated")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_underreplicated)

    p = sub.add_parser("decommission", help="move every fragment off a bookie")
    p.add_argument("bookie", help="bookie id, host:port")
    p.add_argument("--rest", default=None,
                   help="base URL of a bookie or autorecovery admin server running autorecovery; "
                        "default: replicate from this process")
    p.add_argument("--rest-token-file", default=None,
                   help="file holding the admin API's bearer token (the decommission call needs a credential)")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--open-ledger-grace", type=float, default=30.0,
                   help="seconds an open ledger's writer is given before it is fenced and closed")
    p.set_defaults(func=cmd_decommission)

    p = sub.add_parser("load", help="write then read back one ledger, with a progress bar")
    p.add_argument("--entries", type=int, default=10000)
    p.add_argument("--size", type=int, default=1024, help="entry size in bytes")
    p.add_argument("--ensemble", type=int, default=3)
    p.add_argument("--write-quorum", type=int, default=None)
    p.add_argument("--ack-quorum", type=int, default=None)
    p.add_argument("--in-flight", type=int, default=1000, help="adds in flight at most")
    p.add_argument("--delete", action="store_true", help="delete the ledger afterwards")
    p.set_defaults(func=cmd_load)
    return parser


def client_tls(args: argparse.Namespace) -> ClientTLS | None:
    if (args.tls_certificate is None) != (args.tls_key is None):
        raise CommandError("--tls-certificate and --tls-key go together")
    if args.tls_trust_store is None:
        if args.tls_certificate is not None:
            raise CommandError("a client certificate needs --tls-trust-store (TLS needs the bookies' CA)")
        return None
    return ClientTLS(trust_store=args.tls_trust_store, client_authentication=args.tls_certificate is not None,
                     certificate_path=args.tls_certificate, key_store=args.tls_key)


async def _run(args: argparse.Namespace, tls: ClientTLS | None, zk_security: ZkSecurity) -> None:
    await asyncio.to_thread(zk_options.check_reachable, zk_security, args.zk)
    config = ClientConfig(zk_servers=args.zk, ledgers_root=args.ledgers_root, tls=tls, zk_security=zk_security)
    async with BookKeeper(config) as bk:
        await args.func(bk, args)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        tls = client_tls(args)
        zk_security = zk_options.security_from_args(args)
    except (CommandError, ZkSecurityError) as exc:
        parser.error(str(exc))  # exits 2: bad usage
    try:
        uvloop.run(_run(args, tls, zk_security))
    except (CommandError, e.BKError, ms.MetadataError, ZkSecurityError) as exc:
        print(f"bookie-shell {args.command}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
