#!/usr/bin/env bash
# Apache Pulsar's 4.0 LTS line from hack/pulsar/pom.xml, as two classpaths beside pulsar.sh's newest one: the
# broker and client harness ($BOOKIE_FLEET_PULSAR_LTS_*, its compatibility test only), and the same line with
# Pulsar's load tools, pulsar-testclient ($BOOKIE_FLEET_PULSAR_PERF_*, bench/pulsar_e2e_bench.py only: the Maven
# repository serves pulsar-testclient for 4.0.x only).
# Run by scripts/bootstrap; can also be run alone (BOOKIE_FLEET_PARTS=pulsar-lts ./scripts/bootstrap).
set -euo pipefail
# shellcheck source=scripts/bootstrap.d/lib/maven-harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/maven-harness.sh"
assemble_maven_harness pulsar PulsarHarness.java BOOKIE_FLEET_PULSAR_LTS lts \
  -Dpulsar.version=4.0.8 -Dpulsar.fallback.version=4.0.7
assemble_maven_harness pulsar PulsarHarness.java BOOKIE_FLEET_PULSAR_PERF perf \
  -Dpulsar.version=4.0.8 -Dpulsar.fallback.version=4.0.7 -Dpulsar.testclient
