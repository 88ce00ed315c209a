"""The one list of sensitive locations: what policy refuses to read or write and what the jail hides or makes
read-only. Policy (``policy/sensitive.py``) and the jail (``execution/sandbox/``) both read these tables, so a
location added here is refused by the path guard and invisible (or read-only) inside bubblewrap at once.

Each entry's ``access`` says what is guarded: ``"read"`` locations are refused for reading and writing and are
hidden in the jail; ``"write"`` locations are refused for writing only and are read-only in the jail (hiding
``/etc`` would break every program). Paths may hold ``*`` wildcards within one component.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Access = Literal["read", "write"]


@dataclass(frozen=True)
class SensitivePath:
    """One guarded location: ``path`` (absolute, home-relative or workspace-relative by the table holding it),
    why it is guarded, whether everything below it is guarded too, and whether reads are refused as well."""

    path: str
    reason: str
    access: Access = "read"
    subtree: bool = True


_HISTORY = "shell or program history, which often holds pasted secrets"

# Home-relative credential stores, guarded under the user's home, /root and every /home/* alike. The jail hides
# each home as a whole (``execution/sandbox/host_view.py``) and shows back only the tool installations on PATH,
# so this list matters where a home is visible anyway: inside those installations, when the workspace holds a
# home, and for the policy's own checks of reads outside the jail (read_file, grep).
HOME_CREDENTIALS: tuple[SensitivePath, ...] = (
    SensitivePath(".ssh", "SSH keys and known hosts"),
    SensitivePath(".aws", "AWS credentials"),
    SensitivePath(".gnupg", "GnuPG private keys"),
    SensitivePath(".kube", "Kubernetes cluster credentials"),
    SensitivePath(".docker", "Docker registry credentials and the rootless Docker socket"),
    SensitivePath(".config/gcloud", "Google Cloud credentials"),
    SensitivePath(".azure", "Azure credentials"),
    SensitivePath(".netrc", "login passwords for network services"),
    SensitivePath(".git-credentials", "stored git passwords and tokens"),
    SensitivePath(".config/git/credentials", "stored git passwords and tokens"),
    SensitivePath(".pgpass", "PostgreSQL passwords"),
    SensitivePath(".my.cnf", "MySQL passwords"),
    SensitivePath(".npmrc", "npm registry tokens"),
    SensitivePath(".yarnrc.yml", "Yarn registry tokens"),
    SensitivePath(".pypirc", "PyPI upload tokens"),
    SensitivePath(".config/pip", "pip index URLs, which may carry passwords"),
    SensitivePath(".config/gh", "GitHub CLI tokens"),
    SensitivePath(".config/hub", "GitHub tokens"),
    SensitivePath(".config/glab-cli", "GitLab CLI tokens"),
    SensitivePath(".config/op", "1Password CLI sessions"),
    SensitivePath(".config/rclone", "rclone remotes and their passwords"),
    SensitivePath(".config/doctl", "DigitalOcean tokens"),
    SensitivePath(".config/heroku", "Heroku tokens"),
    SensitivePath(".config/github-copilot", "GitHub Copilot tokens"),
    SensitivePath(".vault-token", "a HashiCorp Vault token"),
    SensitivePath(".terraform.d", "Terraform Cloud tokens"),
    SensitivePath(".cargo/credentials", "Cargo registry tokens"),
    SensitivePath(".cargo/credentials.toml", "Cargo registry tokens"),
    SensitivePath(".gem/credentials", "RubyGems tokens"),
    SensitivePath(".m2/settings.xml", "Maven repository passwords"),
    SensitivePath(".m2/settings-security.xml", "Maven's master password"),
    SensitivePath(".gradle/gradle.properties", "Gradle repository passwords"),
    SensitivePath(".nuget/NuGet/NuGet.Config", "NuGet feed passwords"),
    SensitivePath(".password-store", "pass password store"),
    SensitivePath(".local/share/keyrings", "desktop keyrings"),
    SensitivePath(".claude/.credentials.json", "Claude Code's login"),
    SensitivePath(".claude.json", "Claude Code's account state"),
    SensitivePath(".codex/auth.json", "Codex CLI's login"),
    SensitivePath(".gemini/oauth_creds.json", "Gemini CLI's login"),
    SensitivePath(".config/anthropic", "Anthropic API keys"),
    SensitivePath(".config/openai", "OpenAI API keys"),
    SensitivePath(".cache/huggingface/token", "a Hugging Face token"),
    SensitivePath(".huggingface/token", "a Hugging Face token"),
    SensitivePath(".mozilla", "browser profiles (cookies and saved passwords)"),
    SensitivePath(".config/google-chrome", "browser profiles (cookies and saved passwords)"),
    SensitivePath(".config/chromium", "browser profiles (cookies and saved passwords)"),
    SensitivePath(".bash_history", _HISTORY),
    SensitivePath(".zsh_history", _HISTORY),
    SensitivePath(".local/share/fish/fish_history", _HISTORY),
    SensitivePath(".python_history", _HISTORY),
    SensitivePath(".node_repl_history", _HISTORY),
    SensitivePath(".psql_history", _HISTORY),
    SensitivePath(".mysql_history", _HISTORY),
    SensitivePath(".sqlite_history", _HISTORY),
    SensitivePath(".lesshst", _HISTORY),
    SensitivePath(".viminfo", _HISTORY),
)

# /etc stays readable apart from these: the rest of /etc is world-readable by design (os-release, hosts, passwd)
# and tools read it legitimately, while these hold password hashes, privilege rules and private keys.
ETC_SECRETS: tuple[SensitivePath, ...] = (
    SensitivePath("/etc/shadow", "password hashes", subtree=False),
    SensitivePath("/etc/shadow-", "password hashes", subtree=False),
    SensitivePath("/etc/gshadow", "group password hashes", subtree=False),
    SensitivePath("/etc/gshadow-", "group password hashes", subtree=False),
    SensitivePath("/etc/sudoers*", "sudo privilege rules"),
    SensitivePath("/etc/ssh/*key*", "SSH host keys", subtree=False),
    SensitivePath("/etc/ssl/private", "TLS private keys"),
    SensitivePath("/etc/pki/tls/private", "TLS private keys"),
    SensitivePath("/etc/security/opasswd", "old password hashes", subtree=False),
    SensitivePath("/etc/krb5.keytab", "Kerberos keys", subtree=False),
    SensitivePath("/etc/kubernetes", "Kubernetes cluster credentials"),
    SensitivePath("/etc/letsencrypt", "TLS private keys"),
    SensitivePath("/etc/NetworkManager/system-connections", "network passwords"),
    SensitivePath("/etc/wireguard", "VPN keys"),
    SensitivePath("/etc/ipsec.secrets", "VPN secrets", subtree=False),
    SensitivePath("/etc/ppp/*-secrets", "PPP passwords", subtree=False),
    SensitivePath("/etc", "system configuration", access="write"),
)

# The jail gets its own /proc (a new PID namespace) and a minimal /dev, so these are out of its sight by
# construction; policy still refuses them by path for the tools that read on the host.
PROCESS_AND_DEVICE_SECRETS: tuple[SensitivePath, ...] = (
    SensitivePath("/proc/self", "the process's own environment, memory and open files"),
    SensitivePath("/proc/thread-self", "the process's own environment, memory and open files"),
    SensitivePath("/dev/fd", "the process's own open files"),
    SensitivePath("/proc/*/environ", "another process's environment (API keys)"),
    SensitivePath("/proc/*/task/*/environ", "another process's environment (API keys)"),
    SensitivePath("/proc/*/mem", "another process's memory"),
    SensitivePath("/proc/*/task/*/mem", "another process's memory"),
    SensitivePath("/proc/*/root", "another process's root file system"),
    SensitivePath("/proc/*/cwd", "another process's working directory"),
    SensitivePath("/proc/*/fd", "another process's open files"),
    SensitivePath("/proc/*/map_files", "another process's mapped files"),
    SensitivePath("/proc/kcore", "kernel memory"),
    SensitivePath("/dev/mem", "physical memory"),
    SensitivePath("/dev/kmem", "kernel memory"),
    SensitivePath("/dev/port", "I/O ports"),
    SensitivePath("/dev/sd*", "a raw disk"),
    SensitivePath("/dev/hd*", "a raw disk"),
    SensitivePath("/dev/vd*", "a raw disk"),
    SensitivePath("/dev/xvd*", "a raw disk"),
    SensitivePath("/dev/nvme*", "a raw disk"),
    SensitivePath("/dev/mmcblk*", "a raw disk"),
    SensitivePath("/dev/dm-*", "a raw disk"),
    SensitivePath("/dev/mapper", "a raw disk"),
    SensitivePath("/dev/disk", "a raw disk"),
    # Read on the host, these take what a person types or sees: another terminal's input (the approval answer
    # included), the virtual consoles' text, the keyboard.
    SensitivePath("/dev/tty", "the controlling terminal's input (what the person types)", subtree=False),
    SensitivePath("/dev/tty?*", "a terminal's or a serial line's input", subtree=False),
    SensitivePath("/dev/pts", "other terminals' input (what the person types)"),
    SensitivePath("/dev/console", "the system console's input", subtree=False),
    SensitivePath("/dev/vcs*", "the text on the virtual consoles' screens", subtree=False),
    SensitivePath("/dev/input", "keyboard and mouse input"),
)

# What a container runtime or a cloud mounts for the machine, and the user's session folder. The jail replaces
# /run with an empty tmpfs and sets no XDG_RUNTIME_DIR, so these are out of its sight; policy refuses them for
# the tools that read on the host (read_file, grep).
RUNTIME_SECRETS: tuple[SensitivePath, ...] = (
    SensitivePath("/run/secrets", "secrets a container runtime mounts (Kubernetes service-account tokens)"),
    SensitivePath(
        "/var/run/secrets", "secrets a container runtime mounts (Kubernetes service-account tokens)"
    ),
    SensitivePath("/run/user/*", "the user's session folder: keyring, D-Bus and agent sockets"),
    SensitivePath("/var/lib/cloud", "cloud-init user data, which often carries passwords and keys"),
    SensitivePath("/run/cloud-init", "cloud-init instance data, which often carries passwords and keys"),
)

# Sockets that give whoever connects control of the host. Filesystem sockets ignore network namespaces, so the
# jail hides them by path (and replaces /run as a whole with an empty tmpfs).
HOST_SOCKETS: tuple[SensitivePath, ...] = (
    SensitivePath("/var/run/docker.sock", "the Docker socket (root on the host)"),
    SensitivePath("/run/docker.sock", "the Docker socket (root on the host)"),
    SensitivePath("/run/user/*/docker.sock", "the Docker socket (root on the host)"),
    SensitivePath("/var/run/containerd", "the containerd socket (root on the host)"),
    SensitivePath("/run/containerd", "the containerd socket (root on the host)"),
    SensitivePath("/run/podman/podman.sock", "the Podman socket"),
    SensitivePath("/run/user/*/podman", "the Podman socket"),
    SensitivePath("/run/crio", "the CRI-O socket"),
    SensitivePath("/var/run/dbus/system_bus_socket", "the D-Bus system bus (systemd on the host)"),
)

# Workspace-relative: git's own control files. A write there is code execution on the host the next time
# anyone runs git here (hooks, config that names programs, pointers that say where the config lives). The jail
# binds the existing ones read-only and checks every repository in the workspace after each command
# (``execution/repository_guard.py``), since a file that does not exist yet cannot be bound.
GIT_CONTROL: tuple[SensitivePath, ...] = (
    SensitivePath(".git/hooks", "git hooks run outside the sandbox", access="write"),
    SensitivePath(".git/config", "git config can name programs git runs", access="write"),
    SensitivePath(".git/config.worktree", "git config can name programs git runs", access="write"),
    SensitivePath(".git/commondir", "it says where this repository's config and hooks live", access="write"),
    SensitivePath(
        ".git/info/attributes", "attributes choose the filter and diff programs git runs", access="write"
    ),
    SensitivePath(".git/objects/info/alternates", "it makes git read objects from elsewhere", access="write"),
    SensitivePath(".git", "the pointer to this checkout's git directory", access="write", subtree=False),
    SensitivePath(
        ".git/worktrees/*/commondir",
        "a worktree's git administrative files, which say where its config lives",
        access="write",
    ),
    SensitivePath(
        ".git/worktrees/*/gitdir",
        "a worktree's git administrative files, which say where its config lives",
        access="write",
    ),
    SensitivePath(
        ".git/worktrees/*/config.worktree",
        "a worktree's git administrative files, which say where its config lives",
        access="write",
    ),
)


# The same files in any git directory below the workspace, not only the top-level one: a nested checkout's
# ``.git``, a submodule's ``.git/modules/NAME``, a worktree's ``.git/worktrees/NAME`` and a bare repository git
# discovers on ``cd``. Each maps the path inside that git directory (its components, case-folded) to the reason.
GIT_DIR_CONTROL: dict[tuple[str, ...], str] = {
    ("config",): "git config can name programs git runs",
    ("config.worktree",): "git config can name programs git runs",
    ("commondir",): "it says where this repository's config and hooks live",
    ("gitdir",): "it says where this worktree's git directory lives",
    ("info", "attributes"): "attributes choose the filter and diff programs git runs",
    ("objects", "info", "alternates"): "it makes git read objects from elsewhere",
}
GIT_HOOKS_REASON = "git hooks run outside the sandbox"
GIT_POINTER_REASON = "the pointer to a checkout's git directory, which says where its config and hooks live"
GIT_DIR_MARKERS = ("head", "commondir")
"""A folder holding one of these (or both ``objects`` and ``refs``) is a git directory to git's discovery."""


def git_control_in(relative_keys: tuple[str, ...], inside_git_dir: bool) -> str | None:
    """Why ``relative_keys`` (a path's components below a folder, case-folded) is a control file of that
    folder when the folder is a git directory (``inside_git_dir``), or names the ``.git`` pointer; else None."""
    if relative_keys[-1:] == (".git",):
        return GIT_POINTER_REASON
    if not inside_git_dir or not relative_keys:
        return None
    if relative_keys[0] == "hooks":
        return GIT_HOOKS_REASON
    return GIT_DIR_CONTROL.get(relative_keys)


@dataclass(frozen=True)
class ForeignConfig:
    """A file (or folder) another program runs, or takes commands from, without being asked to run this
    project: on ``cd``, on opening the folder, on any git command, at shell start. ``path`` is matched below
    the workspace at any depth; ``program`` names what would run it."""

    path: str
    program: str
    when: str
    subtree: bool = False


FOREIGN_CONFIG: tuple[ForeignConfig, ...] = (
    ForeignConfig(".envrc", "direnv", "on cd into the folder"),
    ForeignConfig(".env.local.sh", "direnv setups that source it", "on cd into the folder"),
    ForeignConfig(".vscode/settings.json", "VS Code", "on opening the folder (interpreter and tool paths)"),
    ForeignConfig(".vscode/tasks.json", "VS Code", "on opening the folder (folderOpen tasks)"),
    ForeignConfig(".vscode/launch.json", "VS Code", "when the debugger starts"),
    ForeignConfig(".vscode/mcp.json", "VS Code", "on opening the folder (MCP servers)"),
    ForeignConfig(".devcontainer", "VS Code dev containers", "on opening the folder", subtree=True),
    ForeignConfig(
        ".idea", "JetBrains IDEs", "on opening the project (run configurations, tools)", subtree=True
    ),
    ForeignConfig(".zed", "Zed", "on opening the folder (tasks, language servers)", subtree=True),
    ForeignConfig(".cursor", "Cursor", "on opening the folder (MCP servers, rules)", subtree=True),
    ForeignConfig(".mcp.json", "Claude Code and other MCP clients", "on starting in the folder"),
    ForeignConfig(".claude", "Claude Code", "on starting in the folder (hooks, commands)", subtree=True),
    ForeignConfig(".gemini", "Gemini CLI", "on starting in the folder", subtree=True),
    ForeignConfig(".codex", "Codex CLI", "on starting in the folder", subtree=True),
    ForeignConfig(".gitmodules", "git", "on clone, checkout and submodule commands"),
    ForeignConfig(".pre-commit-config.yaml", "pre-commit's git hooks", "on git commit"),
    ForeignConfig(".husky", "husky's git hooks", "on git commit and push", subtree=True),
    ForeignConfig("lefthook.yml", "lefthook's git hooks", "on git commit and push"),
    ForeignConfig(".lefthook.yml", "lefthook's git hooks", "on git commit and push"),
    ForeignConfig(".bashrc", "bash", "at shell start"),
    ForeignConfig(".bash_profile", "bash", "at login shell start"),
    ForeignConfig(".bash_login", "bash", "at login shell start"),
    ForeignConfig(".bash_logout", "bash", "at login shell exit"),
    ForeignConfig(".profile", "sh", "at login shell start"),
    ForeignConfig(".zshrc", "zsh", "at shell start"),
    ForeignConfig(".zshenv", "zsh", "at every zsh start"),
    ForeignConfig(".zprofile", "zsh", "at login shell start"),
    ForeignConfig(".zlogin", "zsh", "at login shell start"),
    ForeignConfig(".zlogout", "zsh", "at login shell exit"),
    ForeignConfig(".config/fish/config.fish", "fish", "at shell start"),
    ForeignConfig(".exrc", "vi and vim with 'exrc' set", "on starting the editor in the folder"),
    ForeignConfig(".nvim.lua", "Neovim with 'exrc' set", "on starting the editor in the folder"),
    ForeignConfig(".nvimrc", "Neovim with 'exrc' set", "on starting the editor in the folder"),
)


_FOREIGN_FILES = {entry.path: entry for entry in FOREIGN_CONFIG if not entry.subtree}
_FOREIGN_TREES = {entry.path: entry for entry in FOREIGN_CONFIG if entry.subtree}
FOREIGN_FILE_NAMES = frozenset(path.rsplit("/", 1)[-1] for path in _FOREIGN_FILES)
"""The last component of every single-file entry: a walk looks closer only at names in this set."""
FOREIGN_TREE_NAMES = frozenset(_FOREIGN_TREES)


def foreign_config_for(relative: str, key: Callable[[str], str] = str.lower) -> ForeignConfig | None:
    """The entry a workspace-relative path falls under, when another program runs it. Components are compared
    on ``key`` (policy passes its case- and Unicode-folding key, since a case-insensitive file system opens
    ``.ENVRC`` as ``.envrc``)."""
    parts = [key(part) for part in relative.split("/") if part and part != "."]
    for length in (3, 2, 1):
        if len(parts) >= length:
            found = _FOREIGN_FILES_BY_KEY.get("/".join(parts[-length:]))
            if found is not None:
                return found
    for part in parts:
        found = _FOREIGN_TREES_BY_KEY.get(part)
        if found is not None:
            return found
    return None


_FOREIGN_FILES_BY_KEY = {path.lower(): entry for path, entry in _FOREIGN_FILES.items()}
_FOREIGN_TREES_BY_KEY = {path.lower(): entry for path, entry in _FOREIGN_TREES.items()}
