"""``bookie-fleet cluster up|down|status``: the local Kubernetes cluster (see docs/local-kubernetes.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from localkube.binaries import MissingBinaryError
from localkube.cluster import ClusterError, LocalCluster, default_state_dir
from localkube.firewall import FirewallError


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bookie-fleet cluster", description=__doc__)
    parser.add_argument("--state-dir", type=Path, default=None,
                        help=f"cluster files (default: {default_state_dir()})")
    sub = parser.add_subparsers(dest="action", required=True)
    up = sub.add_parser("up", help="start etcd, kube-apiserver, kube-controller-manager and the pod runner")
    up.add_argument("--timeout", type=float, default=180.0)
    up.add_argument("--node-name", default="localkube")
    up.add_argument("--network-policy", action="store_true",
                    help="enforce NetworkPolicy: kube-router's firewall controller in the node (built by "
                         "scripts/bootstrap.d/netpolicy.sh; for a local test cluster only, see "
                         "docs/local-kubernetes.md)")
    # No ServiceAccount unless asked: `up` makes a cluster and puts nothing in the namespaces a user installs
    # into next. An account created by default under the chart's name (bookie-fleet/bookie-operator) made the
    # README's `helm install bookie-operator helm/bookie-operator -n bookie-fleet` fail ("exists and cannot be
    # imported into the current release"); running the operator outside the cluster is the rarer case, and
    # its user names the account it wants.
    up.add_argument("--service-account", default="", metavar="NAMESPACE/NAME",
                    help="also create this ServiceAccount (and its namespace) and write a kubeconfig for it, "
                         "e.g. to run the operator outside the cluster (default: none)")
    up.add_argument("--service-account-role", default="", metavar="CLUSTERROLE",
                    help="bind the ServiceAccount to this ClusterRole (default: no binding; RBAC is the chart's)")
    down = sub.add_parser("down", help="stop everything the cluster started (pods included)")
    down.add_argument("--purge", action="store_true", help="also delete the cluster's files (etcd data, volumes)")
    sub.add_parser("status", help="state of each component, with log paths")
    logs = sub.add_parser("logs", help="a pod's container log (kubectl logs needs a kubelet API; this reads the file)")
    logs.add_argument("pod", metavar="NAMESPACE/POD")
    logs.add_argument("-c", "--container", default=None)
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))

    cluster = LocalCluster(args.state_dir, node_name=getattr(args, "node_name", "localkube"))
    try:
        if args.action == "up":
            cluster.up(timeout=args.timeout, network_policy=args.network_policy)
            status = cluster.status()
            print(f"cluster ready at {status.server}"
                  + (f" in {cluster.ready_seconds:.1f}s" if cluster.ready_seconds is not None else " (already up)"))
            print(f"  export KUBECONFIG={cluster.admin_kubeconfig}")
            if args.service_account:
                namespace, _, name = args.service_account.partition("/")
                if not name:
                    parser.error("--service-account must be NAMESPACE/NAME")
                path = cluster.service_account_kubeconfig(namespace, name,
                                                          cluster_role=args.service_account_role or None)
                print(f"  service account {namespace}/{name}: KUBECONFIG={path}")
            print(f"  logs: {cluster.logs_dir}")
            return 0
        if args.action == "down":
            cluster.down(purge=args.purge)
            print("cluster stopped" + (" and its files deleted" if args.purge else ""))
            return 0
        if args.action == "logs":
            namespace, _, pod = args.pod.partition("/")
            files = cluster.pod_logs(namespace, pod, args.container)
            if not files:
                print(f"no log of pod {args.pod} under {cluster.state_dir / 'runner' / 'logs'}", file=sys.stderr)
                return 1
            for f in files:
                sys.stdout.write(f.read_text(errors="replace"))
            return 0
        status = cluster.status()
        if not any(c.pid for c in status.components):
            print(f"no cluster running (state: {status.state_dir})")
            return 3
        print(f"server {status.server}: {'ready' if status.apiserver_ready else 'NOT ready'}")
        for c in status.components:
            print(f"  {c.name:<24} {'running' if c.running else 'DOWN':<8} pid {c.pid}  log {c.log}")
            if not c.running:
                print("    " + c.detail.replace("\n", "\n    "))
        return 0 if status.healthy else 1
    except (ClusterError, MissingBinaryError, FirewallError) as exc:
        print(f"bookie-fleet cluster {args.action}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
