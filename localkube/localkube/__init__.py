"""localkube: a real Kubernetes control plane on one machine, with pods run as local processes.

``localkube.cluster.LocalCluster`` starts etcd, kube-apiserver, kube-controller-manager (binaries built from
Go modules by ``scripts/bootstrap.d/kube.sh``) and ``localkube.runner``, the pod runner standing in for the
scheduler and a kubelet. ``localkube.cli`` is ``bookie-fleet cluster up|down|status``.
See docs/local-kubernetes.md.
"""
