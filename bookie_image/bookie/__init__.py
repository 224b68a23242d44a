"""A Python bookie wire-compatible with Apache BookKeeper."""
