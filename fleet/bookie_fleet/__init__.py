"""bookie-fleet: the umbrella command, the local fleet playground and launchers of real components."""
