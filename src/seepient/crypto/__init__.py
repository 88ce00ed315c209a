"""Keys, signatures and certificates for worker mode: Ed25519 over RFC 8785 canonical JSON, and a
private X.509 CA whose client certificates carry an identity.

The names load on first use: the audit log signs with the Ed25519 keys alone, and the X.509 half (about
70 ms of imports) is for worker mode and ``seepient certs``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seepient._lazy_exports import lazy_exports

if TYPE_CHECKING:
    from seepient.crypto.certificates import (
        CONTROL_PLANE_IDENTITY,
        CertificateRejected,
        IssuedCertificate,
        certificate_identity,
        create_certificate_authority,
        issue_client_certificate,
        issue_server_certificate,
        load_certificate_authority,
        load_certificates,
        verify_client_certificate,
    )
    from seepient.crypto.deployment import Deployment, init_deployment
    from seepient.crypto.dispatch import (
        ResultRejected,
        create_dispatch,
        sign_dispatch_result,
        verify_dispatch_result,
    )
    from seepient.crypto.files import CryptoFileError
    from seepient.crypto.signing import (
        canonical_bytes,
        generate_signing_key,
        key_id_for,
        load_signing_key,
        load_verify_key,
        save_signing_key,
        save_verify_key,
        sign_fields,
        signature_valid,
    )

_HOMES = {
    "seepient.crypto.certificates": (
        "CONTROL_PLANE_IDENTITY",
        "CertificateRejected",
        "IssuedCertificate",
        "certificate_identity",
        "create_certificate_authority",
        "issue_client_certificate",
        "issue_server_certificate",
        "load_certificate_authority",
        "load_certificates",
        "verify_client_certificate",
    ),
    "seepient.crypto.deployment": ("Deployment", "init_deployment"),
    "seepient.crypto.dispatch": (
        "ResultRejected",
        "create_dispatch",
        "sign_dispatch_result",
        "verify_dispatch_result",
    ),
    "seepient.crypto.files": ("CryptoFileError",),
    "seepient.crypto.signing": (
        "canonical_bytes",
        "generate_signing_key",
        "key_id_for",
        "load_signing_key",
        "load_verify_key",
        "save_signing_key",
        "save_verify_key",
        "sign_fields",
        "signature_valid",
    ),
}

__getattr__ = lazy_exports(__name__, {name: module for module, names in _HOMES.items() for name in names})

__all__ = [
    "CONTROL_PLANE_IDENTITY",
    "CertificateRejected",
    "CryptoFileError",
    "Deployment",
    "IssuedCertificate",
    "ResultRejected",
    "canonical_bytes",
    "certificate_identity",
    "create_certificate_authority",
    "create_dispatch",
    "generate_signing_key",
    "init_deployment",
    "issue_client_certificate",
    "issue_server_certificate",
    "key_id_for",
    "load_certificate_authority",
    "load_certificates",
    "load_signing_key",
    "load_verify_key",
    "save_signing_key",
    "save_verify_key",
    "sign_dispatch_result",
    "sign_fields",
    "signature_valid",
    "verify_client_certificate",
    "verify_dispatch_result",
]
