"""The CRD is generated from the pydantic models; the checked-in copies must be what the generator writes."""

from __future__ import annotations

import yaml
from bookie_operator import crd


def test_checked_in_crds_match_the_models() -> None:
    text = crd.render()
    for path in crd.OUTPUTS:
        assert path.read_text() == text, f"{path} is stale: run python -m bookie_operator.crd"


def test_the_schema_is_structural_with_status_and_scale_subresources() -> None:
    doc = yaml.safe_load(crd.render())
    version = doc["spec"]["versions"][0]
    assert version["subresources"]["scale"] == {"specReplicasPath": ".spec.replicas",
                                                "statusReplicasPath": ".status.replicas",
                                                "labelSelectorPath": ".status.labelSelector"}
    assert "status" in version["subresources"]
    text = yaml.safe_dump(doc)
    for forbidden in ("$ref", "anyOf", "allOf", "title:", "additionalProperties: false"):
        assert forbidden not in text
    columns = {c["name"] for c in version["additionalPrinterColumns"]}
    assert {"Replicas", "Ready", "Writable", "Status", "Age"} <= columns


def test_relations_are_cel_rules_whose_messages_name_the_fields() -> None:
    spec = yaml.safe_load(crd.render())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rules = {r["message"] for r in spec["x-kubernetes-validations"]}
    assert any("spec.replicas" in m and "spec.ensembleSize" in m for m in rules)
    disk = spec["properties"]["diskPolicy"]["x-kubernetes-validations"]
    assert disk[0]["rule"] == "self.writableLowWaterMark <= self.readOnlyHighWaterMark"
    schedule = spec["properties"]["compaction"]["properties"]["schedule"]
    assert schedule["x-kubernetes-validations"][0]["rule"].startswith("self.matches(r'")
    assert schedule["maxLength"] == 128


def test_config_overrides_are_typed_bookie_config_keys_without_the_operator_owned_ones() -> None:
    spec = yaml.safe_load(crd.render())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    config = spec["properties"]["config"]["properties"]
    assert config["diskUsageThreshold"] == {"type": "number", "description": config["diskUsageThreshold"]
                                            ["description"], "minimum": 0, "exclusiveMinimum": True,
                                            "maximum": 1, "exclusiveMaximum": True}
    assert config["journalSyncData"]["type"] == "boolean"
    for owned in ("zkServers", "bookieId", "journalDirectories", "httpServerPort", "gcWaitTime"):
        assert owned not in config
