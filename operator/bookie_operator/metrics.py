"""Prometheus metrics of the operator (served by ``prometheus_client`` on ``--metrics-port``).

Conventions (docs/monitoring.md): prefix ``bookie_operator_``; counters end in ``_total``, durations are
histograms in seconds, fractions end in ``_ratio`` (0..1); labels take a few fixed values (result, verb,
kind, phase) or name a cluster's objects (namespace, cluster, pod: bounded by the fleet's size), never a
ledger, an entry log or a request.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

# No ``*_created`` series next to every counter and histogram: they double the operator's series count and
# no dashboard or rule reads them (rate() handles restarts).
disable_created_metrics()

RECONCILES = Counter("bookie_operator_reconciles_total", "Reconcile runs", ["result"])
RECONCILE_SECONDS = Histogram("bookie_operator_reconcile_duration_seconds", "Duration of one reconcile",
                              buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
API_REQUESTS = Counter("bookie_operator_kube_api_requests_total", "Kubernetes API requests", ["verb"])
BOOKIE_REQUESTS = Counter("bookie_operator_bookie_api_requests_total", "Bookie admin REST requests", ["result"])
APPLIES = Counter("bookie_operator_applies_total", "Server-side applies", ["kind", "result"])
READ_ONLY_CHANGES = Counter("bookie_operator_read_only_changes_total", "Read-only/writable switches",
                            ["to"])
FORCED_GCS = Counter("bookie_operator_forced_gc_total", "Forced GCs triggered", ["why"])
COMPACTIONS = Counter("bookie_operator_scheduled_compactions_total", "Scheduled compactions per bookie",
                      ["result"])
DECOMMISSION_STEPS = Counter("bookie_operator_decommission_steps_total", "Decommission phase transitions",
                             ["phase"])
RESTARTS = Counter("bookie_operator_rolling_restarts_total", "Bookie pods deleted to roll a change")
DISK_USED = Gauge("bookie_operator_bookie_disk_used_ratio", "Disk used fraction per bookie",
                  ["namespace", "cluster", "pod"])
WRITABLE = Gauge("bookie_operator_writable_bookies", "Writable bookies per cluster", ["namespace", "cluster"])
REBALANCE_MOVES = Counter("bookie_operator_rebalance_moves_total", "Replica moves finished by rebalancing",
                          ["result"])
REBALANCE_BYTES = Counter("bookie_operator_rebalance_moved_bytes_total", "Estimated bytes of the replicas moved")
REBALANCE_SPREAD = Gauge("bookie_operator_rebalance_spread_ratio", "Fullest minus emptiest bookie's usage",
                         ["namespace", "cluster"])
