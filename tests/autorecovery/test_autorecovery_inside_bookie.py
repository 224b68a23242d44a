"""autoRecoveryDaemonEnabled runs the auditor and a replication worker inside the bookie process, with the
/api/v1/autorecovery/ endpoints on the bookie's admin port."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request

from tests.support.bookies import BookieFactory


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


async def test_bookies_elect_one_auditor_among_themselves(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(2, autoRecoveryDaemonEnabled=True)
    answers = []
    for bookie in cluster.bookies:
        for _ in range(50):
            status, text = await asyncio.to_thread(_get, f"{bookie.http_url}/api/v1/autorecovery/who_is_auditor")
            if status == 200:
                break
            await asyncio.sleep(0.2)
        answers.append((status, text))
    assert [s for s, _ in answers] == [200, 200]
    assert answers[0][1] == answers[1][1]
    assert any(b.bookie_id in answers[0][1] for b in cluster.bookies)


async def test_without_the_daemon_the_endpoints_are_absent(bookie_factory: BookieFactory) -> None:
    cluster = bookie_factory(1)
    status, _ = await asyncio.to_thread(_get, f"{cluster[0].http_url}/api/v1/autorecovery/who_is_auditor")
    assert status == 404
