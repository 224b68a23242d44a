"""Every command a reader may paste from README.md or docs/*.md (their ``sh`` blocks) names things that exist:

- our programs (``bookie``, ``bookie-fleet``, ``bookie-audit``, ``bookie-shell``, ``bookie-stream``) and the
  scripts run with ``python FILE`` take the subcommands and options written, as their ``--help`` says;
- ``./scripts/...`` and ``python -m MODULE`` exist;
- files given to ``kubectl`` (``-f``, ``--patch-file``) and charts given to ``helm`` are in the repository, each
  ``helm --set`` names a value of the chart's values schema, and each ``kubectl patch`` of a BookieCluster only
  fields of its CRD;
- any other program is one of the external tools listed below, so a new one is looked at once.

The README's quick start is also run as written on a fresh cluster (tests/fleet/test_readme_quick_start.py); this
keeps every other block true to the code as it changes. The notation of the README's summary blocks is read as
written there: ``a | b`` after a subcommand lists alternatives, ``[...]`` optional words, UPPER-CASE words and
``...`` placeholders."""

from __future__ import annotations

import functools
import itertools
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
OURS = {"bookie", "bookie-fleet", "bookie-audit", "bookie-shell", "bookie-stream"}
# Programs the project does not provide: their own documentation is theirs.
EXTERNAL = {"docker", "kind", "curl", "xdg-open", "hdfs", "spark-submit", "export", "source", "printf", "openssl",
            "kubectl", "helm"}
BOOKIE_CLUSTER = {"bkc", "bookiecluster", "bookieclusters", "bookieclusters.bookie-fleet.dev"}


@dataclass(frozen=True)
class Command:
    doc: str
    line: str
    words: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.doc}: {self.line.strip()}"


def _blocks(path: Path) -> Iterator[str]:
    for found in re.finditer(r"```(?:sh|bash|console)\n(.*?)```", path.read_text(), re.S):
        yield found.group(1)


def _logical_lines(block: str) -> Iterator[str]:
    """Lines with their backslash continuations joined, comments removed."""
    joined = re.sub(r"\\\n\s*", " ", block)
    for line in joined.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            yield line


def _segments(line: str) -> list[list[str]]:
    """The simple commands of a line: split at ``|``, ``&&``, ``||`` and ``;`` standing alone (``a|b`` inside a
    word is the docs' notation for alternatives)."""
    segments: list[list[str]] = [[]]
    for token in shlex.split(line, comments=True):
        if token in ("|", "&&", "||", ";"):
            segments.append([])
        else:
            segments[-1].append(token)
    return [s for s in segments if s]


def commands() -> list[Command]:
    """Each command of every shell block; an alternative after ``|`` (a segment that starts with no program)
    is written out in full: its program and the words before the subcommand it replaces."""
    found = []
    for doc in DOCS:
        for block in _blocks(doc):
            for line in _logical_lines(block):
                previous: list[str] | None = None
                for words in _segments(line):
                    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
                        words = words[1:]  # an environment assignment before the program
                    if not words:
                        continue
                    program = words[0]
                    if program not in OURS | EXTERNAL and not _is_program(program) and previous is not None:
                        words = _before_last_subcommand(previous) + words
                    found.append(Command(doc.relative_to(REPO).as_posix(), line, tuple(words)))
                    previous = words
    return found


def _is_program(word: str) -> bool:
    return word.startswith(("./", "python")) or word in OURS | EXTERNAL


def _before_last_subcommand(words: list[str]) -> list[str]:
    """``bookie-shell --zk HOST:PORT bookies`` -> ``bookie-shell --zk HOST:PORT``: the words an alternative
    subcommand keeps."""
    if words[0] not in OURS and not words[0].startswith("python"):
        return words[:1]
    return words[:_walk(words)[0]]


# --- our programs' --help, as argparse prints it


@dataclass(frozen=True)
class Help:
    usage: str
    subcommands: frozenset[str]       # the choices of its positional arguments (subcommands, or plain choices)
    options: dict[str, bool]          # option -> takes a value


@functools.cache
def _help(argv: tuple[str, ...]) -> Help:
    run = subprocess.run([*argv, "--help"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, f"{' '.join(argv)} --help failed: {run.stderr[-2000:]}"
    subcommands: set[str] = set()
    positional = re.search(r"positional arguments:\n(.*?)(?:\n\S|\Z)", run.stdout, re.S)
    if positional:
        for choices in re.findall(r"^  \{([^}]*)\}", positional.group(1), re.M):
            subcommands.update(choices.split(","))
    options: dict[str, bool] = {}
    for line in run.stdout.splitlines():
        listed = re.match(r"^  (-\S.*?)(?:\s{2,}|$)", line)  # "  -k SELECT, --select SELECT   help"
        for part in listed.group(1).split(", ") if listed else ():
            name, _, value = part.partition(" ")
            options[name] = bool(value)
    return Help(run.stdout.split("\n\n")[0], frozenset(subcommands), options)


def _program(words: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    if words[0].startswith("python"):
        return (sys.executable, words[1])
    return (words[0],)


def _walk(words: tuple[str, ...] | list[str]) -> tuple[int, list[str]]:
    """The index of the last subcommand among ``words`` (after the program when there is none), and what in
    them the ``--help`` of the program and its subcommands does not know."""
    argv = list(_program(words))
    start = len(argv) if words[0].startswith("python") else 1
    shown = list(words[:start])
    last_subcommand, problems = start, []
    expects_value = positional_seen = False
    for index in range(start, len(words)):
        word = words[index].strip("[]")
        if expects_value:
            expects_value = False
            continue
        if word == "--":
            break  # what follows is another command, given to this one to run
        known = _help(tuple(argv))
        if word.startswith("-") and len(word) > 1:
            name = word.split("=")[0]
            if name not in known.options:
                problems.append(f"`{' '.join(shown)}` has no option {name}")
            expects_value = known.options.get(name, False) and "=" not in word
        elif positional_seen or not known.subcommands or _placeholder(word):
            positional_seen = True
        else:
            unknown = [w for w in word.split("|") if w not in known.subcommands]
            if unknown:
                problems.extend(f"`{' '.join(shown)}` has no subcommand {w} (it has "
                                f"{', '.join(sorted(known.subcommands))})" for w in unknown)
                positional_seen = True
            elif _help((*argv, word.split("|")[0])).usage == known.usage:
                positional_seen = True  # a choice of a positional argument (the parser's --help is the same)
            else:
                argv.append(word.split("|")[0])
                shown.append(word)
                last_subcommand = index
    return last_subcommand, problems


def _placeholder(word: str) -> bool:
    return word.isupper() or "..." in word or word.startswith(("$", "/"))


# --- what the other commands name


@functools.cache
def _values_schema() -> dict[str, Any]:
    return json.loads((REPO / "helm" / "bookie-operator" / "values.schema.json").read_text())


@functools.cache
def _crd_spec_schema() -> dict[str, Any]:
    crd = yaml.safe_load((REPO / "crds" / "bookieclusters.yaml").read_text())
    version = next(v for v in crd["spec"]["versions"] if v.get("storage"))
    return version["schema"]["openAPIV3Schema"]["properties"]["spec"]


def _schema_has(schema: dict[str, Any], path: list[str]) -> bool:
    for key in path:
        properties = schema.get("properties")
        if properties is None:
            return bool(schema.get("additionalProperties") or schema.get("x-kubernetes-preserve-unknown-fields"))
        if key not in properties:
            return False
        schema = properties[key]
    return True


def _json_paths(value: Any, prefix: list[str]) -> Iterator[list[str]]:
    if isinstance(value, dict):
        for key, inner in value.items():
            yield [*prefix, key]
            yield from _json_paths(inner, [*prefix, key])


def _repository_path(word: str) -> bool:
    """A path the reader's checkout holds (not one of theirs, like /tmp/... or a URL)."""
    return not word.startswith(("/", "http", "$", "-")) and "/" in word and "..." not in word


def _check_kubectl(words: tuple[str, ...]) -> list[str]:
    problems = []
    for flag, value in itertools.pairwise(words):
        if flag in ("-f", "--filename", "--patch-file") and _repository_path(value) and not (REPO / value).exists():
            problems.append(f"{value} is not in the repository")
    if len(words) > 2 and words[1] == "patch" and words[2] in BOOKIE_CLUSTER:
        for flag, value in itertools.pairwise(words):
            if flag in ("-p", "--patch"):
                patch = json.loads(value)
                for path in _json_paths(patch.get("spec", {}), []):
                    if not _schema_has(_crd_spec_schema(), path):
                        problems.append(f"the BookieCluster CRD has no field spec.{'.'.join(path)}")
    return problems


def _check_helm(words: tuple[str, ...]) -> list[str]:
    problems = []
    for word in words[2:]:
        if word.startswith("helm/") and not (REPO / word).is_dir():
            problems.append(f"{word} is not a chart in the repository")
    for flag, value in itertools.pairwise(words):
        if flag == "--set":
            key = value.split("=", 1)[0]
            if not _schema_has(_values_schema(), key.split(".")):
                problems.append(f"the chart has no value {key}")
    return problems


def _check_python(words: tuple[str, ...]) -> list[str]:
    if words[1] == "-m":
        return [] if find_spec(words[2].split(".")[0]) and find_spec(words[2]) else [f"no module {words[2]}"]
    if words[1] == "-c":
        return []
    if not (REPO / words[1]).is_file():
        return [f"{words[1]} is not in the repository"]
    return _walk(words)[1]


def problems_of(command: Command) -> list[str]:
    words = command.words
    program = words[0]
    if program in OURS:
        return _walk(words)[1]
    if program.startswith("python"):
        return _check_python(words)
    if program.startswith("./"):
        path = REPO / program
        return [] if path.is_file() and path.stat().st_mode & 0o111 else [f"{program} is not an executable here"]
    if program == "kubectl":
        return _check_kubectl(words)
    if program == "helm":
        return _check_helm(words)
    if program in EXTERNAL:
        return []
    return [f"{program} is neither ours nor a listed external tool"]


COMMANDS = commands()


def test_the_docs_have_commands_to_check() -> None:
    assert len(COMMANDS) > 60, [str(c) for c in COMMANDS]
    assert {c.words[0] for c in COMMANDS} >= OURS


@pytest.mark.parametrize("doc", sorted({c.doc for c in COMMANDS}))
def test_every_command_names_what_exists(doc: str) -> None:
    wrong = [f"{c}\n    -> {p}" for c in COMMANDS if c.doc == doc for p in problems_of(c)]
    assert not wrong, "\n".join(wrong)
