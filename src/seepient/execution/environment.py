"""The environment a sandboxed process gets: an allow-list of harmless variables, then a deny pattern as a
second line of defence so a secret never reaches model-authored code (DESIGN §4 invariant 1)."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "LANG",
        "LANGUAGE",
        "TERM",
        "COLORTERM",
        "TZ",
        "USER",
        "LOGNAME",
        "SHELL",
        "COLUMNS",
        "LINES",
        "NO_COLOR",
        "CLICOLOR",
        "PAGER",
        "EDITOR",
        "VISUAL",
        # Paths to CA bundles: not secrets, and without them TLS fails behind a corporate proxy when a
        # command is granted network.
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "GIT_SSL_CAINFO",
        "PIP_CERT",
    }
)
_ALLOWED_PREFIXES = ("LC_",)

# Matched against the upper-cased name. The allow-list already keeps these out; the patterns are here so
# that widening the allow-list later (or a variable such as LC_ACCESS_TOKEN) can never let a secret through.
_DENIED_PATTERNS = (
    "*_API_KEY",
    "*APIKEY*",
    "*_TOKEN",
    "*TOKEN*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*_KEY",
    "*_PAT",
    "*CREDENTIAL*",
    "*_AUTH",
    "*AUTH_SOCK*",
    "*SESSION_ID*",
    "SEEPIENT_*",
    "AWS_*",
    "AZURE_*",
    "GOOGLE_*",
    "GCLOUD_*",
    "GITHUB_*",
    "GH_*",
    "GITLAB_*",
    "OPENAI_*",
    "ANTHROPIC_*",
    "GEMINI_*",
    "HF_*",
    "HUGGING*",
    "DOCKER_*",
    "KUBECONFIG",
    "NPM_CONFIG_*",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "SSH_*",
    "GPG_*",
    "GNUPGHOME",
    "DBUS_*",
    "XDG_RUNTIME_DIR",
    "LD_*",
)
_DENIED = re.compile("|".join(fnmatch.translate(pattern) for pattern in _DENIED_PATTERNS))


def is_denied_name(name: str) -> bool:
    """True for a variable name that looks like it carries a secret or a handle on the host's services."""
    return _DENIED.match(name.upper()) is not None


def scrubbed_environment(environ: Mapping[str, str], *, home: str) -> dict[str, str]:
    """The allow-listed, non-secret part of ``environ`` with ``HOME`` set to ``home`` and a usable ``PATH``."""
    scrubbed: dict[str, str] = {}
    for name, value in environ.items():
        allowed = name in _ALLOWED_NAMES or name.startswith(_ALLOWED_PREFIXES)
        if allowed and not is_denied_name(name) and "\0" not in value:
            scrubbed[name] = value
    scrubbed.setdefault("PATH", DEFAULT_PATH)
    scrubbed["HOME"] = home
    return scrubbed
