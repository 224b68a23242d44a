"""bk_server.conf is read as Java reads properties files: every key and value of Apache BookKeeper's own
bk_server.conf, and every syntax rule (``\\`` continuations, escapes, ``key value`` and ``key:value``
separators, ``!`` comments), compared with java.util.Properties on the same bytes (tests/java/PropertiesOracle)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from bookie.config import BookieConfig, read_properties

from tests.support.java_client import java_command

# Every rule of java.util.Properties.load that a hand parser tends to miss.
SYNTAX = r"""# comment
! also a comment
bookiePort 3181
journalDirectories:/data/bk/journal
ledgerDirectories = /data/bk/ledgers-1,\
                    /data/bk/ledgers-2, \
   /data/bk/ledgers-3
advertisedAddress=bookie\u002d0.example
key\ with\ spaces = value with = and : inside
key\:colon=x
tabbed	value
escapes=tab\there\nnewline \\ backslash \# not a comment
lone
   indented = yes
empty=
""" + "trailing=spaces kept by Java, trimmed by BookKeeper   \n"


def java_read(path: Path) -> dict[str, str]:
    """What java.util.Properties.load reads from ``path``."""
    out = subprocess.run(java_command("PropertiesOracle", str(path)), capture_output=True, timeout=120,
                         check=True).stdout.decode()
    values: dict[str, str] = {}
    pos = 0
    while pos < len(out):
        fields = []
        for _ in range(2):
            colon = out.index(":", pos)
            length = int(out[pos:colon])
            fields.append(out[colon + 1:colon + 1 + length])
            pos = colon + 1 + length
        assert out[pos] == "\n"
        pos += 1
        values[fields[0]] = fields[1]
    return values


def test_apache_bookkeeper_bk_server_conf_is_read_without_loss() -> None:
    conf = os.environ.get("BOOKIE_FLEET_BK_SERVER_CONF", "")
    if not conf or not Path(conf).is_file():
        pytest.fail("$BOOKIE_FLEET_BK_SERVER_CONF is not set: run ./scripts/bootstrap and source its env file")
    java = java_read(Path(conf))
    assert java, "the oracle read nothing"
    assert read_properties(Path(conf).read_text(), conf) == {k: v.strip() for k, v in java.items()}
    assert read_properties(Path(conf).read_text())["extraServerComponents"] == "test1,test2,test3"


def test_every_properties_rule_is_read_like_java(tmp_path: Path) -> None:
    path = tmp_path / "bk_server.conf"
    path.write_text(SYNTAX)
    java = java_read(path)
    ours = read_properties(SYNTAX)
    assert ours == {k: v.strip() for k, v in java.items()}
    assert ours["ledgerDirectories"] == "/data/bk/ledgers-1,/data/bk/ledgers-2, /data/bk/ledgers-3"
    assert ours["key with spaces"] == "value with = and : inside"
    assert ours["escapes"] == "tab\there\nnewline \\ backslash # not a comment"
    assert ours["lone"] == "" and ours["indented"] == "yes"
    assert java["trailing"].endswith("   ") and ours["trailing"] == "spaces kept by Java, trimmed by BookKeeper"


def test_a_real_style_conf_configures_the_bookie() -> None:
    conf = BookieConfig.from_properties("bookiePort 3181\njournalDirectories:/j\n"
                                        "ledgerDirectories=/l1,\\\n   /l2\nadvertisedAddress=bookie\\u002d0\n")
    assert conf.bookie_port == 3181
    assert [str(p) for p in conf.journal_directories] == ["/j"]
    assert [str(p) for p in conf.ledger_directories] == ["/l1", "/l2"]
    assert conf.advertised_address == "bookie-0"


def test_written_properties_read_back_identically() -> None:
    conf = BookieConfig.from_properties("bookiePort=4000\nadvertisedAddress=a b=c\\:d\nledgerDirectories=/x,/y\n")
    again = BookieConfig.from_properties(conf.to_properties())
    assert again.model_dump() == conf.model_dump()
    assert again.advertised_address == "a b=c:d"
