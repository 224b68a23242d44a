"""The admin REST API, with Apache BookKeeper's paths and JSON shapes."""

from bookie.http.api import AdminBackend, build_app

__all__ = ["AdminBackend", "build_app"]
