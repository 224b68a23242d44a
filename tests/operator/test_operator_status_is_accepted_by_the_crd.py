"""Every status the operator writes is one the API server accepts: conditions as metav1.Condition (type, status,
reason, message and lastTransitionTime required; reasons and lengths in its ranges), keyed by type so that two
managers applying conditions never duplicate one. The reconcile's fake API server refuses what the CRD refuses,
so every reconcile test checks this too; here are the cases that a plain reconcile does not reach."""

from __future__ import annotations

import ast
import re
import typing
from pathlib import Path

from bookie_operator import decisions, models
from bookie_operator.decisions import start_failures
from bookie_operator.decisions.tls import TlsReason
from bookie_operator.models import CONDITION_MESSAGE_MAX, CONDITION_REASON_PATTERN, parse_status

from tests.operator.crd_schema import status_errors, status_schema
from tests.operator.fakes import World, cluster_spec
from tests.operator.helpers import NOW

OPERATOR = Path(models.__file__).parent


def test_conditions_are_a_list_map_keyed_by_type_with_metav1_required_fields() -> None:
    conditions = status_schema()["properties"]["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]
    assert item["required"] == ["type", "status", "reason", "message", "lastTransitionTime"]
    assert item["properties"]["lastTransitionTime"]["format"] == "date-time"
    assert item["properties"]["observedGeneration"]["minimum"] == 0


def test_the_api_server_stand_in_refuses_what_the_crd_refuses() -> None:
    ready = {"type": "Ready", "status": "True", "reason": "BookiesReady", "message": "",
             "lastTransitionTime": "2026-11-22T12:00:00Z"}
    assert status_errors({"conditions": [ready]}) == []
    no_time = {k: v for k, v in ready.items() if k != "lastTransitionTime"}
    assert status_errors({"conditions": [no_time]}) == ["status.conditions[0].lastTransitionTime: Required value"]
    assert status_errors({"conditions": [ready, ready]}) == [
        "status.conditions[1]: Duplicate value: {'type': 'Ready'}"]
    assert status_errors({"conditions": [{**ready, "reason": "Bookies ready"}]})[0].startswith(
        "status.conditions[0].reason: Invalid value")


async def test_a_condition_stored_without_a_transition_time_gets_one_on_the_next_write() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec())
    await w.tick()
    status = w.kube.cluster("bk")["status"]
    idle = next(c for c in status["conditions"] if c["type"] == "Decommissioning")
    del idle["lastTransitionTime"]        # as an operator without metav1.Condition's rules could leave it
    await w.tick()                        # Ready flips (a write), Decommissioning keeps its status and its time
    assert status_errors(w.status) == []
    assert all("lastTransitionTime" in c for c in w.status["conditions"])


def test_a_message_longer_than_the_api_server_takes_is_cut() -> None:
    long = "bk-0: " + "x" * (CONDITION_MESSAGE_MAX + 100)
    [c] = decisions.set_condition([], "Degraded", True, "Problems", long, NOW, 1)
    assert len(c.message) == CONDITION_MESSAGE_MAX and c.message.startswith("bk-0: x")
    assert c.message.endswith(" [...]")
    assert status_errors({"conditions": [c.model_dump(by_alias=True, exclude_none=True)]}) == []


def test_one_condition_that_no_longer_validates_is_dropped_alone() -> None:
    good = {"type": "Ready", "status": "False", "reason": "BookiesNotReady", "message": "1/3 ready",
            "lastTransitionTime": "2026-11-22T12:00:00Z"}
    old = {"type": "Degraded", "status": "False", "reason": "Healthy"}
    assert [c.type for c in parse_status({"conditions": [good, old]}).conditions] == ["Ready"]


def _literal_reasons() -> set[str]:
    """The reasons passed as string literals to ``Tick.condition`` and ``ConditionValue`` in the operator."""
    found = set()
    for path in OPERATOR.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in ("condition", "ConditionValue") and len(node.args) >= 3:
                found |= {n.value for n in ast.walk(node.args[2])
                          if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return found


def test_every_reason_the_operator_writes_is_a_metav1_condition_reason() -> None:
    literals = _literal_reasons()
    assert {"InvalidSpec", "BookiesReady", "Reconciling", "Settled", "TooFewWritableBookies"} <= literals
    computed = {*(r.value for r in TlsReason), *start_failures.REASONS, *typing.get_args(models.DecommissionPhase),
                *typing.get_args(models.ExpansionPhase), "Valid", "NotAudited", "NotChecked",
                "EntriesWithoutReplica", "NoneFound"}
    bad = sorted(r for r in literals | computed if not re.fullmatch(CONDITION_REASON_PATTERN, r))
    assert bad == []
