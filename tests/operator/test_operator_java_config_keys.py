"""spec.config of a Java-bookie cluster is judged against Apache BookKeeper's own key set, generated from its
jars (the String constants of its configuration classes) into a checked-in list that must stay current."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from bookie_operator import java_config
from bookie_operator.models import InvalidSpec

from tests.operator.helpers import spec

JAVA = {"implementation": "apache-bookkeeper", "image": "bookie-fleet/apache-bookkeeper:4.18.0"}


@pytest.mark.parametrize("lib_env", ["BOOKIE_FLEET_BK_LIB", "BOOKIE_FLEET_BK_COMPAT_LIB"])
def test_the_checked_in_key_list_holds_every_key_of_both_versions_jars(lib_env: str) -> None:
    """The tests' pinned Apache BookKeeper version (4.17.3) and the Java bookie image's (4.18.0, the same jars:
    tests/images/test_images_java_classpath_lock.py)."""
    lib = Path(os.environ[lib_env])
    from_jars = java_config.keys_from_jars(lib)
    assert {"dbStorage_writeCacheMaxSizeMb", "numAddWorkerThreads", "ensemblePlacementPolicy",
            "httpServerClass", "journalDirectories"} <= from_jars
    assert from_jars <= java_config.apache_bookkeeper_keys()


def test_a_java_bookie_cluster_accepts_a_key_new_in_4_18() -> None:
    s = spec(**JAVA, config={"serverTcpKeepIdle": 30, "bookieConnectionErrorQuarantineEnabled": "true"})
    assert s.config["serverTcpKeepIdle"] == 30


def test_a_java_bookie_cluster_accepts_a_java_only_key_and_names_a_typo() -> None:
    s = spec(**JAVA, config={"numAddWorkerThreads": 4, "dbStorage_rocksDB_blockCacheSize": 1 << 28})
    assert s.config["numAddWorkerThreads"] == 4
    with pytest.raises(InvalidSpec) as exc:
        spec(**JAVA, config={"numAddWorkerThread": 4})
    assert str(exc.value) == ("spec.config.numAddWorkerThread: not an Apache BookKeeper 4.18.0 configuration key "
                              "(did you mean numAddWorkerThreads?)")


def test_operator_owned_keys_are_refused_for_java_bookies_too() -> None:
    with pytest.raises(InvalidSpec, match=r"spec\.config\.journalDirectories: owned by the operator"):
        spec(**JAVA, config={"journalDirectories": "/elsewhere"})


def test_our_bookie_still_refuses_java_only_keys() -> None:
    with pytest.raises(InvalidSpec, match=r"spec\.config\.numIOThreads: unknown bookie configuration key"):
        spec(config={"numIOThreads": 4})
