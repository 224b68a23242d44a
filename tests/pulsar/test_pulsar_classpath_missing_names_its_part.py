"""A Pulsar classpath the bootstrap did not assemble (its part left out of ``BOOKIE_FLEET_PARTS``, as the
playground leaves out the older line's and the load tools') is refused with the variable, the part that
assembles it and how to run that part alone, for the jars and for the harness alike."""

from __future__ import annotations

from pathlib import Path

import pytest
from bookie_fleet.pulsar import LOAD_TOOLS, LTS, NEWEST, PulsarClasspath


@pytest.mark.parametrize(("line", "part"), [(NEWEST, "pulsar"), (LTS, "pulsar-lts"),
                                            (LOAD_TOOLS, "pulsar-lts")])
def test_an_unassembled_line_names_the_part_that_assembles_it(line: PulsarClasspath, part: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(f"{line.env_prefix}_LIB", raising=False)
    monkeypatch.delenv(f"{line.env_prefix}_HARNESS_JAR", raising=False)
    for what in ("lib", "harness_jar"):
        with pytest.raises(RuntimeError) as refused:
            getattr(line, what)
        message = str(refused.value)
        assert f"${line.env_prefix}_" in message, message
        assert f"scripts/bootstrap.d/{part}.sh" in message, message
        assert f"BOOKIE_FLEET_PARTS={part} ./scripts/bootstrap" in message, message


def test_a_variable_naming_a_missing_directory_is_refused_too(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKIE_FLEET_PULSAR_LTS_LIB", str(tmp_path / "gone"))
    with pytest.raises(RuntimeError, match=r"\$BOOKIE_FLEET_PULSAR_LTS_LIB must name a directory built by "
                                           r"scripts/bootstrap.d/pulsar-lts.sh .*'.*gone'"):
        _ = LTS.lib


def test_each_part_the_classpaths_name_is_a_bootstrap_part() -> None:
    parts = Path(__file__).resolve().parents[2] / "scripts" / "bootstrap.d"
    for line in (NEWEST, LTS, LOAD_TOOLS):
        script = parts / f"{line.part}.sh"
        assert line.env_prefix in script.read_text().split(), script
