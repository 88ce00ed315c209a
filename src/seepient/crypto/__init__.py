"""Keys, signatures and certificates for worker mode: Ed25519 over RFC 8785 canonical JSON, and a
private X.509 CA whose client certificates carry an identity."""

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
