"""Makes this project's packages importable in an image's virtualenv, with their console scripts.

    /opt/venv/bin/python install-packages.py --pyproject /opt/bookie-fleet/pyproject.toml \
        --lib /opt/bookie-fleet/lib [--scripts-of bookie]

The Dockerfiles COPY only the packages an image runs into one directory (``lib``), so ``pip install .``
(which installs every package of the repository and every console script) is not used. This writes what pip
would have: a ``.pth`` naming ``lib`` in the virtualenv's site-packages, and a script in the virtualenv's
``bin`` for each of pyproject.toml's ``[project.scripts]`` whose module is in a ``--scripts-of`` package. It
also compiles the sources, since the images run with PYTHONDONTWRITEBYTECODE on a read-only root.
"""

from __future__ import annotations

import argparse
import compileall
import sys
import sysconfig
import tomllib
from pathlib import Path

SCRIPT = """#!{python}
import sys
from {module} import {function}
sys.exit({function}())
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pyproject", type=Path, required=True)
    parser.add_argument("--lib", type=Path, required=True, help="the directory holding the copied packages")
    parser.add_argument("--scripts-of", action="append", default=[], metavar="PACKAGE",
                        help="write the console scripts of this package (repeatable)")
    args = parser.parse_args(argv)
    missing = [p for p in args.scripts_of if not (args.lib / p / "__init__.py").is_file()]
    if missing:
        parser.error(f"{', '.join(missing)} not found in {args.lib}")
    site = Path(sysconfig.get_path("purelib"))
    (site / "bookie-fleet.pth").write_text(f"{args.lib}\n")
    scripts = tomllib.loads(args.pyproject.read_text())["project"]["scripts"]
    bin_dir = Path(sys.executable).parent
    for name, target in scripts.items():
        module, function = target.split(":")
        if module.split(".")[0] not in args.scripts_of:
            continue
        path = bin_dir / name
        path.write_text(SCRIPT.format(python=sys.executable, module=module, function=function))
        path.chmod(0o755)
        print(f"install-packages: {name} -> {target}")
    return 0 if compileall.compile_dir(str(args.lib), quiet=1, workers=1) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
