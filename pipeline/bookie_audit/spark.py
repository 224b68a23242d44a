"""The SparkSession of the audit: local[*] by default, a standalone cluster with ``master=spark://...``."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

DEFAULT_MASTER = "local[*]"


def python_env() -> dict[str, str]:
    """Environment that makes Spark's Python workers run this interpreter (with bookie and bookie_audit)."""
    return {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}


def build_session(master: str | None = None, *, app_name: str = "bookie-audit",
                  shuffle_partitions: int | None = None, conf: Mapping[str, str] | None = None) -> Any:
    """A SparkSession with the ``entrylog`` data source registered.

    Spark's own UI is off and shuffles are small unless ``conf`` says otherwise: an audit of a few
    bookies must not pay for 200 shuffle partitions.
    """
    os.environ.update(python_env())
    from pyspark.sql import SparkSession

    from bookie_audit.datasource import EntryLogDataSource

    builder = SparkSession.builder
    master = master or os.environ.get("BOOKIE_AUDIT_MASTER")
    if master or "PYSPARK_GATEWAY_PORT" not in os.environ:
        # Under spark-submit (the JVM started this Python) the master comes from spark-submit's --master.
        builder = builder.master(master or DEFAULT_MASTER)
    builder = (builder.appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.pyspark.driver.python", sys.executable)
               .config("spark.sql.shuffle.partitions", str(shuffle_partitions or 8))
               .config("spark.sql.adaptive.enabled", "true")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.executorEnv.PYSPARK_PYTHON", sys.executable))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(EntryLogDataSource)
    return spark
