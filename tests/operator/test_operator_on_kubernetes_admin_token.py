"""On the local Kubernetes: the operator creates the cluster's admin token Secret once, our bookies refuse a
mutating admin call without that token and accept it with it, and the operator's own mutating calls (here
suspending compaction outside the spec's window) go through with it. The audit's token Secret, created beside
it, reads the explain endpoint but cannot switch a bookie read-only nor delete a ledger. The bookie pods hold
neither token: they mount only the Secret of the tokens' hashes."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import urllib.request
from collections.abc import Callable
from typing import Any

from bookie_fleet.zookeeper import ZooKeeperServer

from tests.operator.conftest import OperatorProcess, bookie_cluster, wait_ready
from tests.support.kube import KubeTarget, wait_for
from tests.support.rest import call


def _pod_url(kube: KubeTarget, ns: str, pod: str) -> str:
    obj = kube.get(f"/api/v1/namespaces/{ns}/pods/{pod}")
    assert obj is not None
    return f"http://{obj['status']['podIP']}:8080"


async def test_the_admin_token_secret_guards_the_bookies_and_the_operator_presents_it(
        kube: KubeTarget, kube_namespace: str, zookeeper: ZooKeeperServer,
        operator_factory: Callable[[str], OperatorProcess]) -> None:
    ns, root = kube_namespace, f"/{kube_namespace}/ledgers"
    now = dt.datetime.now(dt.UTC)
    window = {"start": (now + dt.timedelta(hours=6)).strftime("%H:%M"),
              "end": (now + dt.timedelta(hours=7)).strftime("%H:%M")}  # compaction suspended all test long
    operator_factory(ns)
    kube.apply(bookie_cluster("bk", zookeeper.connect_string, root, replicas=2, gc={"window": window}),
               namespace=ns)
    wait_ready(kube, ns, "bk")

    secret = kube.get(f"/api/v1/namespaces/{ns}/secrets/bk-admin-token")
    assert secret is not None and secret["metadata"]["ownerReferences"][0]["name"] == "bk"
    token = base64.b64decode(secret["data"]["token"]).decode().strip()
    assert len(token) >= 32
    url = _pod_url(kube, ns, "bk-0")

    def suspended() -> dict[str, Any] | None:
        with urllib.request.urlopen(url + "/api/v1/bookie/gc/suspend_compaction", timeout=5) as response:
            body: dict[str, Any] = json.loads(response.read())
        return body if body["isMajorGcSuspended"] == "true" else None

    # The operator's PUT (with the Secret's token) suspended compaction outside the window.
    await_suspended = wait_for(suspended, 60, interval=0.5, what="compaction suspended by the operator")
    assert await_suspended["isMinorGcSuspended"] == "true"

    readonly = url + "/api/v1/bookie/state/readonly"
    for wrong in (None, "x" * 40):
        answer = await call("PUT", readonly, body={"readOnly": True}, token=wrong)
        assert answer.status == 401, answer.text
    answer = await call("PUT", readonly, body={"readOnly": True}, token=token)
    assert answer.status == 200 and answer.json() == {"readOnly": True}
    answer = await call("PUT", readonly, body={"readOnly": False}, token=token)
    assert answer.status == 200

    audit = kube.get(f"/api/v1/namespaces/{ns}/secrets/bk-audit-token")
    assert audit is not None and audit["metadata"]["ownerReferences"][0]["name"] == "bk"
    audit_token = base64.b64decode(audit["data"]["token"]).decode().strip()
    assert (await call("GET", url + "/api/v1/bookie/entry_logs", token=audit_token)).status == 200
    assert (await call("GET", url + "/api/v1/bookie/entry_logs", token=None)).status == 401
    answer = await call("PUT", readonly, body={"readOnly": True}, token=audit_token)
    assert answer.status == 403 and "needs the admin scope" in answer.json()["reason"], answer.text
    answer = await call("DELETE", url + "/api/v1/ledger/delete", params={"ledger_id": "1"}, token=audit_token)
    assert answer.status == 403, answer.text
    assert (await call("GET", url + "/api/v1/bookie/state", token=None)).json()["readOnly"] is False

    # The bookie pods mount the hashes, never a token.
    pod = kube.get(f"/api/v1/namespaces/{ns}/pods/bk-0")
    assert pod is not None
    mounted = {v["secret"]["secretName"] for v in pod["spec"]["volumes"] if "secret" in v}
    assert mounted == {"bk-token-hashes"}, mounted
    hashes = kube.get(f"/api/v1/namespaces/{ns}/secrets/bk-token-hashes")
    assert hashes is not None
    for key, presented in (("admin", token), ("read", audit_token)):
        assert base64.b64decode(hashes["data"][key]).decode() == \
            f"sha256:{hashlib.sha256(presented.encode()).hexdigest()}\n"

    # Created once: the operator's later ticks read it, never replace it.
    again = kube.get(f"/api/v1/namespaces/{ns}/secrets/bk-admin-token")
    assert again is not None and again["data"] == secret["data"]
    assert again["metadata"]["resourceVersion"] == secret["metadata"]["resourceVersion"]
