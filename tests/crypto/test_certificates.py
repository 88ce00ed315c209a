"""The private CA: who a peer certificate says it is, and which certificates we refuse to believe."""

from __future__ import annotations

import datetime as dt
import ipaddress

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import NameOID
from cryptography.x509.verification import PolicyBuilder, Store

from seepient.crypto import (
    CertificateRejected,
    certificate_identity,
    create_certificate_authority,
    issue_client_certificate,
    issue_server_certificate,
    verify_client_certificate,
)


def test_a_client_certificate_names_its_identity_in_cn_and_san_uri() -> None:
    ca = create_certificate_authority()
    client = issue_client_certificate(ca, "seepient-control-plane")
    assert verify_client_certificate(client.certificate, trusted=[ca.certificate]) == "seepient-control-plane"
    alt = client.certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert alt.get_values_for_type(x509.UniformResourceIdentifier) == [
        "urn:seepient:identity:seepient-control-plane"
    ]


def test_another_cas_certificate_with_the_right_identity_is_rejected() -> None:
    ours, theirs = create_certificate_authority(), create_certificate_authority()
    impostor = issue_client_certificate(theirs, "seepient-control-plane")
    assert certificate_identity(impostor.certificate) == "seepient-control-plane"
    with pytest.raises(CertificateRejected, match="does not verify"):
        verify_client_certificate(impostor.certificate, trusted=[ours.certificate])


def test_a_certificate_whose_cn_disagrees_with_its_uri_has_no_identity() -> None:
    ca = create_certificate_authority()
    genuine = issue_client_certificate(ca, "seepient-intern")
    # Same key, CA and SAN, but a CN that claims the control plane: the CN must not win.
    forged = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "seepient-control-plane")]))
        .issuer_name(ca.certificate.subject)
        .public_key(genuine.private_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(genuine.certificate.not_valid_before_utc)
        .not_valid_after(genuine.certificate.not_valid_after_utc)
    )
    for extension in genuine.certificate.extensions:
        forged = forged.add_extension(extension.value, critical=extension.critical)
    certificate = forged.sign(ca.private_key, hashes.SHA256())
    with pytest.raises(CertificateRejected, match="does not match its identity URI"):
        verify_client_certificate(certificate, trusted=[ca.certificate])


def test_the_server_certificate_is_valid_for_each_host_and_not_others() -> None:
    ca = create_certificate_authority()
    server = issue_server_certificate(ca, ["localhost", "127.0.0.1", "sched.internal", "10.0.0.7"])
    store = Store([ca.certificate])
    for name in (x509.DNSName("localhost"), x509.DNSName("sched.internal")):
        PolicyBuilder().store(store).build_server_verifier(name).verify(server.certificate, [])
    for address in ("127.0.0.1", "10.0.0.7"):
        verifier = (
            PolicyBuilder().store(store).build_server_verifier(x509.IPAddress(ipaddress.ip_address(address)))
        )
        verifier.verify(server.certificate, [])
    with pytest.raises(x509.verification.VerificationError):
        PolicyBuilder().store(store).build_server_verifier(x509.DNSName("evil.example")).verify(
            server.certificate, []
        )


def test_bad_names_are_refused_before_anything_is_issued() -> None:
    ca = create_certificate_authority()
    with pytest.raises(ValueError, match="neither an IP address nor a valid DNS name"):
        issue_server_certificate(ca, ["bad host"])
    with pytest.raises(ValueError, match="identity"):
        issue_client_certificate(ca, "a/b")


def test_verification_uses_the_given_time() -> None:
    ca = create_certificate_authority()
    client = issue_client_certificate(ca, "x")
    later = dt.datetime.now(dt.UTC) + dt.timedelta(days=900)
    with pytest.raises(CertificateRejected):
        verify_client_certificate(client.certificate, trusted=[ca.certificate], now=later)
