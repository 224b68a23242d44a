"""Calls to a bookie's admin REST API over real HTTP (aiohttp), for tests that specify its answers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp

from tests.support.admin_api import TEST_ADMIN_TOKEN


@dataclass(frozen=True)
class Answer:
    status: int
    text: str
    content_type: str

    def json(self) -> Any:
        return json.loads(self.text)


async def call(method: str, url: str, *, body: Any = None, data: str | bytes | None = None,
               params: dict[str, str] | None = None, token: str | None = TEST_ADMIN_TOKEN,
               ssl: Any = True) -> Answer:
    """One request; ``body`` is sent as JSON, ``data`` as is; ``token`` as a bearer credential (the test
    bookies' by default, None for none); ``ssl`` as aiohttp takes it (an ``SSLContext`` for HTTPS)."""
    payload = json.dumps(body) if body is not None else data
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        async with session.request(method, url, data=payload, params=params, headers=headers,
                                   ssl=ssl) as response:
            return Answer(response.status, await response.text(), response.content_type)


async def get(url: str, **params: str) -> Answer:
    return await call("GET", url, params=params or None)


async def put(url: str, body: Any = None, *, data: str | bytes | None = None,
              token: str | None = TEST_ADMIN_TOKEN) -> Answer:
    return await call("PUT", url, body=body, data=data, token=token)
