"""The examples' tests use the operator tests' fixtures: the CRD installed, the operator run as a process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.operator.conftest import bookie_crd, operator_factory  # noqa: F401  (fixtures)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example_paths() -> list[Path]:
    paths = sorted(EXAMPLES.glob("*.yaml"))
    assert paths, f"no examples in {EXAMPLES}"
    return paths


def load(path: Path) -> dict[str, Any]:
    obj = yaml.safe_load(path.read_text())
    assert isinstance(obj, dict), f"{path.name} is not one YAML object"
    return obj
