#!/opt/venv/bin/python
"""Entry point of the audit image: Spark on Kubernetes' container contract, as Apache Spark's own image's
``entrypoint.sh`` implements it, for a Spark that is PySpark's distribution ($SPARK_HOME).

    driver ARGS...      spark-submit in client mode inside the driver pod (Spark's Kubernetes submission
                        starts the driver pod with these arguments), bound to the pod's address
    executor            KubernetesExecutorBackend with what the driver put in the executor pod's environment
    anything else       as given: ``bookie-audit run ...``, ``spark-submit --master k8s://... ...``

Spark passes an executor's JVM options as SPARK_JAVA_OPT_0, SPARK_JAVA_OPT_1, ... in order.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping


def java_opts(env: Mapping[str, str]) -> list[str]:
    numbered = sorted((int(k.rsplit("_", 1)[1]), v) for k, v in env.items()
                      if k.startswith("SPARK_JAVA_OPT_") and k.rsplit("_", 1)[1].isdigit())
    return [v for _, v in numbered]


def command(args: list[str], env: Mapping[str, str]) -> list[str]:
    home = env["SPARK_HOME"]
    if args[:1] == ["driver"]:
        bind = env.get("SPARK_DRIVER_BIND_ADDRESS", "")
        return [f"{home}/bin/spark-submit", "--conf", f"spark.driver.bindAddress={bind}",
                "--conf", f"spark.executorEnv.SPARK_DRIVER_POD_IP={bind}", "--deploy-mode", "client", *args[1:]]
    if args[:1] == ["executor"]:
        memory = env["SPARK_EXECUTOR_MEMORY"]
        classpath = ":".join(p for p in (env.get("SPARK_CLASSPATH", ""), f"{home}/jars/*") if p)
        return [f"{env.get('JAVA_HOME', '/usr')}/bin/java", *java_opts(env), f"-Xms{memory}", f"-Xmx{memory}",
                "-cp", classpath, "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
                "--driver-url", env["SPARK_DRIVER_URL"], "--executor-id", env["SPARK_EXECUTOR_ID"],
                "--cores", env["SPARK_EXECUTOR_CORES"], "--app-id", env["SPARK_APPLICATION_ID"],
                "--hostname", env["SPARK_EXECUTOR_POD_IP"],
                "--resourceProfileId", env.get("SPARK_RESOURCE_PROFILE_ID", "0"),
                "--podName", env.get("SPARK_EXECUTOR_POD_NAME", "")]
    return args


def main() -> None:
    args = sys.argv[1:] or ["bookie-audit", "--help"]
    cmd = command(args, os.environ)
    os.execvp(cmd[0], cmd)


if __name__ == "__main__":
    main()
