"""The audit image's entry point speaks Spark on Kubernetes' container contract: ``driver`` runs spark-submit in
client mode bound to the pod's address, ``executor`` the executor backend with what the driver put in the
executor pod's environment (JVM options in SPARK_JAVA_OPT_<n> order), anything else runs as given."""

from __future__ import annotations

from types import ModuleType


def test_driver_executor_and_other_commands(audit_entrypoint: ModuleType) -> None:
    ep = audit_entrypoint
    env = {"SPARK_HOME": "/spark", "JAVA_HOME": "/java", "SPARK_DRIVER_BIND_ADDRESS": "10.1.0.7",
           "SPARK_EXECUTOR_MEMORY": "1g", "SPARK_DRIVER_URL": "spark://CoarseGrainedScheduler@d.ns.svc:7078",
           "SPARK_EXECUTOR_ID": "2", "SPARK_EXECUTOR_CORES": "1", "SPARK_APPLICATION_ID": "spark-1",
           "SPARK_EXECUTOR_POD_IP": "10.1.0.9", "SPARK_RESOURCE_PROFILE_ID": "0", "SPARK_EXECUTOR_POD_NAME": "e-2",
           "SPARK_JAVA_OPT_10": "-Dten", "SPARK_JAVA_OPT_2": "-Dtwo", "SPARK_JAVA_OPT_0": "-Dzero"}
    assert ep.command(["driver", "--properties-file", "/p", "app.py", "run"], env) == [
        "/spark/bin/spark-submit", "--conf", "spark.driver.bindAddress=10.1.0.7",
        "--conf", "spark.executorEnv.SPARK_DRIVER_POD_IP=10.1.0.7", "--deploy-mode", "client",
        "--properties-file", "/p", "app.py", "run"]
    executor = ep.command(["executor"], env)
    assert executor[:7] == ["/java/bin/java", "-Dzero", "-Dtwo", "-Dten", "-Xms1g", "-Xmx1g", "-cp"]
    assert executor[7] == "/spark/jars/*"
    assert executor[8:] == ["org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend",
                            "--driver-url", env["SPARK_DRIVER_URL"], "--executor-id", "2", "--cores", "1",
                            "--app-id", "spark-1", "--hostname", "10.1.0.9", "--resourceProfileId", "0",
                            "--podName", "e-2"]
    assert ep.command(["bookie-audit", "run"], env) == ["bookie-audit", "run"]
