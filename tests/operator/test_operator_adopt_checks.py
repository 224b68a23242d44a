"""What the operator reads from a bookie StatefulSet of apache/pulsar-helm-chart's shape before adopting it, what it
refuses (with the reason, before anything changes), and the diff it shows of what approving changes."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from bookie_operator import builders
from bookie_operator.decisions import adopt
from bookie_operator.decisions.adopt import Refusal
from bookie_operator.models import AdoptionFound, BookieClusterSpec, parse_spec

from tests.support.pulsar_chart import DATA, bookie_objects

NS = "pulsar"
NAME = "pulsar-bookie"
ZK = "zk-0.zk:2181"
URI = f"zk+hierarchical://{ZK}/ledgers"


def _spec(**overrides: Any) -> BookieClusterSpec:
    spec: dict[str, Any] = {"replicas": 3, "ensembleSize": 2, "implementation": "apache-bookkeeper",
                            "image": "bookie-fleet/apache-bookkeeper:4.18.0",
                            "metadataService": {"zkServers": ZK}, "adopt": {"statefulSetName": NAME}}
    spec.update(overrides)
    return parse_spec(spec)


def _chart(**config: Any) -> tuple[dict[str, Any], dict[str, dict[str, str] | None]]:
    configmap, _service, sts = bookie_objects("pulsar", URI, replicas=3, **config)
    sts = copy.deepcopy(sts)
    sts["metadata"]["uid"] = "uid-sts"
    return sts, {configmap["metadata"]["name"]: configmap["data"]}


def _read(sts: dict[str, Any] | None, configmaps: dict[str, dict[str, str] | None],
          spec: BookieClusterSpec | None = None, cluster: str = NAME) -> AdoptionFound | Refusal:
    return adopt.read_statefulset(cluster, NS, spec or _spec(), sts, configmaps)


def test_the_chart_shaped_statefulset_is_read_with_its_names_paths_and_configuration() -> None:
    sts, cms = _chart()
    found = _read(sts, cms)
    assert isinstance(found, AdoptionFound), found
    assert (found.service_name, found.replicas, found.uid) == (NAME, 3, "uid-sts")
    assert [(v.claim, v.path, v.size) for v in found.journals] == [(f"{NAME}-journal", f"{DATA}/journal", "1Gi")]
    assert [(v.claim, v.path) for v in found.ledgers] == [(f"{NAME}-ledgers", f"{DATA}/ledgers")]
    assert found.bookie_id == f"{NAME}-0.{NAME}.{NS}.svc.cluster.local:3181"
    assert found.config["useHostNameAsBookieID"] == "true" and found.config["majorCompactionThreshold"] == "0.8"
    assert found.pod_labels == {"app": "pulsar", "release": "pulsar", "component": "bookie"}


def test_the_operator_statefulset_built_from_it_keeps_claims_directories_service_and_bookie_ids() -> None:
    sts, cms = _chart()
    found = _read(sts, cms)
    assert isinstance(found, AdoptionFound)
    spec = _spec()
    lay = builders.layout(NAME, spec, found)
    ours = builders.statefulset(builders.Owner(NAME, NS, "uid-bkc"), spec, 3, lay)
    assert ours["metadata"]["name"] == NAME and ours["spec"]["serviceName"] == NAME
    assert [c["metadata"]["name"] for c in ours["spec"]["volumeClaimTemplates"]] == \
        [c["metadata"]["name"] for c in sts["spec"]["volumeClaimTemplates"]]
    bookie = ours["spec"]["template"]["spec"]["containers"][0]
    mounts = {m["name"]: m["mountPath"] for m in bookie["volumeMounts"]}
    assert mounts[f"{NAME}-journal"] == f"{DATA}/journal" and mounts[f"{NAME}-ledgers"] == f"{DATA}/ledgers"
    conf = builders.bookie_config(spec, lay)
    assert (conf["journalDirectories"], conf["ledgerDirectories"]) == (f"{DATA}/journal", f"{DATA}/ledgers")
    env = {e["name"]: e.get("value") for e in bookie["env"]}
    assert env["BOOKIE_ID"] == f"$(POD_NAME).{NAME}.$(POD_NAMESPACE).svc.cluster.local:3181"
    assert builders.bookie_id(NAME, NS, 0, service=lay.service) == found.bookie_id
    labels = ours["spec"]["template"]["metadata"]["labels"]
    assert labels.items() >= {**found.pod_labels, **builders.selector_labels(NAME)}.items()
    services = [o["metadata"]["name"] for o in builders.desired_objects(builders.Owner(NAME, NS, "u"), spec, 3, [],
                                                                        lay) if o["kind"] == "Service"]
    assert services == [NAME, f"{NAME}-client"], "the client Service steps aside for the adopted headless one"


def test_without_an_adoption_the_operator_builds_what_it_always_did() -> None:
    spec = parse_spec({"metadataService": {"zkServers": ZK}})
    owner = builders.Owner("bk", NS, "u")
    assert builders.statefulset(owner, spec, 3) == builders.statefulset(owner, spec, 3, builders.layout("bk", spec))
    assert builders.bookie_config(spec)["journalDirectories"] == "/bookie/journal-0"


@pytest.mark.parametrize(("config", "reason", "named"), [
    ({"useHostNameAsBookieID": "false"}, "IpBookieIds", "useHostNameAsBookieID is not true"),
    ({"bookieId": "b1:3181"}, "FixedBookieIds", "bookieId=b1:3181"),
    ({"useShortHostName": "true"}, "FixedBookieIds", "useShortHostName=true"),
    ({"bookiePort": "3182"}, "FixedBookieIds", "port 3182"),
    ({"metadataServiceUri": "zk+hierarchical://other:2181/ledgers"}, "OtherMetadataService", "other:2181"),
    ({"ledgerDirectories": "/somewhere/else"}, "UnsupportedLayout", "ledgerDirectories /somewhere/else"),
    ({"indexDirectories": "/pulsar/data/index"}, "UnsupportedLayout", "indexDirectories=/pulsar/data/index"),
])
def test_what_cannot_be_kept_is_refused_with_the_reason(config: dict[str, str], reason: str, named: str) -> None:
    sts, cms = _chart(**config)
    refused = _read(sts, cms)
    assert isinstance(refused, Refusal) and refused.reason == reason, refused
    assert named in refused.message and NAME in refused.message


def test_pods_that_are_not_bookies_are_refused() -> None:
    sts, _ = _chart()
    refused = _read(sts, {f"{NAME}": {"PULSAR_MEM": "-Xmx1g", "webServicePort": "8080"}})
    assert isinstance(refused, Refusal) and refused.reason == "NotBookies"
    assert "not bookies" in refused.message and "journalDirectories" in refused.message


@pytest.mark.parametrize(("sts_missing", "cluster", "spec", "reason"), [
    (True, NAME, None, "AdoptionNotFound"),
    (False, "bk", None, "AdoptionNameMismatch"),
    (False, NAME, {"implementation": "bookie-fleet", "image": "bookie-fleet/bookie:0.1.0"},
     "AdoptionNeedsApacheBookKeeper"),
    (False, NAME, {"replicas": 4}, "ReplicasDiffer"),
])
def test_a_missing_statefulset_or_a_spec_that_does_not_match_it_is_refused(
        sts_missing: bool, cluster: str, spec: dict[str, Any] | None, reason: str) -> None:
    sts, cms = _chart()
    refused = _read(None if sts_missing else sts, cms, _spec(**(spec or {})), cluster)
    assert isinstance(refused, Refusal) and refused.reason == reason, refused


def test_pulsar_prefixed_and_plain_keys_are_read_and_a_prefixed_one_wins() -> None:
    container = {"envFrom": [{"configMapRef": {"name": "c"}}], "env": [{"name": "BK_gcWaitTime", "value": "9"}]}
    conf = adopt.container_config(container, {"c": {"zkServers": "zk:2181", "PULSAR_PREFIX_gcWaitTime": "5",
                                                    "gcWaitTime": "1", "PULSAR_MEM": "-Xmx1g"}})
    assert conf == {"zkServers": "zk:2181", "gcWaitTime": "9"}


def test_the_diff_shows_the_template_and_configuration_changes_and_is_bounded() -> None:
    sts, cms = _chart()
    found = _read(sts, cms)
    assert isinstance(found, AdoptionFound)
    spec = _spec()
    lay = builders.layout(NAME, spec, found)
    desired = builders.statefulset(builders.Owner(NAME, NS, "u"), spec, 3, lay)["spec"]["template"]
    text = adopt.diff(NAME, sts["spec"]["template"], desired, found.config, builders.bookie_config(spec, lay))
    assert text.startswith(f"--- live/StatefulSet/{NAME}/spec/template\n+++ desired/StatefulSet/{NAME}/spec/template")
    lines = text.splitlines()
    assert "-    - configMapRef:" in lines, "the chart's envFrom goes"
    assert "+      image: bookie-fleet/apache-bookkeeper:4.18.0" not in lines, "the image stays"
    assert "-httpServerPort=8000" in lines and "+httpServerPort=8080" in lines
    assert not any(line.startswith(("-journalDirectories", "+journalDirectories", "-ledgerDirectories"))
                   for line in lines), "the directories stay"
    cut = adopt.diff(NAME, sts["spec"]["template"], desired, found.config, builders.bookie_config(spec, lay), 600)
    assert len(cut) <= 600 and cut.endswith("(the diff is cut at 600 characters)\n")


def test_the_event_summarises_the_diff_without_its_headers() -> None:
    assert adopt.summary("--- live/x\n+++ desired/x\n@@ -1,2 +1,3 @@\n-a: 1\n+a: 2\n+b: 3\n c: 4\n") == "+2 -1 lines"


@pytest.mark.parametrize(("previous", "approve", "refused", "ours", "rolled", "expected"), [
    (None, False, False, None, False, "AwaitingApproval"),
    (None, True, False, None, False, "Replacing"),
    ("AwaitingApproval", False, True, None, False, "Refused"),
    ("Refused", True, False, None, False, "Replacing"),
    ("Replacing", True, False, False, False, "Replacing"),    # the old StatefulSet still there
    ("Replacing", True, False, None, False, "Rolling"),
    ("Replacing", True, False, True, False, "Rolling"),       # resumed after the operator's was applied
    ("Rolling", True, False, True, False, "Rolling"),
    ("Rolling", True, False, True, True, "Adopted"),
    ("Adopted", False, False, True, True, "Adopted"),
])
def test_the_phases_follow_from_what_is_there(previous: Any, approve: bool, refused: bool, ours: bool | None,
                                               rolled: bool, expected: str) -> None:
    assert adopt.next_phase(previous, approve, refused, ours, rolled) == expected
