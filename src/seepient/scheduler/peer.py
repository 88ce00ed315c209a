"""Who is calling: the scheduler's decision on a TLS client certificate, made on every request."""

from __future__ import annotations

import datetime as dt
import hmac

from cryptography import x509

from seepient.crypto import CertificateRejected, CryptoFileError, load_certificates, verify_client_certificate
from seepient.protocol.errors import AuthError
from seepient.scheduler.config import SchedulerConfig


class PeerRefused(AuthError):
    """A caller the scheduler must answer with 403; the message says what was wrong with its certificate."""


def authorize_peer(
    peer_certificate: x509.Certificate | bytes | None, *, config: SchedulerConfig, now: dt.datetime
) -> str:
    """The caller's identity if its certificate chains to the configured CA and names an allowed
    identity; otherwise ``PeerRefused``. ``peer_certificate`` is the DER the TLS layer handed over.
    """
    if peer_certificate is None:
        raise PeerRefused("no client certificate was presented")
    try:
        trusted = load_certificates(config.mtls.ca_cert_path)
        identity = verify_client_certificate(peer_certificate, trusted=trusted, now=now)
    except (CertificateRejected, CryptoFileError) as exc:
        raise PeerRefused(str(exc)) from None
    # Every allowed identity is compared, in constant time, so timing tells nothing about the list.
    allowed = False
    for candidate in config.mtls.allowed_client_identities:
        allowed |= hmac.compare_digest(identity.encode(), candidate.encode())
    if not allowed:
        raise PeerRefused(f"client identity {identity!r} is not allowed by this scheduler")
    return identity
