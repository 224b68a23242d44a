"""The admin API credential every test bookie is started with (``httpServerAuthTokenFile``).

Every bookie of ``tests.support.bookies`` accepts ``TEST_ADMIN_TOKEN``; ``tests.support.rest`` sends it
unless told otherwise, and ``ADMIN_HEADERS`` is what other HTTP clients in tests send. Tests of the
credential itself (tests/security/) pass their own or none.
"""

from __future__ import annotations

TEST_ADMIN_TOKEN = "test-admin-token-0123456789abcdef"
ADMIN_HEADERS = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
