"""Every manifest in examples/ is a BookieCluster the operator accepts: parsed by the CRD's own model
(bookie_operator.models, the source of the CRD's schema), with the cluster-wide configuration it implies."""

from __future__ import annotations

from pathlib import Path

import pytest
from bookie_operator import builders, models

from tests.examples.conftest import example_paths, load

KINDS = {"minimal", "production", "apache-bookkeeper", "scheduled-compaction"}


def test_the_examples_a_user_starts_from_are_there() -> None:
    assert {p.stem for p in example_paths()} >= KINDS


@pytest.mark.parametrize("path", example_paths(), ids=lambda p: p.stem)
def test_example_parses_with_the_crd_model(path: Path) -> None:
    obj = load(path)
    assert obj["apiVersion"] == f"{models.GROUP}/{models.VERSION}" and obj["kind"] == models.KIND
    assert obj["metadata"]["name"] == path.stem, "an example's name is its file name (one per namespace)"
    spec = models.BookieClusterSpec.model_validate(obj["spec"])
    builders.bookie_config(spec)  # the configuration the bookies would get is valid too
    if spec.implementation == "bookie-fleet":
        assert spec.image == models.BookieClusterSpec.model_fields["image"].default


def test_examples_show_what_they_are_named_for() -> None:
    specs = {p.stem: models.BookieClusterSpec.model_validate(load(p)["spec"]) for p in example_paths()}
    production = specs["production"]
    assert production.resources.get("requests") and (production.affinity or {}).get("podAntiAffinity")
    assert production.storage.ledgers.count > 1 and production.replicas > production.ensemble_size
    assert specs["apache-bookkeeper"].implementation == "apache-bookkeeper"
    assert specs["apache-bookkeeper"].image.startswith("bookie-fleet/apache-bookkeeper:")
    compaction = specs["scheduled-compaction"]
    assert compaction.compaction.schedule and compaction.gc.window is not None
