"""The examples' tests use the operator tests' fixtures: the CRD installed, the operator run as a process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.operator.conftest import bookie_crd, operator_factory, zookeeper  # noqa: F401  (fixtures)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


# The playground's example needs the small ledger disks the playground makes (storage class
# playground-small): it reaches Ready in tests/fleet/test_playground_kubernetes_story.py.
NEEDS_PLAYGROUND_DISKS = {"playground"}


def example_paths(*, standalone: bool = False) -> list[Path]:
    """Every example; ``standalone``: those that reach Ready on any cluster with a default storage class."""
    paths = sorted(p for p in EXAMPLES.glob("*.yaml") if not (standalone and p.stem in NEEDS_PLAYGROUND_DISKS))
    assert paths, f"no examples in {EXAMPLES}"
    return paths


def load(path: Path) -> dict[str, Any]:
    obj = yaml.safe_load(path.read_text())
    assert isinstance(obj, dict), f"{path.name} is not one YAML object"
    return obj
