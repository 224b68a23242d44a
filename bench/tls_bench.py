"""TLS on the bookie port: adds with START_TLS connections next to the same adds in plaintext, on our bookie and
on Apache BookKeeper (the release of ``--peer``, bench/peer.py), same machine, same run.

    python bench/tls_bench.py                 # 3 rounds; rewrites the TLS section of docs/benchmarks.md
    python bench/tls_bench.py --quick         # tiny run, docs untouched
    python bench/tls_bench.py --report-only   # the docs section again from bench/tls_results.json

Two clusters of three bookies (ours under ``/ours-tls/ledgers``, Apache BookKeeper's with DbLedgerStorage under
``/java-tls/ledgers``), journal fsync on, both with the same TLS keys and PEM files (``tlsProviderFactoryClass``,
a test CA made with ``cryptography``; no client certificates, as Apache Pulsar's chart sets it up). A bookie
with TLS configured still serves plaintext connections, so each point runs the same bookies twice, in plaintext
and with START_TLS on every connection, with two clients: BookKeeper's own ``BenchThroughputLatency`` (Java,
1 KiB entries, ensemble/write/ack 3/2/2, v3; TLS by ``tlsProviderFactoryClass`` and the CA as
``clientTrustStore``) and our Python client (200 outstanding appends on one ledger; ``ClientConfig.tls``).
Every round alternates which implementation and which mode goes first; values are medians over the rounds.
CPU: utime + stime of the cluster's bookie processes per 100k acknowledged entries. Results also go to
bench/tls_results.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import statistics
import sys
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bookie_fleet.processes import stop_on_sigterm

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "benchmarks.md"
RESULTS = REPO / "bench" / "tls_results.json"
PY_WINDOW = 200
BEGIN, END = "<!-- tls:begin -->", "<!-- tls:end -->"
SIZE = 1024
ENSEMBLE = (3, 2, 2)

from peer import EARLIER_RUNS_PEER, Peer, add_peer_argument, chosen_peer  # noqa: E402
from run_all import (  # noqa: E402  (bench/ is on sys.path when a bench script runs)
    DB_LEDGER_STORAGE,
    JOURNAL_RETENTION,
    Cluster,
    _init_cluster,
    fdatasync_rate,
    load_average,
    measured,
    prepare_interpreter,
    py_adds,
    run_btl,
    stop_clusters,
    write_section,
)
from workdir import add_workdir_argument, kept_run_directory  # noqa: E402  (bench/ is on sys.path when a bench script runs)


@dataclass
class TlsPoint:
    impl: str
    client: str  # "java" (BenchThroughputLatency) or "python" (our client)
    tls: bool
    round: int
    ops_per_s: float
    p50_ms: float
    p99_ms: float
    cpu_s_per_100k: float
    load: float


def start_tls_clusters(workdir: Path, zk_connect: str, count: int, tls_conf: dict[str, Any],
                       started: dict[str, Cluster], peer: Peer) -> None:
    """Three bookies per implementation with the same TLS keys; ``started`` filled first, so a failure still stops
    what runs."""
    from bookie_fleet.java_bookies import plan_java_bookies
    from bookie_fleet.java_bookies import start_all as start_java
    from bookie_fleet.local_bookies import plan_bookies
    from bookie_fleet.local_bookies import start_all as start_ours

    java = Cluster("java", "/java-tls/ledgers", zk_connect)
    ours = Cluster("ours", "/ours-tls/ledgers", zk_connect)
    for c in (java, ours):
        asyncio.run(_init_cluster(zk_connect, c.root))
    java.bookies = plan_java_bookies(count, workdir / "java", zk_connect, java.root, first_host=226,
                                     production=True, journalSyncData=True, log_level="warn", lib_dir=peer.lib,
                                     ledgerStorageClass=DB_LEDGER_STORAGE, **JOURNAL_RETENTION, **tls_conf)
    ours.bookies = plan_bookies(count, workdir / "ours", zk_connect, ours.root, first_host=216, journalSyncData=True,
                                journalMaxGroupWaitMSec=1, autoRecoveryDaemonEnabled=False, **JOURNAL_RETENTION,
                                **tls_conf)
    started.update(java=java, ours=ours)
    start_java(java.bookies)
    start_ours(ours.bookies, 90)


async def negotiated(bookie_id: str, ca: Path) -> str:
    """What a START_TLS connection to ``bookie_id`` negotiates (probed with Python's ssl): ``TLSv1.3 <cipher>``."""
    from bookie.protocol import client_codec
    from bookie.protocol import messages as m
    from bookie.tls import ClientTLS

    host, port = bookie_id.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        writer.write(client_codec.encode_request(m.StartTLSRequest(m.Wire.v3(1))))
        size = int.from_bytes(await reader.readexactly(4), "big")
        await reader.readexactly(size)
        await writer.start_tls(ClientTLS(trust_store=str(ca)).load())
        tls = writer.get_extra_info("ssl_object")
        return f"{tls.version()} {tls.cipher()[0]}"
    finally:
        writer.close()


def run(rounds: int, seconds: int, throttle: int, count: int, ensemble: tuple[int, int, int], workdir: Path,
        peer: Peer) -> tuple[list[TlsPoint], dict[str, Any]]:
    from bookie.tls import ClientTLS
    from bookie_fleet.certificates import LocalCA, bookie_tls_conf, java_client_tls_properties
    from bookie_fleet.zookeeper import ZooKeeperServer

    facts: dict[str, Any] = {"cores": os.cpu_count(), "platform": platform.platform(),
                             "python": platform.python_version(), "load_before": load_average(),
                             "fdatasync_per_s": fdatasync_rate(workdir, 3 if rounds > 1 else 0.5),
                             "peer": peer.version}
    print(f"machine: {facts}", flush=True)
    ca = LocalCA(workdir / "pki")
    tls_conf = bookie_tls_conf(ca.issue("bookie", "bookie"))
    client_tls = java_client_tls_properties(None, ca.ca)
    points: list[TlsPoint] = []
    zk = ZooKeeperServer(workdir / "zk").start()
    clusters: dict[str, Cluster] = {}
    try:
        start_tls_clusters(workdir, zk.connect_string, count, tls_conf, clusters, peer)
        facts["negotiated"] = {impl: asyncio.run(negotiated(c.bookies[0].bookie_id, ca.ca))
                               for impl, c in clusters.items()}
        for impl in ("java", "ours"):  # warm-up: the JIT of the Java bookies, in both modes
            for props in (None, client_tls):
                run_btl(clusters[impl], SIZE, ensemble, False, 2 * seconds, throttle, workdir, props, True)
        python_tls = ClientTLS(trust_store=str(ca.ca))
        step = 0
        for r in range(rounds):
            for client in ("java", "python"):
                for tls in ((False, True) if (r + step) % 2 == 0 else (True, False)):
                    for impl in (("java", "ours") if step % 2 == 0 else ("ours", "java")):
                        step += 1
                        c = clusters[impl]
                        if client == "java":
                            fn: Any = partial(run_btl, c, SIZE, ensemble, False, seconds, throttle, workdir,
                                              client_tls if tls else None, True)
                        else:
                            fn = partial(_sync_adds, c, ensemble, seconds, python_tls if tls else None)
                        ops, p50, p99, count, cpu, load = measured(c, fn)
                        if not count:  # no add completed within the point (seen when the machine is overloaded)
                            ops = p50 = p99 = cpu = float("nan")
                        point = TlsPoint(impl, client, tls, r, ops, p50, p99, cpu, load)
                        points.append(point)
                        print(f"r{r} {client:<6} client, {impl:<4} bookies, tls={tls!s:<5} {ops:8.0f}/s "
                              f"p50 {p50:7.2f} p99 {p99:7.2f} ms cpu/100k {cpu:6.2f} s load {load:.1f}", flush=True)
    finally:
        stop_clusters(clusters)
        zk.stop()
    facts["load_after"] = load_average()
    return points, facts


def _sync_adds(cluster: Cluster, ensemble: tuple[int, int, int], seconds: int,
               tls: Any) -> tuple[float, float, float, int]:
    return asyncio.run(py_adds(cluster, SIZE, ensemble, seconds, PY_WINDOW, tls))


def _valid(points: list[TlsPoint], impl: str, client: str, tls: bool) -> int:
    return sum(1 for p in points
               if p.impl == impl and p.client == client and p.tls == tls and p.ops_per_s == p.ops_per_s)


def _median(points: list[TlsPoint], impl: str, client: str, tls: bool, attr: str) -> float:
    values = [getattr(p, attr) for p in points if p.impl == impl and p.client == client and p.tls == tls]
    values = [v for v in values if v == v]  # NaN: a failed point
    return statistics.median(values) if values else float("nan")


def _spread(points: list[TlsPoint], impl: str, client: str, tls: bool) -> str:
    values = sorted(p.ops_per_s for p in points
                    if p.impl == impl and p.client == client and p.tls == tls and p.ops_per_s == p.ops_per_s)
    return f"{values[0]:.0f}-{values[-1]:.0f}" if values else "n/a"


def _pct(new: float, old: float) -> str:
    return f"{100 * (new - old) / old:+.0f}%" if old == old and new == new and old else "n/a"


def report(points: list[TlsPoint], facts: dict[str, Any], rounds: int, seconds: int, throttle: int,
           command: str) -> str:
    rows, ratios, cpu = [], [], []
    for client, client_name in (("java", "BenchThroughputLatency (Java)"), ("python", "ours (Python)")):
        for impl, name in (("ours", "ours"), ("java", "Apache BookKeeper")):
            med = partial(_median, points, impl, client)
            plain, tls = med(False, "ops_per_s"), med(True, "ops_per_s")
            ratio = f"{tls / plain:.2f}x" if plain == plain and tls == tls and plain else "n/a"
            ratios.append(f"{name} {ratio} with the {'Java' if client == 'java' else 'Python'} client")
            cpu.append(f"{name} {_pct(med(True, 'cpu_s_per_100k'), med(False, 'cpu_s_per_100k'))}")
            for mode in (False, True):
                rows.append(f"| {client_name} | {name} | {'TLS' if mode else 'plaintext'} | "
                            f"{med(mode, 'ops_per_s'):.0f} | {_spread(points, impl, client, mode)} "
                            f"| {ratio if mode else ''} | {med(mode, 'p50_ms'):.1f} "
                            f"| {med(mode, 'p99_ms'):.1f} | {med(mode, 'cpu_s_per_100k'):.1f} "
                            f"| {med(mode, 'load'):.1f} | {_valid(points, impl, client, mode)}/{rounds} |")
    loaded = facts["load_before"] > (facts["cores"] or 1)
    load_note = (f" The machine was shared and loaded (load average {facts['load_before']:.1f} before, "
                 f"{facts['load_after']:.1f} after, on {facts['cores']} cores): compare the rows of one run, "
                 f"not absolute numbers." if loaded else "")
    return "\n".join([
        BEGIN,
        "## TLS on the bookie port: adds with START_TLS next to plaintext",
        "",
        f"Command: `{command}`  ",
        f"Machine: {facts['cores']} cores, {facts['platform']}, Python {facts['python']}; disk fdatasync "
        f"{facts['fdatasync_per_s']:.0f}/s measured in the same run.{load_note}  ",
        f"Clusters: 3 bookies per implementation (ours; Apache BookKeeper {facts.get('peer', EARLIER_RUNS_PEER)} "
        "with DbLedgerStorage and the JVM settings of its bin/bookkeeper, as in the suite), journal fsync on, both "
        "with TLS configured from the same PEM files (no client certificates). Clients, 1 KiB entries, 3/2/2, "
        "v3, in plaintext and with START_TLS on every connection: BookKeeper's `BenchThroughputLatency` "
        f"(`-throttle {throttle} -ledgers 64 -time {seconds}` after its own warm-up of 10000 adds, which starts "
        "the JVM's TLS and is not measured; TLS by `tlsProviderFactoryClass` + `clientTrustStore`) and our "
        f"Python client ({PY_WINDOW} outstanding appends on one ledger for {seconds} s; `ClientConfig.tls`). "
        "Client and bookies share the machine's cores, so each row includes the client's own TLS work. "
        f"{rounds} rounds alternating implementation and mode; medians over the points where adds completed (a "
        "point without any, seen only on an overloaded machine, is counted in the last column). A START_TLS "
        f"probe with Python's ssl negotiates {facts['negotiated']['ours']} with ours, "
        f"{facts['negotiated']['java']} with BookKeeper's (whose tlsProvider OpenSSL is netty-tcnative BoringSSL).",
        "",
        "| client | bookies | connections | adds/s | rounds' adds/s | TLS/plaintext | p50 ms | p99 ms "
        "| bookie CPU s/100k | load | points |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Throughput with TLS relative to plaintext: {'; '.join(ratios)}. Bookie CPU per 100k adds with TLS "
        f"against plaintext: {', '.join(cpu[:2])} (Java client); {', '.join(cpu[2:])} (Python client).",
        "",
        END,
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny run for the test suite; docs untouched")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=int, default=8, help="per point")
    parser.add_argument("--throttle", type=int, default=1000, help="BenchThroughputLatency -throttle")
    add_workdir_argument(parser)
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the docs section from bench/tls_results.json, measuring nothing")
    add_peer_argument(parser)
    args = parser.parse_args(argv)
    stop_on_sigterm()  # a timeout's SIGTERM still stops what the harness started
    if args.report_only:
        saved = json.loads(RESULTS.read_text())
        points = [TlsPoint(**p) for p in saved["points"]]
        settings = saved["settings"]
        write_section(DOCS, report(points, saved["facts"], settings["rounds"], settings["seconds"],
                                   settings["throttle"], saved["command"]), BEGIN, END)
        return 0
    prepare_interpreter()
    peer = chosen_peer(parser, args)
    rounds, seconds, count, ensemble = args.rounds, args.seconds, 3, ENSEMBLE
    if args.quick:
        rounds, seconds, count, ensemble = 1, 3, 1, (1, 1, 1)
    workdir = kept_run_directory(args.workdir, "tls-bench-")
    try:
        points, facts = run(rounds, seconds, args.throttle, count, ensemble, workdir, peer)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    command = ("python bench/tls_bench.py" + (f" --rounds {rounds}" if rounds != 3 else "")
               + (f" --peer {args.peer}" if args.peer else ""))
    section = report(points, facts, rounds, seconds, args.throttle, command)
    print(section)
    print(json.dumps([asdict(p) for p in points]))
    if not args.quick:
        settings = {"rounds": rounds, "seconds": seconds, "throttle": args.throttle}
        RESULTS.write_text(json.dumps({"command": command, "facts": facts, "settings": settings,
                                       "points": [asdict(p) for p in points]}, indent=1) + "\n")
        write_section(DOCS, section, BEGIN, END)
    return 0 if all(_valid(points, impl, client, mode) for impl in ("java", "ours") for client in ("java", "python")
                    for mode in (False, True)) else 1


if __name__ == "__main__":
    sys.exit(main())
