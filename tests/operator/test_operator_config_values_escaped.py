"""The bookies' configuration file the operator renders is escaped as Java properties: a ``spec.config`` value with
a newline, a carriage return, a trailing backslash (a line continuation) or anything else Java properties give a
meaning to is read back as that one value, by our bookie's reader and by Apache BookKeeper's (its
ServerConfiguration, tests/java/BookieConfOracle), and cannot add or change a key such as
``httpServerAuthTokenFile`` or ``metadataServiceUri``."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from bookie.config import BookieConfig, read_properties
from bookie_operator import builders
from bookie_operator.builders import Owner

from tests.operator.helpers import spec
from tests.support.java_client import java_command

OWNER = Owner("bk", "ns", "uid-1")
INJECTED = "/tmp/attacker-token"
TOKEN_FILE = builders.ADMIN_TOKEN_FILE
HOSTILE = [
    f"0.0.0.0\nhttpServerAuthTokenFile={INJECTED}\nmetadataServiceUri=zk://evil:2181/ledgers",
    f"0.0.0.0\rhttpServerAuthTokenFile={INJECTED}",
    f"0.0.0.0\\\nhttpServerAuthTokenFile={INJECTED}",       # a backslash and a newline
    "0.0.0.0\\",                                                # a trailing backslash continues the line
    "a=b:c#d!e\tf\fg\\h \u00e9\u2603\U0001f600",               # separators, comment marks, tabs, non-ASCII
    "#not a comment",
]


def rendered(value: str, implementation: str) -> str:
    fields = {"implementation": implementation, "image": "bookie-fleet/apache-bookkeeper:4.18.0"} \
        if implementation == "apache-bookkeeper" else {}
    s = spec(**fields, config={"prometheusStatsHttpAddress": value})
    return str(builders.configmap(OWNER, s)["data"]["bk_server.conf"])


def bookkeeper_reads(text: str, tmp_path: Path) -> dict[str, str]:
    """Every key and value as Apache BookKeeper's ServerConfiguration reads the file."""
    path = tmp_path / "bk_server.conf"
    path.write_bytes(text.encode("ascii"))  # escaped: the Java reader takes the file as ISO-8859-1
    out = subprocess.run(java_command("BookieConfOracle", str(path)), capture_output=True, timeout=120,
                         check=True).stdout.decode()
    values, rest = {}, out
    while rest:
        n, rest = rest.split(":", 1)
        key, rest = rest[:int(n)], rest[int(n):]
        n, rest = rest.split(":", 1)
        values[key], rest = rest[:int(n)], rest[int(n) + 1:]
    return values


@pytest.mark.parametrize("value", HOSTILE)
def test_our_bookie_reads_back_the_value_and_the_operators_keys(value: str) -> None:
    text = rendered(value, "bookie-fleet")
    values = read_properties(text)
    assert values["prometheusStatsHttpAddress"] == value.strip()   # values are trimmed, as BookKeeper trims them
    assert values["httpServerAuthTokenFile"] == TOKEN_FILE
    assert values["metadataServiceUri"] == "zk+hierarchical://zk-0.zk:2181/ledgers"
    conf = BookieConfig.from_properties(text)
    assert str(conf.http_server_auth_token_file) == TOKEN_FILE
    assert conf.prometheus_stats_http_address == value.strip()


@pytest.mark.parametrize("implementation", ["bookie-fleet", "apache-bookkeeper"])
def test_apache_bookkeeper_reads_back_the_value_and_the_operators_keys(implementation: str,
                                                                      tmp_path: Path) -> None:
    texts = {value: rendered(value, implementation) for value in HOSTILE}
    for value, text in texts.items():
        values = bookkeeper_reads(text, tmp_path)
        assert values["prometheusStatsHttpAddress"] == value, text
        assert values["metadataServiceUri"] == "zk+hierarchical://zk-0.zk:2181/ledgers"
        assert values.get("httpServerAuthTokenFile") != INJECTED
        assert set(values) == set(read_properties(text))           # the same keys as our reader sees


def test_keys_are_escaped_too() -> None:
    text = builders.render_properties({"a key=with:separators#!": "v", " leading": "w"})
    assert read_properties(text) == {"a key=with:separators#!": "v", " leading": "w"}


def test_ordinary_values_render_as_before() -> None:
    """Only what needs an escape gets one: the file, and so the checksum that rolls the bookies, is unchanged
    for every cluster whose values have none of those characters."""
    text = builders.render_properties({"metadataServiceUri": "zk+hierarchical://zk-0.zk:2181/ledgers",
                                       "journalDirectories": "/data/journal-0,/data/journal-1", "flag": True})
    assert text.splitlines()[1:] == ["flag=true", "journalDirectories=/data/journal-0,/data/journal-1",
                                     "metadataServiceUri=zk+hierarchical://zk-0.zk:2181/ledgers"]
