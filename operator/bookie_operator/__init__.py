"""The Kopf operator for BookieCluster resources: pure builders and decisions, a reconcile of named steps."""
