#!/usr/bin/env bash
# Hadoop's MiniDFSCluster for the storage audit's HDFS tests (tests/support/hdfs.py): the jars of
# hack/hadoop/pom.xml from Maven Central and the launcher hack/hadoop/MiniHdfs.java compiled against them.
# Run by scripts/bootstrap; can also be run alone.
set -euo pipefail
# shellcheck source=scripts/bootstrap.d/lib/maven-harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/maven-harness.sh"
assemble_maven_harness hadoop MiniHdfs.java BOOKIE_FLEET_HADOOP
