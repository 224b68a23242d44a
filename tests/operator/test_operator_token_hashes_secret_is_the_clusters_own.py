"""The bookies accept whatever tokens ``<cluster>-token-hashes`` holds the hashes of, so the operator writes that
Secret only while it is the cluster's own: one someone else made under its name first stops the reconcile (nothing
that would mount it is applied, its data is left as it is, a condition says what to do), and the operator creates
its own once it is deleted. A write is made against the very Secret that was judged: one replaced between the
operator's read and its write is not written over."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from tests.operator.fakes import NS, FakeKube, World, cluster_spec, own_secret_metadata

HASHES = "bk-token-hashes"
PLANTED = "sha256:" + hashlib.sha256(b"a-token-its-maker-knows").hexdigest() + "\n"


def _planted() -> dict[str, Any]:
    return {"kind": "Secret", "metadata": {"name": HASHES, "namespace": NS, "resourceVersion": "7"},
            "data": {"admin": base64.b64encode(PLANTED.encode()).decode()}}


def _condition(w: World, kind: str) -> dict[str, Any]:
    return next(c for c in w.status["conditions"] if c["type"] == kind)


async def test_a_hashes_secret_someone_else_made_stops_the_reconcile_until_it_is_deleted() -> None:
    w = World()
    w.kube.objects[("Secret", NS, HASHES)] = _planted()
    w.kube.create_cluster("bk", cluster_spec())
    outcome = await w.tick()
    assert outcome.waiting, outcome
    degraded = _condition(w, "Degraded")
    assert degraded["reason"] == "SecretNotOwned", degraded
    assert degraded["message"].startswith(f"token hashes Secret {HASHES}: exists and is not the cluster's own"), \
        degraded
    assert w.kube.objects[("Secret", NS, HASHES)] == _planted()
    assert not [a for a in w.kube.applied if a.startswith("StatefulSet/")], w.kube.applied

    del w.kube.objects[("Secret", NS, HASHES)]
    await w.tick()
    mine = w.kube.objects[("Secret", NS, HASHES)]
    assert mine["metadata"]["ownerReferences"][0]["name"] == "bk"
    assert PLANTED not in base64.b64decode(mine["data"]["admin"]).decode()
    assert [a for a in w.kube.applied if a.startswith("StatefulSet/")]


class ReplacedAfterRead(FakeKube):
    """The API server as seen when someone deletes the hashes Secret and makes their own right after the
    operator read it."""

    async def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        found = await super().get(kind, namespace, name)
        if (kind, name) == ("Secret", HASHES) and found is not None:
            self.objects[("Secret", NS, HASHES)] = _planted()
        return found


async def test_a_hashes_secret_replaced_between_the_read_and_the_write_is_not_written_over() -> None:
    w = World(kube=ReplacedAfterRead())
    w.kube.objects[("Secret", NS, HASHES)] = {
        "kind": "Secret", "metadata": {**own_secret_metadata(HASHES), "resourceVersion": "3"},
        "data": {"admin": base64.b64encode(b"sha256:" + b"0" * 64 + b"\n").decode()}}
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    # The operator's write (the hashes of the cluster's real tokens) was refused by its precondition.
    assert w.kube.objects[("Secret", NS, HASHES)] == _planted()
    assert f"Secret/{HASHES}" not in w.kube.applied

