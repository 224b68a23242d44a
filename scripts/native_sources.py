"""Checks of the bookie's C sources that no compiler or import-linter makes:

- each static function is defined in one file only: a helper two modules need goes into a shared header
  (bookie/_native_common.h) instead of being copied, so a fix reaches every module;
- each `#include "..."` of a project header follows .importlinter's `forbidden` contracts, read as if the
  C file and the header were modules (bookie/storage/_write_path.c is bookie.storage._write_path, its
  include "../protocol/_native_api.h" is bookie.protocol._native_api): storage's C includes no protocol
  header, protocol's no storage header, and so on for every contract.

    python scripts/native_sources.py [--root DIR] [--config FILE]

--root is the directory holding the `bookie` package (default bookie_image), --config the import-linter
configuration (default .importlinter). Prints each violation and exits 1 when there is one. Run by
./scripts/check-layers.
"""

from __future__ import annotations

import argparse
import configparser
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# A static function definition: `static [inline] <type> name(<parameters>) {`, parameters over several lines.
STATIC_FUNCTION = re.compile(r"^static\b[^;{}()=]*?\b([A-Za-z_]\w*)\s*\([^;{}]*?\)\s*\{", re.MULTILINE)
QUOTED_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)


@dataclass(frozen=True)
class Contract:
    name: str
    sources: tuple[str, ...]
    forbidden: tuple[str, ...]


def c_files(root: Path) -> list[Path]:
    return sorted(p for pattern in ("*.c", "*.h") for p in (root / "bookie").rglob(pattern))


def without_comments(text: str) -> str:
    # Comments become blank lines of the same count, so that positions stay meaningful.
    return COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def duplicate_helpers(root: Path) -> list[str]:
    defined: dict[str, list[Path]] = defaultdict(list)
    for path in c_files(root):
        for name in sorted(set(STATIC_FUNCTION.findall(without_comments(path.read_text())))):
            defined[name].append(path.relative_to(root))
    return [f"static function {name} is defined in {len(paths)} files: {', '.join(map(str, paths))} "
            "(define it once, in a shared header such as bookie/_native_common.h)"
            for name, paths in sorted(defined.items()) if len(paths) > 1]


def module_of(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts)


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def forbidden_contracts(config: Path) -> list[Contract]:
    parser = configparser.ConfigParser()
    if not parser.read(config):
        raise SystemExit(f"native_sources: cannot read {config}")
    contracts = []
    for section in parser.sections():
        fields = parser[section]
        if section.startswith("importlinter:contract:") and fields.get("type") == "forbidden":
            contracts.append(Contract(fields["name"], tuple(fields["source_modules"].split()),
                                      tuple(fields["forbidden_modules"].split())))
    return contracts


def include_violations(root: Path, contracts: list[Contract]) -> list[str]:
    found = []
    for path in c_files(root):
        module = module_of(path, root)
        for include in QUOTED_INCLUDE.findall(without_comments(path.read_text())):
            header = (path.parent / include).resolve()
            if not header.is_relative_to(root.resolve()):
                continue  # not one of the project's headers
            included = module_of(header, root.resolve())
            for contract in contracts:
                if any(within(module, s) for s in contract.sources) and any(
                        within(included, f) for f in contract.forbidden):
                    found.append(f'{path.relative_to(root)} includes "{include}" ({included}): breaks the '
                                 f"contract {contract.name!r} of .importlinter")
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, default=REPO / "bookie_image")
    parser.add_argument("--config", type=Path, default=REPO / ".importlinter")
    args = parser.parse_args(argv)
    if not (args.root / "bookie").is_dir():
        parser.error(f"{args.root} holds no bookie package")
    problems = duplicate_helpers(args.root) + include_violations(args.root, forbidden_contracts(args.config))
    for problem in problems:
        print(problem)
    if not problems:
        print(f"C sources: {len(c_files(args.root))} files, each static function defined once, includes within "
              "the layers of .importlinter")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
