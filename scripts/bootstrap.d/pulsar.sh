#!/usr/bin/env bash
# Apache Pulsar's broker and Java client, the newest line as hack/pulsar/pom.xml names it: the jars from Maven
# Central (about 300) and the client harness hack/pulsar/PulsarHarness.java compiled against them
# ($BOOKIE_FLEET_PULSAR_*: every Pulsar test and the playground). The older line and Pulsar's load tools are
# pulsar-lts.sh's, a part of their own so that the playground (BOOKIE_FLEET_PARTS="... pulsar") does not wait
# for classpaths only the tests and benchmarks use.
# Run by scripts/bootstrap; can also be run alone.
set -euo pipefail
# shellcheck source=scripts/bootstrap.d/lib/maven-harness.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/maven-harness.sh"
assemble_maven_harness pulsar PulsarHarness.java BOOKIE_FLEET_PULSAR
