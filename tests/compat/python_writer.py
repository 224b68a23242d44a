"""A Python writer process for the cross-recovery tests: adds entries, prints ACKED lines, never closes.

    python tests/compat/python_writer.py <zk> <ledgers root> <count>
"""

from __future__ import annotations

import asyncio
import sys

from bookie.client import BookKeeper, ClientConfig


async def main(zk: str, root: str, count: int) -> None:
    bk = await BookKeeper(ClientConfig(zk_servers=zk, ledgers_root=root)).start()
    lh = await bk.create_ledger(3, 3, 2, password=b"pw")
    print(f"LEDGER {lh.ledger_id}", flush=True)
    for i in range(count):
        print(f"ACKED {await lh.add(b'python-%d' % i)}", flush=True)
    print("HOLDING", flush=True)
    await asyncio.Event().wait()  # until killed: a writer that dies without closing its ledger


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
