"""Registration data (``BookieServiceInfoFormat``): what a bookie publishes and how a client reads it."""

from __future__ import annotations

import pytest
from bookie.metadata import service_info


def test_published_endpoints_read_back() -> None:
    data = service_info.encode("10.1.2.3", 3181, ("10.1.2.3", 8080))
    assert service_info.decode(data) == [
        service_info.Endpoint("bookie", "10.1.2.3", 3181, "bookie-rpc"),
        service_info.Endpoint("httpserver", "10.1.2.3", 8080, "http")]
    assert service_info.address_of("bk-0.bk.ns.svc.cluster.local:3181", data) == ("10.1.2.3", 3181)


def test_without_published_endpoints_the_id_is_the_address() -> None:
    for data in (None, b"", b"\xff\xff not a protobuf", service_info.encode("", 0)):
        assert service_info.address_of("10.0.0.7:3181", data) == ("10.0.0.7", 3181)


def test_an_id_that_is_no_address_and_has_no_endpoint_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"bk-0\.bk\.ns\.svc\.cluster\.local' is not host:port and no endpoint"):
        service_info.address_of("bk-0.bk.ns.svc.cluster.local", b"")
