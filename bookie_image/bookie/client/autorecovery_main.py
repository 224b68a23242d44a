"""``bookie autorecovery``: run the auditor and a replication worker (and optionally their REST routes)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import socket
import sys
from pathlib import Path

import uvloop
from aiohttp import web

from bookie.client.autorecovery import Autorecovery
from bookie.client.bookkeeper import BookKeeper
from bookie.client.config import ClientConfig
from bookie.http import AdminAuth, build_autorecovery_app
from bookie.tokens import TokenFileError


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("autorecovery", help="run the autorecovery auditor and replication worker")
    p.add_argument("--zk", required=True, help="ZooKeeper connect string")
    p.add_argument("--ledgers-root", default="/ledgers")
    p.add_argument("--id", default=f"{socket.gethostname()}:autorecovery", help="worker id (auditor vote)")
    p.add_argument("--check-interval", type=float, default=5.0, help="seconds between audits")
    p.add_argument("--lost-bookie-recovery-delay", type=int, default=0, help="seconds (unless set in ZooKeeper)")
    p.add_argument("--http-port", type=int, default=0, help="serve /api/v1/autorecovery/* on this port")
    p.add_argument("--http-host", default="127.0.0.1", help="address of that port (0.0.0.0 must be asked for)")
    p.add_argument("--http-auth-token-file", type=Path, default=None,
                   help="bearer tokens that may call the mutating endpoints (as httpServerAuthTokenFile); without "
                        "one they are refused")
    p.add_argument("--http-auth-disabled", action="store_true",
                   help="development only: accept every call without a credential")
    p.set_defaults(func=main)


async def _run(args: argparse.Namespace) -> None:
    async with BookKeeper(ClientConfig(zk_servers=args.zk, ledgers_root=args.ledgers_root, placement="rack",
                                       rack_resolver="zookeeper")) as bk:   # racks of /bookies, if any
        ar = await Autorecovery(bk, args.id, check_interval_s=args.check_interval,
                                lost_bookie_recovery_delay_s=args.lost_bookie_recovery_delay).start()
        runner = None
        if args.http_port:
            auth = AdminAuth(args.http_auth_token_file, disabled=args.http_auth_disabled)
            await auth.start()
            runner = web.AppRunner(build_autorecovery_app(ar, auth))
            await runner.setup()
            await web.TCPSite(runner, args.http_host, args.http_port).start()
        # Stop cleanly on SIGTERM (what Kubernetes sends) and SIGINT, as ``bookie serve`` does: a loop handler
        # works even when the process was started with SIGINT ignored (a background job of a shell).
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            await stop.wait()
            logging.getLogger(__name__).info("signal received: stopping autorecovery %s", args.id)
        finally:
            if runner is not None:
                await runner.cleanup()
            await ar.stop()


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.http_auth_disabled and args.http_auth_token_file is not None:
        print("bookie autorecovery: --http-auth-disabled contradicts --http-auth-token-file", file=sys.stderr)
        return 2
    try:
        uvloop.run(_run(args))
    except KeyboardInterrupt:
        pass
    except TokenFileError as exc:
        print(f"bookie autorecovery: {exc}", file=sys.stderr)
        return 1
    return 0
