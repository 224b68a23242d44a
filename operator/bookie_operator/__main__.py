"""``python -m bookie_operator``: run the operator (Kopf, standalone).

    python -m bookie_operator --all-namespaces --metrics-port 9090 --log-format json
    python -m bookie_operator --namespace team-a --namespace team-b
    python -m bookie_operator --leader-election-namespace ops    # one of several replicas

With ``--leader-election-namespace``, the process first waits for a Lease there (``bookie_operator.leader``)
and starts Kopf only once it holds it; losing it ends the process (its pod restarts as a standby).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import sys
import urllib.parse
import uuid
from collections.abc import AsyncIterator
from typing import Any


def main(argv: list[str] | None = None) -> int:
    from bookie_operator.decisions import escalations

    parser = argparse.ArgumentParser(prog="bookie-operator", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("-A", "--all-namespaces", action="store_true", help="watch every namespace (default)")
    scope.add_argument("-n", "--namespace", action="append", default=[], help="watch this namespace")
    parser.add_argument("--kubeconfig", help="kubeconfig (default: in-cluster, then $KUBECONFIG)")
    parser.add_argument("--interval", type=float, help="reconcile interval, seconds (default 30)")
    parser.add_argument("--metrics-port", type=int, default=9090, help="Prometheus metrics port (0: off)")
    parser.add_argument("--liveness", default="http://0.0.0.0:8081/healthz", help="Kopf liveness endpoint")
    parser.add_argument("--log-format", choices=["plain", "full", "json"], default="json")
    parser.add_argument("--no-manage-crd", action="store_true",
                        help="do not apply this version's BookieCluster CRD at start-up (CRDs managed elsewhere)")
    parser.add_argument("--audit-cluster-role", default="bookie-operator-audit",
                        help="the ClusterRole the storage audit's Spark pods are bound to (the chart's "
                             "<release>-audit)")
    parser.add_argument("--operator-namespace", help="namespace of the operator's own pods (with "
                        "--operator-pod-labels: the bookies' NetworkPolicy admits them to the admin port)")
    parser.add_argument("--operator-pod-labels", default="",
                        help="labels of the operator's own pods, k=v[,k=v...]")
    parser.add_argument("--allow-escalation", action="append", default=[], choices=escalations.KINDS,
                        help="let BookieClusters set fields of this kind (refused by default, docs/operator.md, "
                        "\"What the operator's settings must allow\"); repeat for several")
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--leader-election-namespace", help="run as one of several replicas: only the holder of "
                        "a Lease in this namespace acts (default: no election, this process acts)")
    parser.add_argument("--leader-election-id", default="bookie-operator", help="name of the Lease")
    parser.add_argument("--lease-duration", type=float, default=15.0,
                        help="seconds a standby waits on a lease that is not renewed before taking over")
    zk = parser.add_argument_group("ZooKeeper security (the fleet's identity; docs/security.md)")
    zk.add_argument("--zk-tls", action="store_true", help="connect to ZooKeeper over TLS")
    zk.add_argument("--zk-tls-ca", help="PEM CA bundle of ZooKeeper's server certificate")
    zk.add_argument("--zk-tls-cert", help="PEM client certificate (its subject: the x509 identity)")
    zk.add_argument("--zk-tls-key", help="PEM key of --zk-tls-cert")
    zk.add_argument("--zk-digest-file", help="file holding user:password (digest identity)")
    zk.add_argument("--zk-enable-security", action="store_true",
                    help="create znodes with CREATOR_ALL ACLs (BookKeeper's zkEnableSecurity)")
    args = parser.parse_args(argv)
    from bookie_operator import zk as zk_env

    for name, value in ((zk_env.ENV_TLS, "true" if args.zk_tls else None), (zk_env.ENV_TLS_CA, args.zk_tls_ca),
                        (zk_env.ENV_TLS_CERT, args.zk_tls_cert), (zk_env.ENV_TLS_KEY, args.zk_tls_key),
                        (zk_env.ENV_DIGEST_FILE, args.zk_digest_file),
                        (zk_env.ENV_ENABLE_SECURITY, "true" if args.zk_enable_security else None)):
        if value:
            os.environ[name] = value
    os.environ["BOOKIE_OPERATOR_AUDIT_CLUSTER_ROLE"] = args.audit_cluster_role
    os.environ[escalations.ENV] = ",".join(args.allow_escalation)
    if bool(args.operator_namespace) != bool(args.operator_pod_labels):
        parser.error("--operator-namespace and --operator-pod-labels go together")
    if args.operator_pod_labels:
        if not all("=" in item for item in args.operator_pod_labels.split(",")):
            parser.error(f"--operator-pod-labels: expected k=v[,k=v...], got {args.operator_pod_labels!r}")
        os.environ["BOOKIE_OPERATOR_NAMESPACE"] = args.operator_namespace
        os.environ["BOOKIE_OPERATOR_POD_LABELS"] = args.operator_pod_labels
    if args.namespace:
        # Exact namespaces: Kopf needs no cluster-wide namespace or CRD watch (the chart grants none then).
        os.environ["BOOKIE_OPERATOR_NAMESPACES"] = ",".join(args.namespace)
    if args.no_manage_crd:
        os.environ["BOOKIE_OPERATOR_MANAGE_CRD"] = "false"
    if args.interval is not None:
        os.environ["BOOKIE_OPERATOR_INTERVAL"] = str(args.interval)
    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig
        os.environ["BOOKIE_OPERATOR_KUBECONFIG"] = args.kubeconfig

    import kopf
    import prometheus_client
    from kopf._core.engines.peering import Identity  # the type of kopf.operator's identity (not re-exported)

    import bookie_operator.handlers  # noqa: F401  (registers the handlers)

    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat[args.log_format.upper()])
    if args.metrics_port:
        prometheus_client.start_http_server(args.metrics_port)
    # Kopf's default identity asks the password database for the user's name, which a container's numeric
    # user need not have: name this process after its pod instead.
    identity = f"{os.environ.get('HOSTNAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    operator = kopf.operator(standalone=True, clusterwide=not args.namespace, namespaces=args.namespace,
                             liveness_endpoint=args.liveness or None, identity=Identity(identity))
    if not args.leader_election_namespace:
        asyncio.run(operator)
        return 0
    return asyncio.run(_as_leader(args, operator))


@contextlib.asynccontextmanager
async def _standby_liveness(url: str) -> AsyncIterator[None]:
    """While waiting for the lease, answer the liveness probe that Kopf answers once it runs (same URL)."""
    if not url:
        yield
        return
    from aiohttp import web

    parsed = urllib.parse.urlsplit(url)
    async def alive(_request: web.Request) -> web.Response:
        return web.json_response({"standby": True})

    app = web.Application()
    app.router.add_get(parsed.path or "/", alive)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, parsed.hostname, parsed.port).start()
    try:
        yield
    finally:
        await runner.cleanup()


async def _as_leader(args: argparse.Namespace, operator: Any) -> int:
    """Run ``operator`` only while holding the Lease; 1 when the lease was lost (the pod restarts)."""
    from bookie_operator.kube import Kube
    from bookie_operator.leader import LeaderElector, LostLease, Timing

    log = logging.getLogger("bookie_operator.leader")
    kube = await Kube.connect(args.kubeconfig)
    identity = f"{os.environ.get('HOSTNAME') or socket.gethostname()}_{uuid.uuid4().hex[:8]}"
    duration = args.lease_duration
    elector = LeaderElector(kube, args.leader_election_namespace, args.leader_election_id, identity,
                            Timing(lease_duration=duration, renew_deadline=duration * 2 / 3,
                                   retry=max(0.5, duration / 7.5)))
    try:
        async with _standby_liveness(args.liveness):
            await elector.acquire()
        hold = asyncio.create_task(elector.hold())
        run = asyncio.create_task(operator)
        done, _ = await asyncio.wait({hold, run}, return_when=asyncio.FIRST_COMPLETED)
        for task in (hold, run):
            task.cancel()
        await asyncio.gather(hold, run, return_exceptions=True)
        if hold in done and isinstance(hold.exception(), LostLease):
            log.error("%s: stopping so that only one operator acts", hold.exception())
            return 1
        await elector.release()
        for task, what in ((hold, "holding the lease"), (run, "the operator")):
            if task in done and not task.cancelled() and task.exception() is not None:
                log.error("%s stopped: %r", what, task.exception(), exc_info=task.exception())
                return 1
        return 0
    finally:
        await kube.close()


if __name__ == "__main__":
    sys.exit(main())
