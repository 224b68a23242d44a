"""The C Appender's contract with its handle: it owns the appends' state (the pending queue, last_add_pushed,
length), and what it still reads or calls of the handle by name is exactly the AppenderHandle protocol of
bookie/client/_native.pyi, which mypy checks LedgerHandle against.

The stub's protocol and the C source's list of names are two texts that could drift; these tests hold them
together: a handle with exactly the protocol's members is taken, and a handle missing any one of them is refused
when the appender is made, with the member named (so a rename in LedgerHandle that mypy was not run on still
fails at the first ledger, not at some later add).
"""

from __future__ import annotations

import ast
import asyncio
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import bookie.client._native as native
import pytest
from bookie.client._native import Appender, PendingAdd

STUB = Path(native.__file__).with_name("_native.pyi")


def protocol_members() -> list[str]:
    tree = ast.parse(STUB.read_text())
    (handle,) = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == "AppenderHandle"]
    names = []
    for node in handle.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
        elif isinstance(node, ast.FunctionDef):
            names.append(node.name)
    return names


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def make_appender(handle: Any, loop: asyncio.AbstractEventLoop, last_add_pushed: int = 4,
                  length: int = 50) -> Appender:
    return Appender(handle, loop, 7, b"k" * 20, ((0,),), 1, 10, 5.0, 2, lambda *a: b"", last_add_pushed, length)


def test_the_stub_declares_the_handle_members_the_appender_uses() -> None:
    members = protocol_members()
    # The state the appender owns is not the handle's any more.
    assert not {"last_add_pushed", "length", "_pending"} & set(members)
    assert {"_error", "_space_waiters", "_add_failed", "last_add_confirmed"} <= set(members)


def test_a_handle_with_the_protocol_members_is_taken(loop: asyncio.AbstractEventLoop) -> None:
    handle = SimpleNamespace(**dict.fromkeys(protocol_members()))
    appender = make_appender(handle, loop)
    assert (appender.last_add_pushed, appender.length, list(appender.pending)) == (4, 50, [])


@pytest.mark.parametrize("missing", protocol_members())
def test_a_handle_missing_a_member_is_refused_naming_it(loop: asyncio.AbstractEventLoop, missing: str) -> None:
    members = dict.fromkeys(name for name in protocol_members() if name != missing)
    with pytest.raises(TypeError, match=f"has no attribute '{missing}'"):
        make_appender(SimpleNamespace(**members), loop)


def test_the_appender_owns_its_state(loop: asyncio.AbstractEventLoop) -> None:
    appender = make_appender(SimpleNamespace(**dict.fromkeys(protocol_members())), loop, last_add_pushed=-1,
                             length=0)
    appender.last_add_pushed, appender.length = 9, 1000
    op = PendingAdd(10, b"body", 1004, loop.create_future())
    appender.pending.append(op)
    assert (appender.last_add_pushed, appender.length, list(appender.pending)) == (9, 1000, [op])
    with pytest.raises(TypeError):
        appender.length = "long"  # type: ignore[assignment]
    with pytest.raises(RuntimeError, match="already initialized"):
        Appender.__init__(appender, SimpleNamespace(**dict.fromkeys(protocol_members())), loop, 7, b"k", ((0,),), 1,
                          10, 5.0, 2, lambda *a: b"", 0, 0)
    assert list(appender.pending) == [op]
