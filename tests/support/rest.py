"""Calls to a bookie's admin REST API over real HTTP (aiohttp), for tests that specify its answers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aiohttp


@dataclass(frozen=True)
class Answer:
    status: int
    text: str
    content_type: str

    def json(self) -> Any:
        return json.loads(self.text)


async def call(method: str, url: str, *, body: Any = None, data: str | bytes | None = None,
               params: dict[str, str] | None = None) -> Answer:
    """One request; ``body`` is sent as JSON, ``data`` as is."""
    payload = json.dumps(body) if body is not None else data
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:
        async with session.request(method, url, data=payload, params=params) as response:
            return Answer(response.status, await response.text(), response.content_type)


async def get(url: str, **params: str) -> Answer:
    return await call("GET", url, params=params or None)


async def put(url: str, body: Any = None, *, data: str | bytes | None = None) -> Answer:
    return await call("PUT", url, body=body, data=data)
