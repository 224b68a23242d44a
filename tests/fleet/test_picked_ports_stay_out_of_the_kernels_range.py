"""A port the fleet picks for a bookie or a ZooKeeper (``bookie_fleet.processes.free_port``), or the local Kubernetes
for its API server and etcd (``localkube.procs.pick_port``), is its preferred one when that is free, else one below
the kernel's ephemeral range, where no socket bound to port 0 can take it between the
pick and the server's bind (a bookie of the playground once failed to start on "address already in use", its port
taken meanwhile on a machine running three test groups, JVMs among them)."""

from __future__ import annotations

import socket

from bookie_fleet.processes import free_port
from localkube.procs import PICKED_PORTS_FROM, ephemeral_ports_start, pick_port

HOST = "127.0.0.201"  # an address no fixture of the suite uses


def test_the_preferred_port_when_it_is_free() -> None:
    port = free_port(HOST)
    assert free_port(HOST, port) == port


def test_a_taken_preferred_port_gives_a_bindable_one_below_the_kernels_range() -> None:
    with socket.socket() as taken:
        taken.bind((HOST, 0))  # the kernel's pick: inside its range
        preferred = taken.getsockname()[1]
        assert preferred >= ephemeral_ports_start()
        picked = {free_port(HOST, preferred) for _ in range(20)}
    assert all(PICKED_PORTS_FROM <= p < ephemeral_ports_start() for p in picked), picked
    assert len(picked) > 1, "picked at random, not the same port for every caller"
    for port in picked:
        with socket.socket() as s:
            s.bind((HOST, port))


def test_ports_another_process_of_the_same_start_took_are_avoided() -> None:
    taken = {free_port(HOST) for _ in range(5)}
    for _ in range(20):
        port = pick_port(min(taken), HOST, avoid=taken)
        assert port not in taken and PICKED_PORTS_FROM <= port < ephemeral_ports_start()
