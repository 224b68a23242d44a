"""spec.image must run spec.implementation's bookie. A known image of the other implementation (the project's own,
Apache's, Pulsar's; any registry, tag or digest) is refused before anything is applied or restarted: by the
CRD's CEL rule and, for a CRD that lacks it, as an InvalidSpec by the operator. Any other image is checked when
its bookie starts, in the pod built for spec.implementation: an image without our bookie under the operator's
start script, or our bookie in a pod built for Apache BookKeeper's, stops with a WrongImage termination message,
which names the mismatch in Degraded and stops an implementation switch at its first bookie (Failed)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml
from bookie_operator import builders, crd, models
from bookie_operator.decisions import start_failures

from tests.operator.fakes import NS, World, cluster_spec
from tests.operator.test_operator_reconcile_implementation_switch import (
    JAVA,
    fail_to_start,
    implementations,
    pod_deletions,
    switch,
)

ZK = {"metadataService": {"zkServers": "zk:2181"}}


@pytest.mark.parametrize(("implementation", "image"), [
    ("bookie-fleet", "bookie-fleet/apache-bookkeeper:4.17.3"),
    ("bookie-fleet", "apache/bookkeeper:4.17.3"),
    ("bookie-fleet", "registry.example.com:5000/mirror/apache/bookkeeper@sha256:0123abcd"),
    ("bookie-fleet", "apachepulsar/pulsar-all:3.3.1"),
    ("apache-bookkeeper", "bookie-fleet/bookie:0.1.0"),
    ("apache-bookkeeper", "localhost:5000/bookie-fleet/bookie:0.1.0@sha256:0123abcd"),
])
def test_a_known_image_of_the_other_implementation_is_refused(implementation: str, image: str) -> None:
    with pytest.raises(models.InvalidSpec) as err:
        models.parse_spec({**ZK, "implementation": implementation, "image": image})
    assert f"spec.image {image} runs " in str(err.value) and f"not spec.implementation {implementation}'s" \
        in str(err.value)
    assert _cel_refuses(implementation, image), "the API server's rule refuses the same images"


def test_apache_bookkeeper_without_an_image_is_refused_not_run_on_ours() -> None:
    with pytest.raises(models.InvalidSpec) as err:
        models.parse_spec({**ZK, "implementation": "apache-bookkeeper"})
    assert "spec.image bookie-fleet/bookie:0.1.0 runs bookie-fleet's bookie" in str(err.value)


@pytest.mark.parametrize(("implementation", "image"), [
    ("bookie-fleet", "bookie-fleet/bookie:0.1.0"),
    ("bookie-fleet", "registry.example.com/team/bookie:1.2"),              # unknown: checked at start
    ("bookie-fleet", "example.com/notapache/bookkeeper:1"),
    ("apache-bookkeeper", "bookie-fleet/apache-bookkeeper:4.17.3"),
    ("apache-bookkeeper", "apache/bookkeeper:4.17.3"),
    ("apache-bookkeeper", "registry.example.com/bookie-fleet/bookie-java:1"),
])
def test_a_matching_or_unknown_image_is_accepted(implementation: str, image: str) -> None:
    assert models.parse_spec({**ZK, "implementation": implementation, "image": image}).image == image
    assert not _cel_refuses(implementation, image)


def _cel_refuses(implementation: str, image: str) -> bool:
    """Whether the generated CRD's rule refuses the pair: each of its terms, (implementation, the pattern of the
    images refused with it), read from the rule's text (RE2's syntax here is Python's too)."""
    spec = yaml.safe_load(crd.render())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    [rule] = [r["rule"] for r in spec["x-kubernetes-validations"] if "self.image" in r["rule"]]
    terms = re.findall(r"self\.implementation == '([^']+)' && self\.image\.matches\('([^']+)'\)", rule)
    assert len(terms) == 2, rule
    return any(impl == implementation and re.fullmatch(pattern, image) for impl, pattern in terms)


def test_our_start_script_stops_an_image_without_our_bookie_with_wrong_image(tmp_path: Path) -> None:
    log = tmp_path / "termination-log"
    run = subprocess.run(["sh", "-c", builders.PYTHON_START], capture_output=True, text=True, timeout=30,
                         env={"PATH": "/usr/bin:/bin", "BOOKIE_TERMINATION_LOG": str(log)})
    assert run.returncode == 1
    assert start_failures.classify(log.read_text()) == ("WrongImage", builders.WRONG_IMAGE_MESSAGE.split(": ", 1)[1])
    assert "WrongImage: the image has no bookie command" in run.stderr


def test_the_bookie_container_says_which_implementation_its_pod_is_built_for() -> None:
    for implementation, image in (("bookie-fleet", models.BOOKIE_IMAGE), (JAVA["implementation"], JAVA["image"])):
        spec = models.parse_spec({**ZK, "implementation": implementation, "image": image})
        sts = builders.statefulset(builders.Owner("bk", NS, "uid"), spec, 3)
        [bookie] = [c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "bookie"]
        assert {"name": "BOOKIE_FLEET_IMPLEMENTATION", "value": implementation} in bookie["env"]
    with pytest.raises(models.InvalidSpec, match="BOOKIE_FLEET_IMPLEMENTATION is set by the operator"):
        models.parse_spec({**ZK, "env": [{"name": "BOOKIE_FLEET_IMPLEMENTATION", "value": "apache-bookkeeper"}]})


async def test_a_switch_to_a_known_image_of_the_other_implementation_rolls_nothing() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(**JAVA))
    await w.tick()
    await w.tick()
    w.kube.patch_spec("bk", {"implementation": "bookie-fleet"})         # the image left Apache BookKeeper's
    for _ in range(3):
        await w.tick()
    assert pod_deletions(w) == [] and switch(w) == {}
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "InvalidSpec" and f"spec.image {JAVA['image']} runs " \
        "apache-bookkeeper's bookie, not spec.implementation bookie-fleet's" in degraded["message"]
    sts = w.kube.objects[("StatefulSet", NS, "bk")]
    labels = sts["spec"]["template"]["metadata"]["labels"]
    assert labels[builders.IMPLEMENTATION_LABEL] == "apache-bookkeeper", "the template is not changed either"


async def test_a_switch_to_an_unknown_image_without_our_bookie_fails_at_its_first_bookie_naming_the_image() -> None:
    w = World()
    w.kube.create_cluster("bk", cluster_spec(**JAVA))
    await w.tick()
    await w.tick()
    w.kube.patch_spec("bk", {"implementation": "bookie-fleet", "image": "registry.example.com/team/bk:7"})
    while pod_deletions(w) != ["bk-2"]:
        await w.tick()
    w.statefulsets.settle("bk")
    fail_to_start(w, 2, builders.WRONG_IMAGE_MESSAGE)
    for _ in range(3):
        await w.tick()
    state = switch(w)
    assert state["phase"] == "Failed" and state["message"].startswith("bk-2: WrongImage: the image has no bookie ")
    degraded = next(c for c in w.status["conditions"] if c["type"] == "Degraded")
    assert degraded["reason"] == "WrongImage"
    assert "spec.image registry.example.com/team/bk:7 does not run bookie-fleet's bookie" in degraded["message"]
    assert pod_deletions(w) == ["bk-2"] and implementations(w)[:2] == ["apache-bookkeeper"] * 2
