"""Pure: pods' termination messages -> which bookies cannot start and why, the Degraded reason naming them and
what to do, and one Event per new reason (not per tick)."""

from __future__ import annotations

from typing import Any

from bookie_operator import builders
from bookie_operator.decisions import start_failures as sf
from bookie_operator.models import BookieStatus, StartFailureStatus

from tests.operator.helpers import spec

OLD, NEW = "282f0a6e-old", "6d0e9b1c-new"
MISMATCH = (f"CookieMismatch: cookie check failed: /bookie/journal-0/current/VERSION: cookie mismatch (instance id "
            f"'{NEW}' != '{OLD}'): expected [...] but found [...] (foreign or wiped directory, or changed bookie id)")


def pod(name: str, message: str | None, *, ready: bool = False, exit_code: int = 1, current: bool = False,
        restarts: int = 3) -> dict[str, Any]:
    term: dict[str, Any] = {"exitCode": exit_code, "reason": "Error", "finishedAt": "2026-11-22T11:59:00Z"}
    if message is not None:
        term["message"] = message
    status: dict[str, Any] = {"name": "bookie", "ready": ready, "restartCount": restarts,
                              "state": {"waiting": {"reason": "CrashLoopBackOff"}}, "lastState": {"terminated": term}}
    if current:
        status["state"], status["lastState"] = {"terminated": term}, {}
    return {"metadata": {"name": name}, "status": {"containerStatuses": [status]}}


def test_our_bookies_reason_prefix_is_the_reason() -> None:
    assert sf.classify("DiskFull: directory /bookie/journal-0: no space left") == \
        ("DiskFull", "directory /bookie/journal-0: no space left")
    assert sf.classify(MISMATCH)[0] == "CookieMismatch"
    assert sf.classify("InvalidConfig: invalid bookie configuration in x:\n  a: b")[0] == "InvalidConfig"
    assert sf.classify("IncompatibleDisk: /bookie/ledgers-0 holds entry logs but no RocksDB index")[0] == \
        "IncompatibleDisk"


def test_every_reason_the_bookie_writes_is_one_the_operator_reads() -> None:
    from bookie import termination

    # ... and the one of the Java bookie image's entrypoint (hack/apache-bookkeeper/entrypoint.py)
    assert set(sf.REASONS) == set(termination.REASONS) | {sf.UNSUPPORTED_VERSION}


def test_unknown_prefixes_and_java_logs() -> None:
    assert sf.classify("Traceback (most recent call last): ...") == \
        ("StartupFailed", "Traceback (most recent call last): ...")
    assert sf.classify("Nonsense: not one of ours")[0] == "StartupFailed"
    java = ("ERROR Failed to start bookie\norg.apache.bookkeeper.bookie.BookieException$InvalidCookieException: "
            "Cookie [4\nbookieHost: ...] is not matching with [4\nbookieHost: ...]")
    assert sf.classify(java) == ("CookieMismatch", "org.apache.bookkeeper.bookie.BookieException$"
                                                   "InvalidCookieException: Cookie [4")
    assert sf.classify("INFO starting\nERROR boom\nRuntimeError: it broke\n") == \
        ("StartupFailed", "RuntimeError: it broke")
    assert sf.classify("java.io.IOException: No space left on device")[0] == "DiskFull"


def test_a_failing_device_is_told_from_a_cookie_mismatch() -> None:
    ours = ("DeviceError: cookie /bookie/ledgers-0/current/VERSION: its device answers I/O errors (Input/output "
            "error): the disk or volume under it is failing; replace it")
    assert sf.classify(ours)[0] == "DeviceError"
    # The end of Apache BookKeeper 4.17.3's log when its ledger device fails the read of its cookie.
    java = ("2026-12-01T05:12:11,518 ERROR [main] Main - Failed to build bookie server\n"
            "org.apache.bookkeeper.bookie.BookieException$InvalidCookieException: java.io.IOException: Input/output "
            "error\n\tat org.apache.bookkeeper.bookie.LegacyCookieValidation.checkCookies(LegacyCookieValidation.java:"
            "131)\nCaused by: java.io.IOException: Input/output error\n")
    assert sf.classify(java) == ("DeviceError", "org.apache.bookkeeper.bookie.BookieException$InvalidCookieException: "
                                                "java.io.IOException: Input/output error")
    assert sf.REASONS.index("DeviceError") < sf.REASONS.index("CookieMismatch")   # it leads Degraded


def test_an_unknown_java_failure_is_told_by_its_deepest_cause_not_a_stack_frame() -> None:
    # The end of Apache BookKeeper 4.17.3's log when its ledgers index's MANIFEST is damaged.
    java = ("ERROR [main] Main - Failed to build bookie server\njava.io.IOException: Error open RocksDB database\n"
            "\tat org.apache.bookkeeper.server.Main.main(Main.java:199) ~[bookkeeper-server-4.17.3.jar:4.17.3]\n"
            "Caused by: org.rocksdb.RocksDBException: checksum mismatch in file /bk/ledgers/current/ledgers/"
            "MANIFEST-000005\n\tat org.rocksdb.RocksDB.open(Native Method) ~[rocksdbjni-7.10.2.jar:?]\n"
            "\t... 12 more\n")
    assert sf.classify(java) == ("StartupFailed", "Caused by: org.rocksdb.RocksDBException: checksum mismatch in "
                                                  "file /bk/ledgers/current/ledgers/MANIFEST-000005")
    assert sf.classify("\tat a.B.c(B.java:1)\n\t... 3 more") == ("StartupFailed", "... 3 more")   # nothing else


def test_instance_ids_of_a_mismatch() -> None:
    assert sf.instance_ids(MISMATCH) == (NEW, OLD)
    assert sf.instance_ids("cookie mismatch (instance id 'a' != None)") == ("a", None)
    assert sf.instance_ids("cookie mismatch (bookie id 'a:1' != 'b:1')") is None
    java = "BookieException$InvalidCookieException: instanceId c9ef-01 is not matching with 3bf5-02"
    assert sf.instance_ids(java) == ("c9ef-01", "3bf5-02")


def test_only_failed_runs_with_a_message_of_pods_not_ready() -> None:
    pods = [pod("bk-0", MISMATCH), pod("bk-1", MISMATCH, ready=True), pod("bk-2", None),
            pod("bk-3", "DiskFull: x", exit_code=0), pod("bk-4", "DiskFull: full", current=True),
            pod("other-5", MISMATCH)]
    failures = sf.observe("bk", pods)
    assert sorted(failures) == [0, 4]
    assert failures[0].reason == "CookieMismatch" and failures[0].instance_ids == (NEW, OLD)
    assert (failures[4].reason, failures[4].message, failures[4].restart_count) == ("DiskFull", "full", 3)


def test_cookie_mismatch_between_instances_names_bookies_ids_claims_and_both_fixes() -> None:
    failures = sf.observe("bk", [pod(f"bk-{i}", MISMATCH) for i in range(3)])
    found = sf.degraded(failures, "bk", spec(), NEW)
    assert found is not None and found.reason == "CookieMismatch"
    assert found.message.startswith("bk-0, bk-1, bk-2 cannot start (CookieMismatch)")
    assert f"instance '{OLD}'" in found.message and f"is instance '{NEW}'" in found.message
    assert "journal-0-bk-0, ledgers-0-bk-0, journal-0-bk-1" in found.message
    assert "point spec.metadataService at the metadata service of instance" in found.message


def test_cookie_mismatch_names_the_claims_of_the_layout_the_cluster_uses() -> None:
    failures = sf.observe("pulsar-bookie", [pod("pulsar-bookie-2", MISMATCH)])
    adopted = builders.Layout("pulsar-bookie", "pulsar-bookie-client",
                              (builders.Volume("pulsar-bookie-journal", "/pulsar/data/bookkeeper/journal", "10Gi"),),
                              (builders.Volume("pulsar-bookie-ledgers", "/pulsar/data/bookkeeper/ledgers", "50Gi"),))
    found = sf.degraded(failures, "pulsar-bookie", spec(), NEW, adopted)
    assert found is not None
    assert "delete the claims pulsar-bookie-journal-pulsar-bookie-2, pulsar-bookie-ledgers-pulsar-bookie-2 and " \
        "then the pods" in found.message, found.message


def test_the_most_specific_reason_leads_and_every_bookie_is_named() -> None:
    failures = sf.observe("bk", [pod("bk-0", "MetadataUnreachable: zk down"),
                                 pod("bk-1", "DirectoryNotWritable: directory /bookie/ledgers-0 is not writable")])
    found = sf.degraded(failures, "bk", spec(), None)
    assert found is not None and found.reason == "DirectoryNotWritable"
    assert found.message.index("bk-1 cannot start (DirectoryNotWritable)") < \
        found.message.index("bk-0 cannot start (MetadataUnreachable)")
    assert sf.degraded({}, "bk", spec(), None) is None


def test_one_event_per_new_reason_and_since_kept_while_it_lasts() -> None:
    failures = sf.observe("bk", [pod("bk-0", MISMATCH), pod("bk-1", "DiskFull: full")])
    earlier = StartFailureStatus(reason="CookieMismatch", message="m", since="2026-11-22T10:00:00Z")
    previous = [BookieStatus(pod="bk-0", ordinal=0, bookie_id="b0", start_failure=earlier),
                BookieStatus(pod="bk-1", ordinal=1, bookie_id="b1",
                             start_failure=StartFailureStatus(reason="InvalidConfig", message="m", since="x"))]
    assert [f.pod for f in sf.transitions(failures, previous)] == ["bk-1"]
    assert [f.pod for f in sf.transitions(failures, [])] == ["bk-0", "bk-1"]
    assert sf.status_of(failures[0], previous[0], "now").since == "2026-11-22T10:00:00Z"
    assert sf.status_of(failures[1], previous[1], "now").since == "2026-11-22T11:59:00Z"


def test_event_message_puts_the_instance_ids_first() -> None:
    failure = sf.observe("bk", [pod("bk-0", MISMATCH)])[0]
    text = sf.event_message(failure)
    assert text.startswith(f"bk-0 cannot start: its volumes hold a cookie of BookKeeper instance '{OLD}', "
                           f"the metadata service is instance '{NEW}'")


def test_volumes_are_reclaimed_only_for_the_instance_the_spec_names() -> None:
    failures = sf.observe("bk", [pod("bk-0", MISMATCH), pod("bk-1", "DiskFull: full"),
                                 pod("bk-2", MISMATCH.replace(OLD, "another-one"))])
    assert sf.to_reclaim(failures, spec()) == [], "never by default"
    uuid = "0f1e2d3c-4b5a-6978-8695-a4b3c2d1e0f9"
    named = MISMATCH.replace(OLD, uuid)
    failures = sf.observe("bk", [pod("bk-0", named), pod("bk-1", "DiskFull: full"),
                                 pod("bk-2", MISMATCH)])
    assert [f.pod for f in sf.to_reclaim(failures, spec(storage={"reclaimVolumesOfInstance": uuid}))] == ["bk-0"]
    going = sf.observe("bk", [{**pod("bk-0", named), "metadata": {"name": "bk-0", "deletionTimestamp": "t"}}])
    assert sf.to_reclaim(going, spec(storage={"reclaimVolumesOfInstance": uuid})) == []
    own = sf.observe("bk", [pod("bk-0", f"CookieMismatch: cookie mismatch (instance id '{uuid}' != '{uuid}')")])
    assert sf.to_reclaim(own, spec(storage={"reclaimVolumesOfInstance": uuid})) == [], "never its own instance"
