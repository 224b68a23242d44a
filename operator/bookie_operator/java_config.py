"""Apache BookKeeper's own configuration key set, for ``implementation: apache-bookkeeper`` clusters.

A Java bookie reads keys our bookie does not know (and the other way round), so ``spec.config`` of a Java-bookie
cluster is checked against the keys BookKeeper itself defines: the ``static final String`` constants that
``ServerConfiguration``, ``ClientConfiguration`` (autorecovery runs in the bookie), ``AbstractConfiguration``,
``HttpServerLoader`` and the DbLedgerStorage classes use as key names, read
from the class files of BookKeeper's jars (no JVM needed), plus every key its shipped ``bk_server.conf``
mentions. The list holds the keys of every Apache BookKeeper version of the compatibility matrix
(docs/compatibility.md), so a cluster running a newer image than ours may use its new keys (BookKeeper itself
ignores a key it does not know). It is checked in (``apache_bookkeeper_keys.txt``) so the operator needs no
jars at run time:

    python -m bookie_operator.java_config --lib "$BOOKIE_FLEET_BK_LIB" --conf "$BOOKIE_FLEET_BK_SERVER_CONF" \
        --lib "$BOOKIE_FLEET_BK_COMPAT_LIB"

(4.18.0 publishes no full bk_server.conf on Maven Central: its keys come from the jars alone.)
"""

from __future__ import annotations

import argparse
import functools
import re
import struct
import sys
import zipfile
from pathlib import Path

BOOKKEEPER_VERSION = "4.18.0"  # the Java bookie image's (hack/apache-bookkeeper/pom.xml)
KEY_SET_VERSIONS = ("4.17.3", "4.18.0")  # whose keys the checked-in list holds
# The Apache BookKeeper lines (major.minor) the operator manages: those whose keys it checks. The Java bookie
# image refuses to start any other (builders: models.BOOKKEEPER_VERSIONS_ENV).
SUPPORTED_LINES = tuple(dict.fromkeys(".".join(v.split(".")[:2]) for v in KEY_SET_VERSIONS))
KEYS_FILE = Path(__file__).with_name("apache_bookkeeper_keys.txt")
CLASSES = (
    "org/apache/bookkeeper/conf/AbstractConfiguration.class",
    "org/apache/bookkeeper/conf/ServerConfiguration.class",
    # The bookie's autorecovery reads its client settings (placement policy...) from the same file.
    "org/apache/bookkeeper/conf/ClientConfiguration.class",
    "org/apache/bookkeeper/http/HttpServerLoader.class",
    "org/apache/bookkeeper/bookie/storage/ldb/DbLedgerStorage.class",
    "org/apache/bookkeeper/bookie/storage/ldb/SingleDirectoryDbLedgerStorage.class",
    "org/apache/bookkeeper/bookie/storage/ldb/KeyValueStorageRocksDB.class",
    # The stats provider the bookies export Prometheus metrics with (prometheusStatsHttpPort, ...).
    "org/apache/bookkeeper/stats/prometheus/PrometheusMetricsProvider.class",
)
# A key name: an identifier, possibly with dots or underscores; class names and sentences are not keys.
_KEY = re.compile(r"^[a-z][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$")
_CONF_LINE = re.compile(r"^#?\s*([a-z][A-Za-z0-9_.]*)=")
_NOT_KEYS = ("org.", "com.", "io.", "java.")


def string_constants(class_bytes: bytes) -> dict[str, str]:
    """``static final String`` fields with a compile-time value: field name -> value (a class-file reader)."""
    pos = 10
    (count,) = struct.unpack_from(">H", class_bytes, 8)
    utf8: dict[int, str] = {}
    strings: dict[int, int] = {}
    index = 1
    while index < count:
        tag = class_bytes[pos]
        pos += 1
        if tag == 1:
            (length,) = struct.unpack_from(">H", class_bytes, pos)
            utf8[index] = class_bytes[pos + 2:pos + 2 + length].decode("utf-8", "replace")
            pos += 2 + length
        elif tag == 8:
            (strings[index],) = struct.unpack_from(">H", class_bytes, pos)
            pos += 2
        elif tag in (5, 6):
            pos += 8
            index += 1          # longs and doubles take two slots
        elif tag in (7, 16, 19, 20):
            pos += 2
        elif tag == 15:
            pos += 3
        elif tag in (3, 4, 9, 10, 11, 12, 17, 18):
            pos += 4
        else:
            raise ValueError(f"unknown constant pool tag {tag} at {pos - 1}")
        index += 1
    pos += 6
    (interfaces,) = struct.unpack_from(">H", class_bytes, pos)
    pos += 2 + 2 * interfaces
    (fields,) = struct.unpack_from(">H", class_bytes, pos)
    pos += 2
    out: dict[str, str] = {}
    for _ in range(fields):
        _access, name, desc, attrs = struct.unpack_from(">HHHH", class_bytes, pos)
        pos += 8
        for _ in range(attrs):
            attr_name, length = struct.unpack_from(">HI", class_bytes, pos)
            if utf8.get(attr_name) == "ConstantValue" and utf8.get(desc) == "Ljava/lang/String;":
                (value_index,) = struct.unpack_from(">H", class_bytes, pos + 6)
                out[utf8[name]] = utf8[strings[value_index]]
            pos += 6 + length
    return out


def keys_from_jars(lib: Path) -> set[str]:
    keys: set[str] = set()
    wanted = set(CLASSES)
    for jar in sorted(lib.glob("*.jar")):
        with zipfile.ZipFile(jar) as z:
            for name in wanted & set(z.namelist()):
                keys |= {v for v in string_constants(z.read(name)).values()
                         if _KEY.match(v) and not v.startswith(_NOT_KEYS)}
                wanted.discard(name)
    if wanted:
        raise SystemExit(f"classes not found in {lib}: {', '.join(sorted(wanted))}")
    return keys


def keys_from_conf(conf: Path) -> set[str]:
    return {m.group(1) for line in conf.read_text().splitlines() if (m := _CONF_LINE.match(line.strip()))}


@functools.cache
def apache_bookkeeper_keys() -> frozenset[str]:
    """The checked-in key set (comment lines start with ``#``)."""
    return frozenset(line for line in KEYS_FILE.read_text().splitlines() if line and not line.startswith("#"))


def render(keys: set[str]) -> str:
    return (f"# Configuration keys of Apache BookKeeper {' and '.join(KEY_SET_VERSIONS)}, generated by "
            "`python -m bookie_operator.java_config` from their jars and conf/bk_server.conf. Do not edit.\n"
            + "\n".join(sorted(keys)) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bookie_operator.java_config", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", type=Path, required=True, action="append",
                        help="an Apache BookKeeper version's lib/ directory of jars (once per version)")
    parser.add_argument("--conf", type=Path, action="append", default=[], help="a version's conf/bk_server.conf")
    parser.add_argument("--check", action="store_true", help="fail if the checked-in list differs")
    args = parser.parse_args(argv)
    keys = set().union(*(keys_from_jars(lib) for lib in args.lib), *(keys_from_conf(conf) for conf in args.conf))
    text = render(keys)
    if args.check:
        stale = not KEYS_FILE.is_file() or KEYS_FILE.read_text() != text
        if stale:
            print(f"{KEYS_FILE.name} is stale: run python -m bookie_operator.java_config", file=sys.stderr)
        return 1 if stale else 0
    KEYS_FILE.write_text(text)
    print(f"wrote {KEYS_FILE.name}: {len(keys)} keys")
    return 0


if __name__ == "__main__":
    sys.exit(main())
