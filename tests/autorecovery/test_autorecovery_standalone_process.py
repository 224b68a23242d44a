"""``bookie autorecovery`` as a process of its own: it is elected auditor, brings the ledgers of a lost bookie
back to full replication, answers its REST routes, and stops cleanly on SIGTERM (what Kubernetes sends),
withdrawing its auditor vote."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import aiohttp
from bookie.client import BookKeeper
from bookie_fleet.local_bookies import free_port

from tests.support.java_bookies import BookieCluster

BOUND_S = 60.0


@contextmanager
def autorecovery_process(cluster: BookieCluster, worker_id: str, http_port: int) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bookie.cli", "autorecovery", "--zk", cluster.zk_connect,
         "--ledgers-root", cluster.ledgers_root, "--id", worker_id, "--check-interval", "0.5",
         "--lost-bookie-recovery-delay", "0", "--http-port", str(http_port), "--http-auth-disabled"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=30)


async def test_standalone_autorecovery_re_replicates_a_lost_bookie(
        cluster_factory: Callable[..., BookieCluster]) -> None:
    cluster = await asyncio.to_thread(cluster_factory, "python", 4)
    async with BookKeeper(cluster.client_config(add_timeout_s=3.0)) as bk:
        lh = await bk.create_ledger(3, 3, 2)
        await asyncio.gather(*(lh.append(b"entry-%d" % i) for i in range(200)))
        await lh.close()
        victim = lh.ensemble[0]
        await asyncio.to_thread(cluster.by_id(victim).kill)

        port = free_port()
        with autorecovery_process(cluster, "standalone-autorecovery", port) as proc:
            base = f"http://127.0.0.1:{port}/api/v1/autorecovery"
            deadline = time.monotonic() + BOUND_S
            auditor = ""
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
                while time.monotonic() < deadline:
                    assert proc.poll() is None, f"bookie autorecovery exited with {proc.returncode}"
                    ensembles = (await bk.ledger_metadata(lh.ledger_id)).value.ensembles.values()
                    replicated = all(victim not in e for e in ensembles)
                    if replicated and not await bk.store.list_underreplicated():
                        async with http.get(f"{base}/who_is_auditor") as r:
                            auditor = await r.text()
                        break
                    await asyncio.sleep(0.5)
            assert auditor == "Auditor: standalone-autorecovery"

            proc.send_signal(signal.SIGTERM)
            try:
                output, _ = await asyncio.to_thread(proc.communicate, timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                output, _ = await asyncio.to_thread(proc.communicate, timeout=30)
                raise AssertionError(f"still running 30 s after SIGTERM:\n{output[-6000:]}") from None
            assert proc.returncode == 0, output
            assert "signal received: stopping autorecovery standalone-autorecovery" in output
            assert await bk.store.auditor_votes() == []

        reader = await bk.open_ledger(lh.ledger_id)
        assert [e.payload for e in await reader.read(0, 199)] == [b"entry-%d" % i for i in range(200)]
        assert all(len(set(e)) == 3 and victim not in e
                   for e in (await bk.ledger_metadata(lh.ledger_id)).value.ensembles.values())
