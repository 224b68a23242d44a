"""The images' sizes: the bookie image holds its base, its runtime wheels and the bookie, not the
development set (PySpark, mypy, ...). Sizes are uncompressed layer bytes; docs/images.md records them."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

from tests.support import oci

REPO = Path(__file__).resolve().parents[2]
MB = 1_000_000


def installed_size(lock: Path) -> int:
    """Bytes the lock's distributions take once installed (their RECORD), from the development environment,
    which has the same pins."""
    total = 0
    for line in lock.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name = re.split(r"==", line)[0]
        for file in importlib.metadata.distribution(name).files or []:
            total += file.size or 0
    return total


def test_bookie_image_is_its_base_plus_its_wheels(images: dict[str, oci.Image]) -> None:
    layers = images["bookie"].layer_sizes()
    base = layers[0]  # the base image is one layer (the debootstrap root filesystem)
    wheels = installed_size(REPO / "requirements" / "bookie.txt")
    total = sum(layers)
    print(f"bookie image {total / MB:.0f} MB: base {base / MB:.0f} MB, runtime wheels installed "
          f"{wheels / MB:.0f} MB, the rest {(total - base - wheels) / MB:.1f} MB")
    assert total <= 1.5 * (base + wheels), f"bookie image {total / MB:.0f} MB > 1.5 x ({base / MB:.0f} + " \
                                           f"{wheels / MB:.0f}) MB"
    assert total < 300 * MB


def test_every_image_has_a_bounded_size(images: dict[str, oci.Image]) -> None:
    bounds = {"bookie": 300, "operator": 300, "apache-bookkeeper": 600, "audit": 1400}
    sizes = {role: sum(img.layer_sizes()) / MB for role, img in images.items()}
    print({role: f"{size:.0f} MB" for role, size in sizes.items()})
    over = {role: size for role, size in sizes.items() if size > bounds[role]}
    assert not over, f"images over their bound (MB): {over}"
