"""The admin REST API, with Apache BookKeeper's paths and JSON shapes."""

from bookie.http.api import build_app, build_autorecovery_app
from bookie.http.auth import AdminAuth
from bookie.http.backend import AdminBackend

__all__ = ["AdminAuth", "AdminBackend", "build_app", "build_autorecovery_app"]
