"""Spark's JVMs started by tests compile with C1 alone, collect with the serial collector, and a local driver maps
the classes an earlier one archived.

The audits here are short jobs over megabytes on two cores, where C2's compiler threads cost more CPU than they
win back: with these options the pipeline tests take about a third less CPU. Every spark-submit and PySpark
gateway a test starts reads ``SPARK_SUBMIT_OPTS``, a standalone cluster's master and workers
``SPARK_DAEMON_JAVA_OPTS``; Spark on Kubernetes takes the same options from ``spec.audit.jvmOptions``. Benchmarks
started outside the test suite run Spark at its defaults; a value already in the environment wins.

A local driver (PySpark's gateway, a local ``bookie-audit run``) also maps the classes of an archive
(fleet/bookie_fleet/jvm_archives.py, where the test suite's archives are on): one small local job took 15 CPU-seconds
without it and 9 with it, measured here. Every driver reads the same variable, so no test's driver can be the one
that writes the archive (two writing one file would spoil it): when a pytest process finds no archive, it runs a
small job of its own in the background that writes it (``python -m tests.support.spark_jvm``, about 35 CPU-seconds
once per machine), and each test after that starts its drivers with the archive.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from bookie_fleet import jvm_archives

SPARK_TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")
DRIVER_MAIN = "org.apache.spark.deploy.SparkSubmit"
REPO = Path(__file__).resolve().parents[2]
# The archive's writer is given this long to finish at the end of the session before it is stopped.
TRAINING_GRACE_S = 120.0

_base_options = ""
_archive: Path | None = None  # where the drivers' archive is, or will be once written
_training: subprocess.Popen[bytes] | None = None
_archive_in_use = False


def _driver_java_and_jars() -> tuple[str, str] | None:
    """The java spark-class runs and the jars of the driver's classpath (PySpark's ``jars/``)."""
    try:
        import pyspark
    except ImportError:
        return None
    java = f"{os.environ['JAVA_HOME']}/bin/java" if os.environ.get("JAVA_HOME") else "java"
    return java, f"{Path(pyspark.__file__).parent / 'jars'}/*"


def archive_path() -> Path | None:
    """Where the local drivers' archive is, or will be once written; None when archives are off."""
    found = _driver_java_and_jars()
    return jvm_archives.archive_path(*found, DRIVER_MAIN) if found else None


@pytest.hookimpl(trylast=True)  # after tests/support/jvm_archives.py has turned the suite's archives on
def pytest_configure(config: pytest.Config) -> None:
    global _base_options, _archive, _training
    for variable in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
        os.environ.setdefault(variable, " ".join(SPARK_TEST_JVM_OPTIONS))
    _base_options = os.environ["SPARK_SUBMIT_OPTS"]
    _archive = archive_path()
    options = jvm_archives.options_for(_archive) if _archive else []
    if any(o.startswith("-XX:ArchiveClassesAtExit=") for o in options):
        env = {**os.environ, "SPARK_SUBMIT_OPTS": " ".join([_base_options, *options])}
        _training = subprocess.Popen([sys.executable, "-m", "tests.support.spark_jvm"], cwd=REPO, env=env,
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures start a driver
def pytest_runtest_setup(item: pytest.Item) -> None:
    global _archive_in_use
    if _archive_in_use or _archive is None:
        return
    options = jvm_archives.use_options(_archive)
    if options:
        os.environ["SPARK_SUBMIT_OPTS"] = " ".join([_base_options, *options])
        _archive_in_use = True


def pytest_unconfigure(config: pytest.Config) -> None:
    if _training is None:
        return
    try:
        _training.wait(TRAINING_GRACE_S)
    except subprocess.TimeoutExpired:
        os.killpg(_training.pid, 9)  # its JVM with it; an unfinished archive is never adopted
        _training.wait()


def _write_the_archive() -> None:
    """A small local job of the kind the audits run (a DataFrame, a shuffle), then the driver exits: the JVM writes
    its classes' archive as it exits."""
    sys.path.insert(0, str(REPO / "pipeline"))
    from bookie_audit.spark import build_session
    from pyspark import SparkContext

    spark = build_session("local[1]", app_name="jvm-archive", shuffle_partitions=2)
    spark.range(0, 10_000).selectExpr("id % 7 AS k").groupBy("k").count().collect()
    gateway = SparkContext._gateway
    assert gateway is not None
    driver = gateway.proc
    spark.stop()
    driver.stdin.close()  # the gateway's signal to exit
    driver.wait()


if __name__ == "__main__":
    _write_the_archive()
