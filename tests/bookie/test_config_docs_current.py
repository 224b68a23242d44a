"""docs/configuration.md is generated from the configuration model and must be current: a key added or changed
in bookie.config.BookieConfig without regenerating the page fails here."""

from __future__ import annotations

from bookie import config_docs


def test_the_configuration_page_is_current() -> None:
    assert config_docs.main(["--check"]) == 0, "run: python -m bookie.config_docs"


def test_every_key_is_on_the_page() -> None:
    page = config_docs.render()
    for key in ("tlsProviderFactoryClass", "tlsKeyStoreType", "bookieAuthProviderFactoryClass", "authorizedRoles",
                "journalDirectories", "majorCompactionWindow"):
        assert f"| `{key}` |" in page
