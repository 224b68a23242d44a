"""Invalid BookieCluster specs are refused with messages that name the field (operator side; the API server
checks the same rules through the generated schema, see tests/operator/test_operator_on_kubernetes_*)."""

from __future__ import annotations

from typing import Any

import pytest
from bookie_operator.models import InvalidSpec, parse_spec

from tests.operator.helpers import spec

ZK = {"metadataService": {"zkServers": "zk:2181"}}


def refused(**fields: object) -> str:
    with pytest.raises(InvalidSpec) as err:
        parse_spec({**ZK, **fields})
    return str(err.value)


def test_defaults_make_a_complete_spec() -> None:
    s = spec()
    assert (s.replicas, s.ensemble_size, s.implementation) == (3, 3, "bookie-fleet")
    assert s.disk_policy.writable_low_water_mark <= s.disk_policy.read_only_high_water_mark
    assert s.metadata_service.uri == "zk+hierarchical://zk-0.zk:2181/ledgers"
    assert s.scale_down.pvc_policy == "Delete"


def test_low_water_mark_above_high_water_mark_is_refused() -> None:
    msg = refused(diskPolicy={"readOnlyHighWaterMark": 0.7, "writableLowWaterMark": 0.8})
    assert "spec.diskPolicy.writableLowWaterMark must be <= spec.diskPolicy.readOnlyHighWaterMark" in msg


def test_thresholds_out_of_range_name_the_field() -> None:
    assert "spec.diskPolicy.readOnlyHighWaterMark" in refused(diskPolicy={"readOnlyHighWaterMark": 1.2})
    assert "spec.gc.majorCompactionThreshold" in refused(gc={"majorCompactionThreshold": -0.1})


def test_replicas_below_ensemble_size_are_refused() -> None:
    assert "spec.replicas must be >= spec.ensembleSize" in refused(replicas=2, ensembleSize=3)


@pytest.mark.parametrize("schedule", ["61 * * * *", "* * *", "every day", "0 0 32 * *", "@sometimes"])
def test_malformed_cron_is_refused(schedule: str) -> None:
    assert "spec.compaction.schedule must be a 5-field cron expression" in refused(compaction={"schedule": schedule})


@pytest.mark.parametrize("schedule", ["30 2 * * *", "*/5 * * * *", "0 0 * * sun", "0 3 1,15 jan-jun *", "@daily"])
def test_well_formed_cron_is_accepted(schedule: str) -> None:
    assert parse_spec({**ZK, "compaction": {"schedule": schedule}}).compaction.schedule == schedule


def test_config_overrides_are_validated_by_the_bookie_config_model() -> None:
    assert "spec.config.noSuchKey: unknown bookie configuration key" in refused(config={"noSuchKey": 1})
    assert "spec.config.diskUsageThreshold" in refused(config={"diskUsageThreshold": 1.5})
    # A relation between keys, checked by bookie.config.BookieConfig itself.
    assert "diskUsageLwmThreshold must be <= diskUsageThreshold" in refused(
        config={"diskUsageLwmThreshold": 0.97, "diskUsageThreshold": 0.9})
    assert spec(config={"journalSyncData": False, "flushInterval": 500}).config["flushInterval"] == 500


def test_operator_owned_keys_cannot_be_overridden() -> None:
    msg = refused(config={"zkServers": "elsewhere:2181", "gcWaitTime": 1000})
    assert "spec.config.zkServers: owned by the operator (set spec.metadataService.zkServers instead)" in msg
    assert "spec.config.gcWaitTime: owned by the operator (set spec.gc.gcWaitTimeSeconds instead)" in msg


def test_minor_compaction_must_stay_below_major() -> None:
    assert "spec.gc.minorCompactionThreshold must be < spec.gc.majorCompactionThreshold" in refused(
        gc={"minorCompactionThreshold": 0.9, "majorCompactionThreshold": 0.8})


def test_unknown_fields_and_bad_quantities_are_refused() -> None:
    assert "spec.replicaz" in refused(replicaz=3)
    assert "spec.storage.journal.size" in refused(storage={"journal": {"size": "ten gigs"}})
    assert "spec.metadataService.zkServers" in parse_error_for({"metadataService": {"zkServers": "no port"}})


def parse_error_for(body: dict[str, object]) -> str:
    with pytest.raises(InvalidSpec) as err:
        parse_spec(body)
    return str(err.value)


def test_reclaiming_volumes_needs_an_instance_id() -> None:
    assert spec().storage.reclaim_volumes_of_instance is None
    assert "spec.storage.reclaimVolumesOfInstance" in refused(storage={"reclaimVolumesOfInstance": "yes"})
    assert "spec.storage.reclaimVolumesOfInstance" in refused(storage={"reclaimVolumesOfInstance": True})


@pytest.mark.parametrize(("overrides", "message"), [
    ({"jvmOptions": ["-Xmx1g"]}, "spec.jvmOptions: only for implementation apache-bookkeeper"),
    ({"env": [{"name": "POD_IP", "value": "1.2.3.4"}]}, "spec.env[0].name: POD_IP is set by the operator"),
    ({"implementation": "apache-bookkeeper", "env": [{"name": "BK_journalDirectories", "value": "/x"}]},
     "spec.env[0].name: BK_journalDirectories is set by the operator (BK_* variables are configuration keys"),
    ({"env": [{"name": "A", "value": "1", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]},
     "spec.env[0]: value and valueFrom are exclusive"),
    ({"extraVolumes": [{"name": "ledgers-0", "emptyDir": {}}]},
     "spec.extraVolumes[0].name: ledgers-0 is the operator's"),
    ({"extraVolumeMounts": [{"name": "nope", "mountPath": "/x"}]},
     "spec.extraVolumeMounts[0].name: nope is not in spec.extraVolumes"),
    ({"extraVolumes": [{"name": "v", "emptyDir": {}}], "extraVolumeMounts": [{"name": "v", "mountPath": "/bookie/x"}]},
     "spec.extraVolumeMounts[0].mountPath: /bookie/x is under the bookie's own directories"),
    ({"sidecars": [{"name": "bookie", "image": "x"}]}, "spec.sidecars[0].name: bookie is taken"),
    ({"serviceAccountName": "Not_A_Name"}, "spec.serviceAccountName"),
])
def test_escape_hatches_cannot_replace_what_the_operator_puts_in_the_pod(overrides: dict[str, Any],
                                                                       message: str) -> None:
    with pytest.raises(InvalidSpec) as exc:
        spec(**overrides)
    assert message in str(exc.value)
