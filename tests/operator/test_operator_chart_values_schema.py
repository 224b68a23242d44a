"""The chart's values are checked by a values.schema.json generated from one pydantic model: the checked-in
schema (and Chart.yaml's Artifact Hub annotations) are what the generator writes, values.yaml is the model's
defaults and passes the schema, and `helm template` refuses a misspelt or mistyped value naming its path."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from bookie_operator import chart_values, models
from bookie_operator.chart_values import ChartValues
from localkube.binaries import find_binary

CHART = chart_values.CHART


def helm_template(*args: str, values: Path | None = None) -> subprocess.CompletedProcess[str]:
    extra = ["-f", str(values)] if values is not None else []
    return subprocess.run([str(find_binary("helm")), "template", "bkop", str(CHART), *extra, *args],
                          capture_output=True, text=True, timeout=120)


def test_the_checked_in_schema_and_annotations_are_what_the_generator_writes() -> None:
    assert chart_values.main(["--check"]) == 0, "run python -m bookie_operator.chart_values"
    assert (CHART / "values.schema.json").read_text() == chart_values.render()


def test_values_yaml_holds_the_models_defaults_and_passes_the_schema() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert ChartValues.model_validate(values).model_dump(by_alias=True) == values
    assert ChartValues().model_dump(by_alias=True) == values
    rendered = helm_template()              # helm checks the values against values.schema.json first
    assert rendered.returncode == 0, rendered.stderr
    assert any(d and d["kind"] == "Deployment" for d in yaml.safe_load_all(rendered.stdout))


@pytest.mark.parametrize(("args", "path", "says"), [
    (["--set", "image.tagg=1.0"], "/image", "tagg"),                          # misspelt nested key
    (["--set", "monitoring.podMonitor.enable=true"], "/monitoring/podMonitor", "enable"),
    (["--set", "replicaCount=two"], "/replicaCount", "integer"),              # mistyped
    (["--set", "logFormat=xml"], "/logFormat", "one of"),
    (["--set", "metrics.port=70000"], "/metrics/port", "maximum"),
    (["--set", "watchNamespaces={Team_A}"], "/watchNamespaces/0", "Team_A"),
    (["--set", "monitoring.alerts.diskFor=5 minutes"], "/monitoring/alerts/diskFor", "5 minutes"),
    (["--set", "clusterWide=true", "--set", "watchNamespaces={team-a}"], "/clusterWide", "must be false"),
], ids=["misspelt-nested", "misspelt-deep", "string-for-integer", "enum", "range", "namespace", "duration",
        "cluster-wide-and-listed"])
def test_a_misspelt_or_mistyped_value_fails_naming_its_path(args: list[str], path: str, says: str) -> None:
    result = helm_template(*args)
    assert result.returncode != 0, result.stdout[:500]
    assert f"'{path}'" in result.stderr and says in result.stderr, result.stderr


def test_the_model_refuses_cluster_wide_with_listed_namespaces_as_the_schema_does() -> None:
    with pytest.raises(ValueError, match="leave watchNamespaces empty"):
        ChartValues.model_validate({"clusterWide": True, "watchNamespaces": ["team-a"]})
    assert ChartValues.model_validate({"clusterWide": True}).cluster_wide


def test_a_misspelt_top_level_key_in_a_values_file_fails(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("replicaCont: 3\n")
    result = helm_template(values=values)
    assert result.returncode != 0 and "replicaCont" in result.stderr, result.stderr


def test_a_parent_charts_global_values_are_allowed() -> None:
    result = helm_template("--set", "global.imageRegistry=registry.example")
    assert result.returncode == 0, result.stderr


def test_artifact_hub_annotations_name_the_image_the_crd_the_license_and_valid_examples() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    notes = {key: yaml.safe_load(value) for key, value in chart["annotations"].items()}
    assert notes["artifacthub.io/images"] == [{"name": "operator",
                                                "image": f"bookie-fleet/operator:{chart['appVersion']}"}]
    [crd] = notes["artifacthub.io/crds"]
    assert (crd["kind"], crd["version"]) == (models.KIND, models.VERSION)
    examples = notes["artifacthub.io/crdsExamples"]
    assert {e["metadata"]["name"] for e in examples} == {"minimal", "production", "apache-bookkeeper",
                                                          "scheduled-compaction"}
    for example in examples:
        assert example["apiVersion"] == f"{models.GROUP}/{models.VERSION}"
        models.parse_spec(example["spec"])
    # An SPDX expression (Artifact Hub shows it as the package's license), the one pyproject.toml states.
    project = tomllib.loads((CHART.parents[1] / "pyproject.toml").read_text())["project"]
    assert notes["artifacthub.io/license"] == project["license"] == "Apache-2.0"
