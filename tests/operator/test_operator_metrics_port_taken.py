"""The operator test harness's metrics port: a port another process binds between being picked and the
operator's own bind makes the operator exit (address already in use); the harness starts it again on a fresh
port, and the test reads the metrics from the port that is actually served."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Callable, Iterator

import pytest

from tests.operator.conftest import OperatorProcess
from tests.support.kube import KubeTarget


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as holder:
        holder.bind(("0.0.0.0", 0))  # as the servers of other tests bind
        holder.listen()
        yield holder.getsockname()[1]


def test_an_operator_whose_metrics_port_was_taken_serves_on_another(
        kube: KubeTarget, kube_namespace: str, taken_port: int, monkeypatch: pytest.MonkeyPatch,
        operator_factory: Callable[..., OperatorProcess]) -> None:
    # The harness picks the taken port first (the race, made certain), then free ones. Patched in the module the
    # factory runs from: pytest loads conftest.py under its own module object.
    harness = operator_factory.__globals__
    picks, real_free_port = iter([taken_port]), harness["free_port"]
    monkeypatch.setitem(harness, "free_port", lambda: next(picks, None) or real_free_port())

    operator = operator_factory(kube_namespace, metrics=True)

    assert operator.starts == 2, "started again after losing its first port"
    assert operator.metrics_port != taken_port
    with urllib.request.urlopen(f"http://127.0.0.1:{operator.metrics_port}/metrics", timeout=5) as resp:
        assert "bookie_operator_rolling_restarts_total" in resp.read().decode()
