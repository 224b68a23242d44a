"""The pod runner: scheduler and kubelet stand-in for one node, running containers as local processes."""
