"""The admin REST API, with Apache BookKeeper's paths and JSON shapes."""

from bookie.http.api import build_app
from bookie.http.backend import AdminBackend

__all__ = ["AdminBackend", "build_app"]
