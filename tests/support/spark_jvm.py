"""Spark's JVMs started by tests compile with C1 alone and collect with the serial collector.

The audits here are short jobs over megabytes on two cores, where C2's compiler threads cost more CPU than they
win back: with these options the pipeline tests take about a third less CPU. Every spark-submit and PySpark
gateway a test starts reads ``SPARK_SUBMIT_OPTS``, a standalone cluster's master and workers
``SPARK_DAEMON_JAVA_OPTS``; Spark on Kubernetes takes the same options from ``spec.audit.jvmOptions``. Benchmarks
started outside the test suite run Spark at its defaults; a value already in the environment wins.
"""

from __future__ import annotations

import os

import pytest

SPARK_TEST_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


def pytest_configure(config: pytest.Config) -> None:
    for variable in ("SPARK_SUBMIT_OPTS", "SPARK_DAEMON_JAVA_OPTS"):
        os.environ.setdefault(variable, " ".join(SPARK_TEST_JVM_OPTIONS))
