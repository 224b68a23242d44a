"""Compiles the project's C extension modules in place: each ``*.c`` under the given package directories
becomes ``<name><EXT_SUFFIX>`` beside it, importable as that package's module. Headers (``*.h``) are shared
between modules: a module that uses another's C interface includes its header (``bookie/_requests.c``
includes ``protocol/_native_api.h``, the path relative to the source).

    python3 build_extensions.py DIR [DIR ...]

Used by ``scripts/bootstrap`` (on the checkout) and by the images' build stage (on the copied packages), so
both build the same sources the same way. A module is rebuilt only when it is missing or older than its
source or than any header of the given directories. Needs a C compiler (``cc``) and the interpreter's headers
(``Python.h``); both are named in the error when missing. setuptools is not used: one compiler call per file
is all these modules need, and the images' virtualenvs do not carry setuptools.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

CFLAGS = ["-O2", "-fPIC", "-shared", "-pthread", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror"]
LIBS = ["-lm"]


def build(source: Path, compiler: str, include: str, headers_mtime: float) -> Path:
    target = source.with_name(source.stem + sysconfig.get_config_var("EXT_SUFFIX"))
    if target.exists() and target.stat().st_mtime >= max(source.stat().st_mtime, headers_mtime):
        return target
    partial = target.with_name(target.name + ".partial")
    command = [compiler, *CFLAGS, f"-I{include}", str(source), "-o", str(partial), *LIBS]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise SystemExit(f"build_extensions: compiling {source} failed:\n{shlex.join(command)}\n{done.stderr}")
    os.replace(partial, target)  # never a half-written module on the import path
    print(f"build_extensions: {target}")
    return target


def main(argv: list[str]) -> int:
    if not argv:
        raise SystemExit(__doc__)
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        raise SystemExit(f"build_extensions: no C compiler {compiler!r} on PATH (install gcc, or set CC)")
    include = sysconfig.get_path("include")
    if not (Path(include) / "Python.h").is_file():
        raise SystemExit(f"build_extensions: {include}/Python.h is missing (install this Python's headers, "
                         "e.g. Debian's python3-dev)")
    sources = sorted(p for d in argv for p in Path(d).rglob("*.c"))
    headers_mtime = max((p.stat().st_mtime for d in argv for p in Path(d).rglob("*.h")), default=0.0)
    for source in sources:
        build(source, compiler, include, headers_mtime)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
