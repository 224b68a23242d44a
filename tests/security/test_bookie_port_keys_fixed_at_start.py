"""The TLS and authorization keys are read at start only: the admin API's configuration update refuses them by
name (the listener's TLS context and rule would not follow), and the bookie keeps them."""

from __future__ import annotations

from tests.support.java_bookies import BookieCluster
from tests.support.rest import get, put

PATH = "/api/v1/config/server_config"


async def test_tls_and_authorization_keys_cannot_be_changed_over_rest(secured_ours: BookieCluster) -> None:
    url = secured_ours.bookies[0].http_url + PATH
    for change in ({"authorizedRoles": "anyone"}, {"bookieAuthProviderFactoryClass": ""},
                   {"tlsClientAuthentication": False}, {"onlySecureClientsAllowed": True}):
        answer = await put(url, change)
        assert answer.status == 400, answer.text
        assert "read at start-up only" in answer.text and "TLS and authorization" in answer.text
    running = (await get(url)).json()
    assert running["authorizedRoles"] == "writer,bookie" and running["tlsClientAuthentication"] is True
