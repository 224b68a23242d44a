"""A pod of an Apache BookKeeper bookie is Ready when its bookie and its inspector both are. The inspector looks at
its ledger directory again when probed, so its readiness probe runs at least as often as the bookie's, whatever
the cluster's TLS: the pod is Ready one bookie probe after its bookie, never an inspector period later."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_operator import builders
from bookie_operator.builders import Owner

from tests.operator.helpers import spec

OWNER = Owner("bk", "ns", "uid-1")
JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}


@pytest.mark.parametrize("tls", [{}, {"tls": {"admin": {"secretName": "bk-admin-tls"}}}], ids=["http", "https"])
def test_the_inspector_is_probed_at_least_as_often_as_its_bookie(tls: dict[str, Any]) -> None:
    template = builders.statefulset(OWNER, spec(**JAVA, **tls), 3)["spec"]["template"]["spec"]
    pod = {c["name"]: c for c in template["containers"]}
    bookie, inspector = pod["bookie"]["readinessProbe"], pod["inspector"]["readinessProbe"]
    assert inspector["periodSeconds"] <= bookie["periodSeconds"], (inspector, bookie)
    assert inspector.get("initialDelaySeconds", 0) <= bookie.get("initialDelaySeconds", 0), (inspector, bookie)
