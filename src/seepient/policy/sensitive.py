"""Where credentials and Seepient's own state live, and a matcher that cannot be fooled by case or Unicode tricks.

Locations are compared on *keys*: each path component with Unicode format characters removed
(zero-width joiners, BOMs, bidi marks), NFKC-normalised, case-folded and stripped of trailing dots
and spaces. On Linux ``~/.SSH``, ``~/.ｓｓｈ`` (full-width) and ``~/.s<U+200B>sh`` are different
directories, but on case-insensitive (macOS, Windows) or ignorable-code-point-folding (HFS+)
filesystems they open ``~/.ssh``, so refusing them everywhere costs nothing and closes that hole.
Cross-script look-alikes (a Cyrillic ``ѕ`` in ``.ѕsh``) are left alone: no common filesystem folds
them together, so such a name can never reach the real ``.ssh``.
"""

from __future__ import annotations

import functools
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path


def component_key(name: str) -> str:
    """The comparison key of one path component (see the module docstring for why)."""
    if name.isascii():
        key = name.lower()
        stripped = key.rstrip(" .")
        return stripped if stripped else key
    visible = "".join(ch for ch in name if unicodedata.category(ch) != "Cf")
    key = unicodedata.normalize("NFKC", visible).casefold()
    stripped = key.rstrip(" .")
    return stripped if stripped else key


@functools.lru_cache(maxsize=8192)
def path_keys(path: str) -> tuple[str, ...]:
    """Keys of every component of an absolute path (the root itself has none)."""
    return tuple(component_key(part) for part in path.split("/") if part)


@dataclass(frozen=True)
class SensitiveLocation:
    """One guarded location. ``parts`` are keys that may hold ``fnmatch`` wildcards.

    ``subtree`` guards everything below the location as well; ``writes_only`` leaves reads alone.
    """

    parts: tuple[str, ...]
    reason: str
    subtree: bool = True
    writes_only: bool = False
    shown: str = ""

    def matches(self, keys: Sequence[str]) -> bool:
        if len(keys) < len(self.parts) or (not self.subtree and len(keys) != len(self.parts)):
            return False
        return all(fnmatchcase(key, pattern) for key, pattern in zip(keys, self.parts, strict=False))

    def is_below(self, keys: Sequence[str]) -> bool:
        """True when ``keys`` is a strict ancestor of this location (a recursive read there reaches it)."""
        if len(keys) >= len(self.parts):
            return False
        return all(fnmatchcase(key, pattern) for key, pattern in zip(keys, self.parts, strict=False))


def _location(
    path: str, reason: str, *, subtree: bool = True, writes_only: bool = False
) -> SensitiveLocation:
    return SensitiveLocation(path_keys(path), reason, subtree=subtree, writes_only=writes_only, shown=path)


# Home-relative credential stores, guarded under the user's home, /root and every /home/* alike.
HOME_CREDENTIALS: tuple[tuple[str, str], ...] = (
    (".ssh", "SSH keys and known hosts"),
    (".aws", "AWS credentials"),
    (".gnupg", "GnuPG private keys"),
    (".kube", "Kubernetes cluster credentials"),
    (".docker", "Docker registry credentials and the rootless Docker socket"),
    (".config/gcloud", "Google Cloud credentials"),
    (".azure", "Azure credentials"),
    (".netrc", "login passwords for network services"),
    (".git-credentials", "stored git passwords and tokens"),
    (".pgpass", "PostgreSQL passwords"),
    (".npmrc", "npm registry tokens"),
    (".pypirc", "PyPI upload tokens"),
    (".config/gh", "GitHub CLI tokens"),
    (".config/hub", "GitHub tokens"),
    (".vault-token", "a HashiCorp Vault token"),
    (".terraform.d/credentials.tfrc.json", "Terraform Cloud tokens"),
    (".cargo/credentials", "Cargo registry tokens"),
    (".cargo/credentials.toml", "Cargo registry tokens"),
    (".gem/credentials", "RubyGems tokens"),
    (".password-store", "pass password store"),
    (".local/share/keyrings", "desktop keyrings"),
    (".bash_history", "shell history, which often holds pasted secrets"),
    (".zsh_history", "shell history, which often holds pasted secrets"),
)

# /etc stays readable apart from these: the rest of /etc is world-readable by design (os-release,
# hosts, passwd) and tools read it legitimately, while these hold password hashes, privilege rules
# and private keys that only root should see.
ETC_SECRETS: tuple[tuple[str, str, bool], ...] = (
    ("/etc/shadow", "password hashes", False),
    ("/etc/shadow-", "password hashes", False),
    ("/etc/gshadow", "group password hashes", False),
    ("/etc/gshadow-", "group password hashes", False),
    ("/etc/sudoers*", "sudo privilege rules", True),
    ("/etc/ssh/*key*", "SSH host keys", False),
    ("/etc/ssl/private", "TLS private keys", True),
    ("/etc/pki/tls/private", "TLS private keys", True),
    ("/etc/security/opasswd", "old password hashes", False),
    ("/etc/krb5.keytab", "Kerberos keys", False),
    ("/etc/kubernetes", "Kubernetes cluster credentials", True),
    ("/etc/letsencrypt", "TLS private keys", True),
    ("/etc/NetworkManager/system-connections", "network passwords", True),
    ("/etc/wireguard", "VPN keys", True),
    ("/etc/ipsec.secrets", "VPN secrets", False),
    ("/etc/ppp/*-secrets", "PPP passwords", False),
)

SYSTEM_SECRETS: tuple[tuple[str, str], ...] = (
    ("/proc/self", "the process's own environment, memory and open files"),
    ("/proc/thread-self", "the process's own environment, memory and open files"),
    ("/dev/fd", "the process's own open files"),
    ("/proc/*/environ", "another process's environment (API keys)"),
    ("/proc/*/task/*/environ", "another process's environment (API keys)"),
    ("/proc/*/mem", "another process's memory"),
    ("/proc/*/task/*/mem", "another process's memory"),
    ("/proc/*/root", "another process's root file system"),
    ("/proc/*/cwd", "another process's working directory"),
    ("/proc/*/fd", "another process's open files"),
    ("/proc/*/map_files", "another process's mapped files"),
    ("/proc/kcore", "kernel memory"),
    ("/dev/mem", "physical memory"),
    ("/dev/kmem", "kernel memory"),
    ("/dev/port", "I/O ports"),
    ("/dev/sd*", "a raw disk"),
    ("/dev/hd*", "a raw disk"),
    ("/dev/vd*", "a raw disk"),
    ("/dev/xvd*", "a raw disk"),
    ("/dev/nvme*", "a raw disk"),
    ("/dev/mmcblk*", "a raw disk"),
    ("/dev/dm-*", "a raw disk"),
    ("/dev/mapper", "a raw disk"),
    ("/dev/disk", "a raw disk"),
    ("/var/run/docker.sock", "the Docker socket (root on the host)"),
    ("/run/docker.sock", "the Docker socket (root on the host)"),
    ("/run/user/*/docker.sock", "the Docker socket (root on the host)"),
    ("/var/run/containerd", "the containerd socket (root on the host)"),
    ("/run/containerd", "the containerd socket (root on the host)"),
    ("/run/podman/podman.sock", "the Podman socket"),
    ("/run/user/*/podman", "the Podman socket"),
    ("/run/crio", "the CRI-O socket"),
)


def _spellings(path: Path) -> set[str]:
    """A location as written and as it resolves: a guarded directory reached through a symlink must match too."""
    absolute = os.path.normpath(str(path))
    return {absolute, os.path.realpath(absolute)}


HOME_RELATIVE: tuple[SensitiveLocation, ...] = tuple(
    SensitiveLocation(path_keys(rel), reason, shown=rel) for rel, reason in HOME_CREDENTIALS
)


def build_locations(
    *, home: Path, seepient_home: Path, workspace: Path
) -> tuple[LocationIndex, LocationIndex]:
    """The sensitive index and the self-protected index for one workspace, home and Seepient home."""
    sensitive: list[SensitiveLocation] = []
    for path, reason, subtree in ETC_SECRETS:
        sensitive.append(_location(path, reason, subtree=subtree))
    for path, reason in SYSTEM_SECRETS:
        sensitive.append(_location(path, reason))
    for spelling in _spellings(Path(f"/proc/{os.getpid()}")):
        sensitive.append(_location(spelling, "the Seepient process's own environment and memory"))
    sensitive.append(_location("/etc", "system configuration", writes_only=True))
    for spelling in _spellings(workspace):
        # git runs hooks and config-named programs (core.fsmonitor, core.hooksPath) outside any
        # sandbox the next time the user runs git, so a write there is code execution on the host.
        sensitive.append(
            _location(f"{spelling}/.git/hooks", "git hooks run outside the sandbox", writes_only=True)
        )
        sensitive.append(
            _location(f"{spelling}/.git/config", "git config can name programs git runs", writes_only=True)
        )
        # In a linked worktree (or a submodule) `.git` is a file naming the git directory: repointed, git would
        # run another repository's hooks and config on the host.
        sensitive.append(
            _location(
                f"{spelling}/.git",
                "the pointer to this checkout's git directory",
                subtree=False,
                writes_only=True,
            )
        )
        # A linked worktree's administrative files say where its repository and configuration are: repointed,
        # git in that worktree would read another config (and run what it names) or remove another directory.
        for name in ("commondir", "gitdir", "config.worktree"):
            sensitive.append(
                _location(
                    f"{spelling}/.git/worktrees/*/{name}",
                    "a worktree's git administrative files, which say where its config lives",
                    writes_only=True,
                )
            )
    seepient_reason = "Seepient's own state: settings, grants, keys and the audit log"
    for spelling in _spellings(seepient_home):
        sensitive.append(_location(spelling, seepient_reason))
    home_bases = sorted({"/root", "/home/*"} | _spellings(home))

    protected: list[SensitiveLocation] = []
    for spelling in _spellings(seepient_home):
        protected.append(_location(spelling, seepient_reason))
    for spelling in _spellings(workspace / ".seepient") | {f"{s}/.seepient" for s in _spellings(workspace)}:
        protected.append(_location(spelling, "the project's Seepient settings, grants and hooks"))
    return LocationIndex(sensitive, home_bases=home_bases), LocationIndex(protected)


def _component_pattern(part: str) -> str:
    return re.escape(part).replace(r"\*", "[^/]*").replace(r"\?", "[^/]")


@functools.lru_cache(maxsize=256)
def _compile(shapes: tuple[tuple[tuple[str, ...], bool], ...]) -> re.Pattern[str] | None:
    if not shapes:
        return None
    branches = []
    for index, (parts, subtree) in enumerate(shapes):
        body = "/".join(_component_pattern(part) for part in parts)
        tail = "(?:/.*)?" if subtree else ""
        branches.append(f"(?P<l{index}>/{body}{tail})")
    return re.compile("(?:" + "|".join(branches) + ")", re.DOTALL)


class _Table:
    def __init__(self, locations: list[SensitiveLocation]) -> None:
        self.locations = locations
        self.pattern = _compile(tuple((loc.parts, loc.subtree) for loc in locations))

    def match(self, key: str) -> SensitiveLocation | None:
        if self.pattern is None:
            return None
        found = self.pattern.fullmatch(key)
        if found is None or found.lastgroup is None:
            return None
        return self.locations[int(found.lastgroup[1:])]


class LocationIndex:
    """Guarded locations compiled into regular expressions, so a check costs a couple of matches per spelling.

    Credential stores under every home (``home_bases``, which may hold ``*``) share one table of
    home-relative locations that is compiled once per process.
    """

    def __init__(self, locations: Iterable[SensitiveLocation], *, home_bases: Iterable[str] = ()) -> None:
        own = list(locations)
        self._bases = tuple((base, path_keys(base)) for base in home_bases)
        self._read = _Table([loc for loc in own if not loc.writes_only])
        self._write = _Table(own)
        self._home = _Table(list(HOME_RELATIVE)) if self._bases else None
        alternatives = "|".join(
            "/" + "/".join(_component_pattern(k) for k in keys) for _, keys in self._bases
        )
        self._bases_pattern = (
            re.compile(f"(?P<base>{alternatives})(?P<rest>/.+)", re.DOTALL) if self._bases else None
        )
        self.locations: tuple[SensitiveLocation, ...] = (
            *own,
            *(
                SensitiveLocation(keys + rel.parts, rel.reason, shown=f"{base}/{rel.shown}")
                for base, keys in self._bases
                for rel in HOME_RELATIVE
            ),
        )

    def first_match(self, spellings: Iterable[str], *, write: bool) -> SensitiveLocation | None:
        table = self._write if write else self._read
        for spelling in spellings:
            keys = path_keys(spelling)
            found = table.match("/" + "/".join(keys))
            if found is not None:
                return found
            if self._home is None or self._bases_pattern is None:
                continue
            based = self._bases_pattern.fullmatch("/" + "/".join(keys))
            if based is None:
                continue
            relative = self._home.match(based.group("rest"))
            if relative is not None:
                base = based.group("base")
                return SensitiveLocation(
                    path_keys(base) + relative.parts, relative.reason, shown=f"{base}/{relative.shown}"
                )
        return None

    def first_below(self, spellings: Iterable[str], *, write: bool) -> SensitiveLocation | None:
        keyed = [path_keys(s) for s in spellings]
        for location in self.locations:
            if location.writes_only and not write:
                continue
            if any(location.is_below(keys) for keys in keyed):
                return location
        return None
