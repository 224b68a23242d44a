"""A dead bookie crash-looping on its lost disk starts once its cookie is deleted (DeletingCookie) and writes a
new one before its pod is deleted; its empty successor then cannot start (the cookie is in ZooKeeper, not on its
volumes). The chosen decommission deletes that cookie again, but only while the new bookie is not running (a
running one may have just written its own) and only for a mismatch within the same BookKeeper instance."""

from __future__ import annotations

import datetime as dt
from typing import Any

from bookie_operator.decisions import retire
from bookie_operator.decisions.retire import RetireAction, RetireFacts
from bookie_operator.decisions.start_failures import blocked_by_cookie
from bookie_operator.models import BookieClusterSpec, DecommissionRequestStatus

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.UTC)
SPEC = BookieClusterSpec.model_validate({"replicas": 3, "metadataService": {"zkServers": "zk:2181"}})
NOT_LOCAL = ("CookieMismatch: cookie check failed: cookie for bk-1.bk-headless.ns.svc.cluster.local:3181 exists "
             "in ZooKeeper but not locally in /bookie/journal-0, /bookie/ledgers-0 (no current/VERSION)")
OTHER_INSTANCE = ("CookieMismatch: cookie check failed: /bookie/journal-0/current/VERSION: cookie mismatch "
                  "(instance id 'aaa' != 'bbb')")


def pod(state: dict[str, Any], message: str = NOT_LOCAL) -> dict[str, Any]:
    return {"metadata": {"name": "bk-1", "uid": "new"}, "status": {"containerStatuses": [{
        "name": "bookie", "ready": False, "restartCount": 2, "state": state,
        "lastState": {"terminated": {"exitCode": 1, "message": message}}}]}}


def test_only_a_stopped_bookie_of_the_same_instance_is_blocked_by_the_cookie() -> None:
    assert blocked_by_cookie(pod({"waiting": {"reason": "CrashLoopBackOff"}}), 1)
    assert not blocked_by_cookie(pod({"running": {"startedAt": "t"}}), 1)         # maybe its own cookie now
    assert not blocked_by_cookie(pod({"waiting": {}}, "DirectoryNotWritable: /bookie/ledgers-0"), 1)
    # A mismatch between BookKeeper instances is another problem (Troubleshooting): its cookie is never deleted.
    assert not blocked_by_cookie(pod({"waiting": {}}, OTHER_INSTANCE), 1)

def test_the_cookie_is_deleted_again_while_the_new_bookie_is_blocked_by_it() -> None:
    state = DecommissionRequestStatus.model_validate(
        {"entry": "bk-1", "phase": "AwaitingNewBookie", "ordinal": 1, "pod": "bk-1", "bookieId": "bk-1:3181",
         "phaseSince": "t", "oldPodUid": "old"})
    step = retire.retire_step(state, RetireFacts(cookie_exists=True, pod_uid="new",
                                                 new_bookie_blocked_by_cookie=True), SPEC, NOW)
    assert step.actions == [RetireAction.DELETE_COOKIE] and step.status.phase == "AwaitingNewBookie"
    waiting = retire.retire_step(state, RetireFacts(cookie_exists=True, pod_uid="new"), SPEC, NOW)
    assert waiting.actions == [] and waiting.status.phase == "AwaitingNewBookie"
