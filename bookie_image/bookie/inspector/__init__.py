"""The inspector: another bookie's disk explained from beside it, read-only (``bookie inspect serve``)."""
