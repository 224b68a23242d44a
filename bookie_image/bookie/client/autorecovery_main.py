"""``bookie autorecovery``: run the auditor and a replication worker (and optionally their REST routes)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import socket

from aiohttp import web

from bookie.client.autorecovery import Autorecovery
from bookie.client.bookkeeper import BookKeeper
from bookie.client.config import ClientConfig
from bookie.http import routes_autorecovery


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("autorecovery", help="run the autorecovery auditor and replication worker")
    p.add_argument("--zk", required=True, help="ZooKeeper connect string")
    p.add_argument("--ledgers-root", default="/ledgers")
    p.add_argument("--id", default=f"{socket.gethostname()}:autorecovery", help="worker id (auditor vote)")
    p.add_argument("--check-interval", type=float, default=5.0, help="seconds between audits")
    p.add_argument("--lost-bookie-recovery-delay", type=int, default=0, help="seconds (unless set in ZooKeeper)")
    p.add_argument("--http-port", type=int, default=0, help="serve /api/v1/autorecovery/* on this port")
    p.set_defaults(func=main)


async def _run(args: argparse.Namespace) -> None:
    async with BookKeeper(ClientConfig(zk_servers=args.zk, ledgers_root=args.ledgers_root, placement="rack",
                                       rack_resolver="zookeeper")) as bk:   # racks of /bookies, if any
        ar = await Autorecovery(bk, args.id, check_interval_s=args.check_interval,
                                lost_bookie_recovery_delay_s=args.lost_bookie_recovery_delay).start()
        runner = None
        if args.http_port:
            app = web.Application()
            for path, handler in routes_autorecovery.routes(ar).items():
                app.router.add_route("*", path, handler)
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "0.0.0.0", args.http_port).start()
        try:
            await asyncio.Event().wait()
        finally:
            if runner is not None:
                await runner.cleanup()
            await ar.stop()


def main(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(_run(args))
    except KeyboardInterrupt:
        pass
    return 0
