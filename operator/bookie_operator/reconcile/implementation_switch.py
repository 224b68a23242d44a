"""Switching the bookies between implementations in place (``status.implementationSwitch``).

Two steps around the apply: ``begin_implementation_switch`` (before it) starts or reverses the switch from what
the pods run, so that the objects applied in the same tick already serve the bookies of both implementations
(``during_switch``: the ConfigMap both read, the ports of both); ``switch_implementation`` (after it) gathers the
facts, asks ``decisions.implementation_switch`` and restarts at most one bookie. The rolling restart stands aside
while a switch runs.
"""

from __future__ import annotations

from bookie_operator import builders, metrics
from bookie_operator.decisions import implementation_switch as decide
from bookie_operator.decisions import retire
from bookie_operator.kube import KubeError
from bookie_operator.reconcile.context import Tick
from bookie_operator.reconcile.observe import observe_under_replication
from bookie_operator.reconcile.ports import Obj


def begin_implementation_switch(t: Tick) -> None:
    """A new switch when pods run another implementation than spec.implementation; a reversed one when the spec
    was set back mid-way."""
    state = t.status.implementation_switch
    target = t.spec.implementation
    if state is None:
        state = decide.start_switch(target, t.bookies, t.now)
        if state is not None:
            pods = ", ".join(b.pod for b in decide.on_source(t.bookies, target))
            t.event("Normal", "ImplementationSwitchStarted", f"switching {pods} from {state.source} to {target}, "
                    "one bookie at a time on its own volumes")
    elif state.target != target:
        state = decide.reverse_switch(state, target, t.bookies, t.now)
        t.event("Normal", "ImplementationSwitchReversed", f"spec.implementation set back to {target}: the bookies "
                f"switched to {state.source} go back one at a time")
    t.status.implementation_switch = state


def during_switch(t: Tick, objs: list[Obj]) -> list[Obj]:
    """While a switch runs, the objects serve the bookies of both implementations: the ConfigMap holds the
    configuration both read (the target's alone when spec.config is not valid for both: the switch waits,
    ``switch_implementation`` says why), the headless Service and the NetworkPolicy the ports of both."""
    state = t.status.implementation_switch
    if state is None:
        return objs
    other = state.source
    shared: dict[str, Obj | None] = {
        "Service": builders.switch_headless_service(t.owner, t.spec, other, t.layout),
        "NetworkPolicy": builders.switch_network_policy(t.owner, t.spec, other, t.op.operator_peers)}
    try:
        shared["ConfigMap"] = builders.switch_configmap(t.owner, t.spec, other, t.layout)
    except ValueError:
        pass
    out = []
    for obj in objs:
        replacement = shared.get(obj["kind"])
        same = replacement is not None and replacement["metadata"]["name"] == obj["metadata"]["name"]
        out.append(replacement if same and replacement is not None else obj)
    return out


async def switch_implementation(t: Tick) -> None:
    state = t.status.implementation_switch
    if state is None:
        return
    facts = await _facts(t, state.source)
    step = decide.switch_step(state, facts, t.now)
    if step.restart is not None and t.restart_hold:
        t.wait(f"implementation switch: restarting {step.restart.pod} waits for {t.restart_hold}")
    elif step.restart is not None:
        try:
            await t.op.kube.delete("Pod", t.namespace, step.restart.pod)
        except KubeError as exc:
            t.wait(f"implementation switch: restarting {step.restart.pod}: {exc}")
        else:
            metrics.RESTARTS.inc()
            t.event("Normal", "ImplementationSwitching", f"{step.restart.pod} restarted on {state.target} "
                    "(same volumes, bookie id and cookie)")
    new = step.status
    if new is not None and new.phase != state.phase and new.phase in ("Paused", "Failed"):
        t.event("Warning" if new.phase == "Failed" else "Normal", f"ImplementationSwitch{new.phase}", new.message)
    if step.failure:
        t.problems.append(f"implementation switch stopped: {step.failure}")
    if step.waiting:
        t.wait(f"implementation switch to {state.target}: waiting for {step.waiting}")
    if step.finished:
        t.event("Normal", "ImplementationSwitched", f"every bookie runs {state.target}")
    t.status.implementation_switch = new


async def _facts(t: Tick, source: str) -> decide.SwitchFacts:
    sts = t.statefulset or {}
    template = ((sts.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {}
    observed = (sts.get("status") or {}).get("observedGeneration")
    generation = (sts.get("metadata") or {}).get("generation")
    current = generation is None or (observed is not None and observed >= generation)
    config_problem = None
    try:
        builders.switch_bookie_config(t.spec, source, t.layout)
    except ValueError as exc:
        config_problem = (f"spec.config to be valid for both {source} and {t.spec.implementation} (bookies of both "
                          f"read it while the switch runs): {exc}")
    busy = f"the decommission of {t.status.decommission.pod}" if t.status.decommission else None
    chosen = retire.in_progress(t.status.decommission_requests)
    busy = busy or (f"the decommission of {chosen.pod}" if chosen else None)
    return decide.SwitchFacts(
        bookies=t.bookies, replicas=t.replicas,
        template_ready=current and template.get(builders.IMPLEMENTATION_LABEL) == t.spec.implementation,
        update_revision=(sts.get("status") or {}).get("updateRevision"),
        under_replicated=await _under_replicated(t), paused=t.spec.implementation_switch.paused,
        config_problem=config_problem, busy=busy,
        start_failures={o: (f.reason, f.message) for o, f in t.start_failures.items()})


async def _under_replicated(t: Tick) -> int | None:
    if t.under_replicated is None:
        t.under_replicated = await observe_under_replication(t)
    return t.under_replicated
