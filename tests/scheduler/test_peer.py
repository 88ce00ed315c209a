"""The scheduler's decision on a client certificate: our CA and an allowed identity, nothing else."""

from __future__ import annotations

import datetime as dt

import pytest
from cryptography.hazmat.primitives import serialization

from seepient.crypto import (
    create_certificate_authority,
    issue_client_certificate,
    issue_server_certificate,
    load_certificate_authority,
)
from seepient.scheduler import PeerRefused, authorize_peer
from tests.scheduler.conftest import Deployed


def _now() -> dt.datetime:
    """The time of each check, not of test collection: a long suite can reach these tests many minutes later."""
    return dt.datetime.now(dt.UTC)


def _our_ca(deployed: Deployed):
    return load_certificate_authority(deployed.directory / "ca.pem", deployed.directory / "ca-key.pem")


def _der(certificate) -> bytes:
    return certificate.public_bytes(serialization.Encoding.DER)


def test_the_control_plane_certificate_from_certs_init_is_allowed(deployed: Deployed) -> None:
    from cryptography import x509

    pem = (deployed.directory / "control-plane.pem").read_bytes()
    certificate = x509.load_pem_x509_certificate(pem)
    assert authorize_peer(_der(certificate), config=deployed.config, now=_now()) == "seepient-control-plane"


def test_a_client_certificate_from_another_ca_is_refused(deployed: Deployed) -> None:
    impostor = issue_client_certificate(create_certificate_authority(), "seepient-control-plane")
    with pytest.raises(PeerRefused, match="does not verify against the configured CA"):
        authorize_peer(_der(impostor.certificate), config=deployed.config, now=_now())


def test_our_ca_with_another_identity_is_identified_and_refused(deployed: Deployed) -> None:
    other = issue_client_certificate(_our_ca(deployed), "seepient-intern")
    with pytest.raises(PeerRefused, match="'seepient-intern' is not allowed"):
        authorize_peer(_der(other.certificate), config=deployed.config, now=_now())


def test_the_schedulers_own_server_certificate_is_no_client_identity(deployed: Deployed) -> None:
    server = issue_server_certificate(_our_ca(deployed), ["localhost"])
    with pytest.raises(PeerRefused, match="EKU"):
        authorize_peer(_der(server.certificate), config=deployed.config, now=_now())


def test_an_expired_client_certificate_and_a_missing_one_are_refused(deployed: Deployed) -> None:
    old = issue_client_certificate(
        _our_ca(deployed), "seepient-control-plane", valid_days=1, now=_now() - dt.timedelta(days=3)
    )
    with pytest.raises(PeerRefused, match="does not verify"):
        authorize_peer(_der(old.certificate), config=deployed.config, now=_now())
    with pytest.raises(PeerRefused, match="no client certificate"):
        authorize_peer(None, config=deployed.config, now=_now())
    with pytest.raises(PeerRefused, match="not valid DER"):
        authorize_peer(b"garbage", config=deployed.config, now=_now())
