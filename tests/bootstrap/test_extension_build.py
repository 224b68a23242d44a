"""images/build_extensions.py, which scripts/bootstrap and the image builds use to compile the bookie's C
modules: it builds in place, rebuilds only what changed, never leaves a half-built module on the import path,
and names what is missing when it cannot build."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "images" / "build_extensions.py"
SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")
MODULE = """#define PY_SSIZE_T_CLEAN
#include <Python.h>
static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, .m_name = "answer", .m_size = 0};
PyMODINIT_FUNC PyInit_answer(void) {
    PyObject *m = PyModule_Create(&def);
    if (m != NULL && PyModule_AddIntConstant(m, "VALUE", %d) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
"""


def build(directory: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), str(directory)], capture_output=True, text=True,
                          env={**os.environ, **env})


def value_of(directory: Path) -> int:
    done = subprocess.run([sys.executable, "-c", "import answer; print(answer.VALUE)"], cwd=directory,
                          capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_module_is_built_beside_its_source_and_rebuilt_when_the_source_changes(tmp_path: Path) -> None:
    source = tmp_path / "answer.c"
    source.write_text(MODULE % 41)
    assert build(tmp_path).returncode == 0
    module = tmp_path / f"answer{SUFFIX}"
    assert value_of(tmp_path) == 41
    built_at = module.stat().st_mtime_ns
    assert "answer" not in build(tmp_path).stdout  # up to date: not compiled again
    assert module.stat().st_mtime_ns == built_at
    source.write_text(MODULE % 42)
    os.utime(source, ns=(built_at + 10**9, built_at + 10**9))
    assert build(tmp_path).returncode == 0
    assert value_of(tmp_path) == 42


def test_a_source_that_does_not_compile_fails_naming_it_and_leaves_no_module(tmp_path: Path) -> None:
    (tmp_path / "answer.c").write_text("this is not C\n")
    done = build(tmp_path)
    assert done.returncode != 0
    assert "compiling" in done.stderr and "answer.c" in done.stderr
    assert not list(tmp_path.glob("answer*.so*"))


def test_a_missing_compiler_is_named(tmp_path: Path) -> None:
    (tmp_path / "answer.c").write_text(MODULE % 1)
    done = build(tmp_path, CC="no-such-cc")
    assert done.returncode != 0
    assert "no C compiler 'no-such-cc'" in done.stderr
