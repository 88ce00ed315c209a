"""X.509 for worker mode: a private CA, the scheduler's server certificate, control-plane client
certificates carrying an identity, and the check that decides who a TLS peer is.

Identity rule: a client certificate names its identity twice, as the subject Common Name and as a
subjectAltName URI ``urn:seepient:identity:<name>``. The URI is authoritative (RFC 6125 moved
identity to subjectAltName); a certificate whose CN disagrees with it, or that has no such URI or more
than one, has no identity and is refused.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from cryptography.x509.verification import PolicyBuilder, Store, VerificationError

from seepient.crypto.files import CryptoFileError
from seepient.protocol.errors import RefusalError

IDENTITY_URI_PREFIX = "urn:seepient:identity:"
CONTROL_PLANE_IDENTITY = "seepient-control-plane"
SCHEDULER_IDENTITY = "seepient-scheduler"

_BACKDATE = dt.timedelta(minutes=5)


_KEY_USAGES = (
    "digital_signature content_commitment key_encipherment data_encipherment key_agreement key_cert_sign crl_sign "
    "encipher_only decipher_only"
).split()


def _key_usage(*granted: str) -> x509.KeyUsage:
    """The key usage extension allowing exactly ``granted`` (names of ``x509.KeyUsage``'s arguments)."""
    if not set(granted) <= set(_KEY_USAGES):
        raise ValueError(f"not key usages: {sorted(set(granted) - set(_KEY_USAGES))}")
    return x509.KeyUsage(**{usage: usage in granted for usage in _KEY_USAGES})


class CertificateRejected(RefusalError):
    """A peer certificate that does not chain to our CA or carries no usable identity; says which."""


@dataclass(frozen=True)
class IssuedCertificate:
    """A certificate with its private key (ECDSA P-256: what every TLS stack accepts)."""

    certificate: x509.Certificate
    private_key: ec.EllipticCurvePrivateKey

    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def private_key_pem(self) -> bytes:
        return self.private_key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )


def create_certificate_authority(
    common_name: str = "Seepient worker CA", *, valid_days: int = 3650, now: dt.datetime | None = None
) -> IssuedCertificate:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    start = (now or _utcnow()) - _BACKDATE
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(start + dt.timedelta(days=valid_days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage("key_cert_sign", "crl_sign"), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return IssuedCertificate(certificate, key)


def issue_server_certificate(
    ca: IssuedCertificate,
    hosts: Sequence[str],
    *,
    common_name: str = SCHEDULER_IDENTITY,
    valid_days: int = 825,
    now: dt.datetime | None = None,
) -> IssuedCertificate:
    """A TLS server certificate valid for each of ``hosts`` (DNS names or IP addresses)."""
    if not hosts:
        raise ValueError("a server certificate needs at least one host name or address")
    names: list[x509.GeneralName] = []
    for host in dict.fromkeys(hosts):
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(_check_dns_name(host)))
    return _issue_leaf(
        ca, common_name, names, ExtendedKeyUsageOID.SERVER_AUTH, valid_days=valid_days, now=now
    )


def issue_client_certificate(
    ca: IssuedCertificate, identity: str, *, valid_days: int = 825, now: dt.datetime | None = None
) -> IssuedCertificate:
    """A TLS client certificate whose identity (CN and ``urn:seepient:identity:`` URI) is ``identity``."""
    _check_identity(identity)
    names: list[x509.GeneralName] = [x509.UniformResourceIdentifier(IDENTITY_URI_PREFIX + identity)]
    return _issue_leaf(ca, identity, names, ExtendedKeyUsageOID.CLIENT_AUTH, valid_days=valid_days, now=now)


def certificate_identity(certificate: x509.Certificate) -> str:
    """The identity a client certificate names, by the rule in this module's docstring."""
    try:
        alt_names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        raise CertificateRejected("the certificate has no subjectAltName, so it names no identity") from None
    uris = [
        uri[len(IDENTITY_URI_PREFIX) :]
        for uri in alt_names.get_values_for_type(x509.UniformResourceIdentifier)
        if uri.startswith(IDENTITY_URI_PREFIX)
    ]
    if len(uris) != 1:
        raise CertificateRejected(
            f"the certificate must name exactly one {IDENTITY_URI_PREFIX}<name> URI; it names {len(uris)}"
        )
    identity = uris[0]
    common_names = [
        attribute.value for attribute in certificate.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    ]
    if common_names != [identity]:
        raise CertificateRejected(
            f"the certificate's common name {common_names!r} does not match its identity URI {identity!r}"
        )
    return identity


def verify_client_certificate(
    leaf: x509.Certificate | bytes,
    *,
    trusted: Sequence[x509.Certificate],
    now: dt.datetime | None = None,
) -> str:
    """Check that ``leaf`` (a certificate or its DER bytes) is a client certificate issued by one of
    ``trusted`` and valid at ``now``; return its identity.

    The TLS layer has already checked the chain when this runs behind ``ssl.CERT_REQUIRED``; it is
    checked again here so the decision does not depend on how the listener was configured.
    """
    if isinstance(leaf, bytes):
        try:
            leaf = x509.load_der_x509_certificate(leaf)
        except ValueError as exc:
            raise CertificateRejected(f"the peer certificate is not valid DER: {exc}") from None
    if not trusted:
        raise CertificateRejected("no trusted CA is configured")
    verifier = PolicyBuilder().store(Store(list(trusted))).time(now or _utcnow()).build_client_verifier()
    try:
        verifier.verify(leaf, [])
    except VerificationError as exc:
        raise CertificateRejected(
            f"the peer certificate does not verify against the configured CA: {exc}"
        ) from None
    return certificate_identity(leaf)


def load_certificates(path: Path) -> list[x509.Certificate]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CryptoFileError(f"cannot read certificate file {path}: {exc.strerror or exc}") from None
    try:
        certificates = x509.load_pem_x509_certificates(data)
    except ValueError as exc:
        raise CryptoFileError(f"{path}: not a PEM certificate file ({exc})") from None
    return certificates


def load_certificate_authority(certificate_path: Path, key_path: Path) -> IssuedCertificate:
    """The CA certificate and key written by ``seepient certs init`` (to issue more certificates)."""
    certificates = load_certificates(certificate_path)
    try:
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    except OSError as exc:
        raise CryptoFileError(f"cannot read CA key {key_path}: {exc.strerror or exc}") from None
    except (ValueError, TypeError) as exc:
        raise CryptoFileError(f"{key_path}: not a readable unencrypted PEM private key ({exc})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise CryptoFileError(f"{key_path}: expected an EC private key, found {type(key).__name__}")
    if certificates[0].public_key() != key.public_key():
        raise CryptoFileError(f"{key_path} is not the key of the certificate in {certificate_path}")
    return IssuedCertificate(certificates[0], key)


def _issue_leaf(
    ca: IssuedCertificate,
    common_name: str,
    alt_names: list[x509.GeneralName],
    usage: x509.ObjectIdentifier,
    *,
    valid_days: int,
    now: dt.datetime | None,
) -> IssuedCertificate:
    key = ec.generate_private_key(ec.SECP256R1())
    start = (now or _utcnow()) - _BACKDATE
    certificate = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(ca.certificate.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start)
        .not_valid_after(min(start + dt.timedelta(days=valid_days), ca.certificate.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage("digital_signature"), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca.private_key.public_key()), critical=False
        )
        .sign(ca.private_key, hashes.SHA256())
    )
    return IssuedCertificate(certificate, key)


def _check_identity(identity: str) -> None:
    if (
        not identity
        or len(identity) > 64
        or not all(c.isascii() and (c.isalnum() or c in "-_.") for c in identity)
    ):
        raise ValueError(
            f"identity {identity!r} must be 1-64 ASCII letters, digits, '-', '_' or '.' (it becomes a CN and a URI)"
        )


def _check_dns_name(host: str) -> str:
    labels = host.rstrip(".").split(".")
    if not host or not all(
        0 < len(label) <= 63 and all(c.isascii() and (c.isalnum() or c == "-") for c in label)
        for label in labels
    ):
        raise ValueError(f"scheduler host {host!r} is neither an IP address nor a valid DNS name")
    return host.rstrip(".").lower()


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
