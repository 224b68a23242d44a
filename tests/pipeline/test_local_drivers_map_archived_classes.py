"""A local Spark driver started by a test maps its classes from the archive the test suite wrote for it
(tests/support/spark_jvm.py): the archive matches the driver's Java and classpath as spark-class starts it, so the
JVM maps it (``-Xshare:on`` makes one that cannot an error) and loads Spark's own classes from it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pyspark
from bookie_fleet import jvm_archives

from tests.support import spark_jvm
from tests.support.kube import wait_for

# The archive is written in the background when a pytest process finds none: on a cold machine it takes a minute
# or two beside the tests.
WRITTEN_WITHIN_S = 600


def _shared_archive() -> str | None:
    archive = spark_jvm.archive_path()
    assert archive is not None, "no archive for the local driver's classpath"
    return str(archive) if jvm_archives.use_options(archive) else None


def test_a_local_driver_maps_spark_from_the_suites_archive() -> None:
    assert os.environ.get(jvm_archives.ENV), "the test suite's JVM archives are off"
    archive = wait_for(_shared_archive, WRITTEN_WITHIN_S, interval=5, what="the local driver's class archive")
    assert Path(archive).parent == Path(os.environ[jvm_archives.ENV])
    spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
    options = " ".join([*spark_jvm.SPARK_TEST_JVM_OPTIONS, "-Xshare:on", f"-XX:SharedArchiveFile={archive}",
                        "-Xlog:class+load=info"])
    done = subprocess.run([str(spark_class), spark_jvm.DRIVER_MAIN, "--version"], capture_output=True, text=True,
                          env={**os.environ, "SPARK_SUBMIT_OPTS": options}, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert f"{spark_jvm.DRIVER_MAIN} source: shared objects file (top)" in done.stdout, done.stdout[-2000:]
