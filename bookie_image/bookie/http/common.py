"""What every REST handler shares: JSON and text answers, request parsing with clear 400s, routing by method."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def pretty(data: Any, status: int = 200) -> web.Response:
    """Jackson's pretty printer style: indented JSON."""
    return web.Response(text=json.dumps(data, indent=2), status=status, content_type="application/json")


def plain(text: str, status: int = 200) -> web.Response:
    return web.Response(text=text, status=status, content_type="text/plain")


class BadRequest(Exception):
    """A request the API refuses, with a message naming the problem (answered with 400)."""


async def json_body(request: web.Request, *, required: bool = False) -> dict[str, Any]:
    text = await request.text()
    if not text.strip():
        if required:
            raise BadRequest("request body is empty; expected a JSON object")
        return {}
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"request body is not valid JSON: {exc.msg}") from None
    if not isinstance(data, dict):
        raise BadRequest("request body must be a JSON object")
    return data


def int_param(request: web.Request, name: str, default: int | None = None) -> int:
    raw = request.query.get(name)
    if raw is None or raw == "":
        if default is None:
            raise BadRequest(f"missing query parameter {name}")
        return default
    try:
        return int(raw)
    except ValueError:
        raise BadRequest(f"query parameter {name} must be an integer, got {raw!r}") from None


def bool_value(value: Any, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise BadRequest(f"{name} must be true or false, got {value!r}")


def methods(**by_method: Handler) -> Handler:
    """Route one path by method; others get 405 like BookKeeper's services."""

    async def dispatch(request: web.Request) -> web.StreamResponse:
        handler = by_method.get(request.method) or by_method.get("ANY")
        if handler is None:
            return plain(f"Method {request.method} not allowed", status=405)
        return await handler(request)

    return dispatch
