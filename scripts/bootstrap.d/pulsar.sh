#!/usr/bin/env bash
# Apache Pulsar's broker and Java client for the Pulsar tests (tests/pulsar): the jars of hack/pulsar/pom.xml
# from Maven Central (about 300) and the client harness hack/pulsar/PulsarHarness.java compiled against them.
# Two classpaths: the newest line as the pom names it ($BOOKIE_FLEET_PULSAR_*, every Pulsar test and the
# playground), the 4.0 LTS line ($BOOKIE_FLEET_PULSAR_LTS_*, its compatibility test only), and the LTS line with
# Pulsar's load tools, pulsar-testclient ($BOOKIE_FLEET_PULSAR_PERF_*, bench/pulsar_e2e_bench.py only: the Maven
# repository serves pulsar-testclient for 4.0.x only).
# Run by scripts/bootstrap; can also be run alone.
set -euo pipefail
# shellcheck source=scripts/bootstrap.d/lib/maven-harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/maven-harness.sh"
assemble_maven_harness pulsar PulsarHarness.java BOOKIE_FLEET_PULSAR
assemble_maven_harness pulsar PulsarHarness.java BOOKIE_FLEET_PULSAR_LTS lts \
  -Dpulsar.version=4.0.8 -Dpulsar.fallback.version=4.0.7
assemble_maven_harness pulsar PulsarHarness.java BOOKIE_FLEET_PULSAR_PERF perf \
  -Dpulsar.version=4.0.8 -Dpulsar.fallback.version=4.0.7 -Dpulsar.testclient
