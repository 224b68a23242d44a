"""``python -m bookie_operator``: run the operator (Kopf, standalone: one replica, Recreate).

    python -m bookie_operator --all-namespaces --metrics-port 9090 --log-format json
    python -m bookie_operator --namespace team-a --namespace team-b
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys


def main(argv: list[str] | None = None) -> int:
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
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    if args.no_manage_crd:
        os.environ["BOOKIE_OPERATOR_MANAGE_CRD"] = "false"
    if args.interval is not None:
        os.environ["BOOKIE_OPERATOR_INTERVAL"] = str(args.interval)
    if args.kubeconfig:
        os.environ["KUBECONFIG"] = args.kubeconfig
        os.environ["BOOKIE_OPERATOR_KUBECONFIG"] = args.kubeconfig

    import kopf
    import prometheus_client

    import bookie_operator.handlers  # noqa: F401  (registers the handlers)

    kopf.configure(verbose=args.verbose, log_format=kopf.LogFormat[args.log_format.upper()])
    if args.metrics_port:
        prometheus_client.start_http_server(args.metrics_port)
    asyncio.run(kopf.operator(standalone=True, clusterwide=not args.namespace, namespaces=args.namespace,
                              liveness_endpoint=args.liveness or None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
