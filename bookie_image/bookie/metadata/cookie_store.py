"""Bookie cookies in ZooKeeper (``<root>/cookies/<bookie id>``), versioned like BookKeeper's
``RegistrationManager`` cookie calls; the cookie format itself is ``bookie.metadata.cookie``."""

from __future__ import annotations

from bookie.metadata.cookie import Cookie
from bookie.metadata.session import NoNode, Versioned, ZkSession


class CookieStore(ZkSession):
    """Read, write, list and delete bookie cookies over one ZooKeeper session."""

    # ------------------------------------------------------------ cookies

    async def read_cookie(self, bookie_id: str) -> Versioned[Cookie] | None:
        try:
            data, stat = await self._get(self.layout.cookie(bookie_id))
        except NoNode:
            return None
        return Versioned(Cookie.parse(data), stat.version)

    async def write_cookie(self, bookie_id: str, cookie: Cookie, version: int | None) -> int:
        """Create (``version`` None; fails with NodeExists) or update at ``version``; returns new version."""
        path = self.layout.cookie(bookie_id)
        if version is None:
            await self._create(path, cookie.to_bytes(), makepath=True)
            return 0
        stat = await self._call("set", path, cookie.to_bytes(), version=version)
        return int(stat.version)

    async def list_cookies(self) -> list[str]:
        """Ids of every bookie that has a cookie: the cluster's bookies, running or not."""
        return sorted(await self._children_or_empty(self.layout.cookies))

    async def delete_cookie(self, bookie_id: str, version: int = -1) -> None:
        await self._delete(self.layout.cookie(bookie_id), version)
