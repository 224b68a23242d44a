"""``bookie-shell`` against a bookie set: ``await shell(bookies, "ledgers")`` runs it as a subprocess."""

from __future__ import annotations

import asyncio
import subprocess

from bookie.client import BookKeeper, ClientConfig

from tests.support import cli
from tests.support.bookies import BookieSet


async def shell(bookies: BookieSet, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(cli.run, "bookie-shell", "--zk", bookies.zk_connect, "--ledgers-root",
                                   bookies.ledgers_root, *args, check=check)


def client(bookies: BookieSet) -> BookKeeper:
    return BookKeeper(ClientConfig(zk_servers=bookies.zk_connect, ledgers_root=bookies.ledgers_root))
