"""The Kopf operator for BookieCluster resources (issue 6)."""
