"""Privileged and kernel-level commands: what runs with raised rights, gives a program rights, or changes the
machine below the user (kernel, firewall, routes, mounts, services, users, boot, clock) — the class policy
denies in every mode unless an allow rule in the user, managed or ``--config`` settings covers the command.

Each rule reads the argv words the shell analyser unquoted and answers with what would happen, in words a
person can judge; read-only forms (``ip addr``, ``iptables -L``, ``mount`` alone, ``systemctl status``) are
left out. Nothing here touches the disk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seepient.shell.interpretation import Word

WRAPPER_REASONS = {
    "sudo": "sudo runs a command as another user, root by default",
    "doas": "doas runs a command as another user, root by default",
    "su": "su runs a shell as another user, root by default",
    "pkexec": "pkexec runs a command as root through polkit",
    "runuser": "runuser runs a command as another user (only root can)",
    "chroot": "chroot runs a command inside another root file system (only root can)",
    "unshare": "unshare runs a command in new kernel namespaces",
    "nsenter": "nsenter runs a command inside another process's kernel namespaces",
}

_FIXED = {
    **dict.fromkeys(("insmod", "rmmod"), "{name} loads or removes code in the running kernel"),
    "kexec": "kexec loads or boots another kernel",
    "bpftrace": "bpftrace runs a program inside the kernel",
    "umount": "umount detaches a mounted file system",
    **dict.fromkeys(("swapon", "swapoff"), "{name} changes the machine's swap space"),
    "losetup": "losetup attaches files as block devices",
    **dict.fromkeys(("pivot_root", "switch_root"), "{name} changes the machine's root file system"),
    "setcap": "setcap gives a program kernel capabilities (root's powers, one by one)",
    **dict.fromkeys(
        "useradd usermod userdel groupadd groupmod groupdel passwd chpasswd chage gpasswd newusers vipw vigr "
        "visudo sudoedit chsh chfn".split(),
        "{name} changes the system's users, groups, passwords or sudo rules",
    ),
    "newgrp": "newgrp starts a shell with another group's rights",
    **dict.fromkeys(("setpriv", "capsh"), "{name} runs a command with changed privileges"),
    "setenforce": "setenforce switches SELinux enforcement",
    **dict.fromkeys(("semanage", "setsebool"), "{name} changes the SELinux policy"),
    **dict.fromkeys(
        ("apparmor_parser", "aa-disable", "aa-complain", "aa-enforce"),
        "{name} changes the AppArmor profiles the kernel enforces",
    ),
    "auditctl": "auditctl changes the kernel's audit rules",
    **dict.fromkeys(
        ("efibootmgr", "grub-install", "update-grub", "grub-mkconfig"), "{name} changes how the machine boots"
    ),
    **dict.fromkeys(
        ("iptables-restore", "ip6tables-restore", "iptables-apply", "iptables-legacy-restore"),
        "{name} replaces the machine's firewall rules",
    ),
    **dict.fromkeys(("ifup", "ifdown"), "{name} brings a network interface up or down"),
}

_IPTABLES = frozenset(
    "iptables ip6tables iptables-legacy ip6tables-legacy iptables-nft ip6tables-nft ebtables arptables".split()
)
# iptables commands that change rules (-L, -S and -C only read them); short ones may be bundled (-vF).
_IPTABLES_CHANGES = frozenset(
    "--append --delete --insert --replace --flush --zero --new-chain --new --delete-chain --policy "
    "--rename-chain".split()
)
_IPTABLES_CHANGE_LETTERS = frozenset("ADIRFZNXPE")
_IP_READ_VERBS = frozenset({"show", "list", "lst", "ls", "sh", "get", "help"})
# ip's own options may be abbreviated (ip matches prefixes): these take a value, and -batch reads commands.
_IP_VALUE_OPTIONS = ("-netns", "-loops", "-rcvbuf", "-family")
_IP_NESTED_OBJECTS = frozenset({"xfrm", "mptcp", "ioam", "sr", "nexthop", "stats"})
_SYSTEMCTL_READ = frozenset(
    "status show cat help list-units list-automounts list-paths list-sockets list-timers list-unit-files "
    "list-dependencies list-jobs list-machines is-active is-enabled is-failed is-system-running get-default "
    "show-environment".split()
)
_SYSTEMCTL_VALUES = frozenset(
    "-t --type -p --property -P -H --host -M --machine -n --lines -o --output -s --signal --state --kill-whom "
    "--kill-value --root --image --image-policy --what --job-mode --boot-loader-menu --boot-loader-entry "
    "--reboot-argument --timestamp --message --preset-mode --check-inhibitors --drop-in --when".split()
)
_SYSCTL_WRITES = frozenset({"-w", "--write", "-p", "--load", "-f", "--system"})
_MOUNT_READ_FLAGS = frozenset({"-l", "--show-labels", "-v", "--verbose", "-h", "--help", "-V", "--version"})
_MODPROBE_READ = frozenset(
    {"-n", "--dry-run", "-c", "--showconfig", "--show-depends", "-D", "-R", "--resolve-alias"}
)
_JOURNAL_CHANGES = frozenset(
    "--rotate --flush --sync --relinquish-var --smart-relinquish-var --setup-keys --update-catalog".split()
)
_HWCLOCK_SETS = frozenset("--set --systohc -w --hctosys -s --adjust -a --systz".split())
_ETHTOOL_READ = frozenset(
    "-i --driver -S --statistics -k --show-features --show-offload -g --show-ring -l --show-channels -a "
    "--show-pause -c --show-coalesce -T --show-time-stamping -m --module-info --dump-module-eeprom -e "
    "--eeprom-dump -d --register-dump -P --show-permaddr --show-eee --show-fec --show-priv-flags -h --help "
    "--version".split()
)
_FIREWALLD_CHANGES = (
    "--add",
    "--remove",
    "--change",
    "--set",
    "--new",
    "--delete",
    "--reload",
    "--complete-reload",
    "--runtime-to-permanent",
    "--panic",
    "--lockdown",
    "--load",
    "--reset",
    "--passthrough",
)
_OCTAL = re.compile(r"[0-7]+")
_SETID_SYMBOLIC = re.compile(r"[+=][rwxXt]*s")


def is_setid_mode(mode: str) -> bool:
    """Whether a chmod mode (``4755``, ``u+s``, ``g=rxs``) sets the setuid or setgid bit."""
    if _OCTAL.fullmatch(mode):
        return int(mode, 8) & 0o6000 != 0
    return _SETID_SYMBOLIC.search(mode) is not None


def _is_root(spec: str) -> bool:
    """Whether a user or group name (``root``, ``0``, ``+0``) is root's."""
    spec = spec.removeprefix("+")
    return spec == "root" or (spec.isdigit() and int(spec) == 0)


def _names_root(owner_spec: str, *, group_only: bool = False) -> bool:
    if group_only:
        return _is_root(owner_spec)
    owner, _, group = owner_spec.replace(".", ":", 1).partition(":")
    return _is_root(owner) or _is_root(group)


def _texts(args: Sequence[Word]) -> list[str]:
    return [w.text for w in args]


def _positionals(texts: Sequence[str], values: frozenset[str] = frozenset()) -> list[str]:
    """The words that are not options, skipping the value after each option of ``values``."""
    found: list[str] = []
    skip = False
    for text in texts:
        if skip:
            skip = False
            continue
        if text == "--":
            continue
        if text.startswith("-") and text != "-":
            skip = text in values
            continue
        found.append(text)
    return found


def _chmod(name: str, texts: list[str]) -> str | None:
    if any(t == "--reference" or t.startswith("--reference=") for t in texts):
        return f"{name} --reference copies the mode of another file, setuid and setgid bits included"
    # The mode is the first word that is not an option ('-s' style modes only ever remove bits).
    positional = _positionals(texts)
    if positional and is_setid_mode(positional[0]):
        return f"chmod {positional[0]} makes a program run with its owner's or group's rights (setuid/setgid)"
    return None


def _chown(name: str, texts: list[str]) -> str | None:
    if any(t == "--reference" or t.startswith("--reference=") for t in texts):
        return f"{name} --reference copies the owner of another file, which may be root"
    positional = _positionals(texts, frozenset({"--from"}))
    if positional and _names_root(positional[0], group_only=name == "chgrp"):
        return f"{name} {positional[0]} hands files to root"
    return None


def _install(name: str, texts: list[str]) -> str | None:
    for option, value in _short_and_long(texts, "mogSt", ("--mode", "--owner", "--group")):
        if option in ("-m", "--mode") and is_setid_mode(value):
            return f"install {option} {value} installs a program that runs with its owner's rights"
        if option in ("-o", "--owner", "-g", "--group") and _is_root(value):
            return f"install {option} {value} installs files owned by root"
    return None


def _short_and_long(
    texts: Sequence[str], short_values: str, long_values: tuple[str, ...]
) -> list[tuple[str, str]]:
    """``(option, value)`` for every option that takes a value, bundled short ones included (``-Dm4755``)."""
    found: list[tuple[str, str]] = []
    index = 0
    while index < len(texts):
        text = texts[index]
        index += 1
        if text == "--":
            break
        if text.startswith("--"):
            key, eq, value = text.partition("=")
            if key in long_values:
                if not eq and index < len(texts):
                    value, index = texts[index], index + 1
                found.append((key, value))
            continue
        if not text.startswith("-") or text == "-":
            continue
        for at, letter in enumerate(text[1:], start=1):
            if letter in short_values:
                value = text[at + 1 :]
                if not value and index < len(texts):
                    value, index = texts[index], index + 1
                found.append((f"-{letter}", value))
                break
    return found


def _iptables(name: str, texts: list[str]) -> str | None:
    for text in texts:
        long = text.split("=", 1)[0]
        changes = long in _IPTABLES_CHANGES or (
            text.startswith("-")
            and not text.startswith("--")
            and bool(set(text[1:]) & _IPTABLES_CHANGE_LETTERS)
        )
        if changes:
            return f"{name} {text} changes the machine's firewall rules"
    return None


def _nft(name: str, texts: list[str]) -> str | None:
    if "-c" in texts or "--check" in texts:
        return None
    if any(t in ("-f", "--file", "-i", "--interactive") or t.startswith("--file=") for t in texts):
        return "nft -f/-i reads firewall changes from a file or standard input"
    words = _positionals(texts, frozenset({"-I", "--includepath", "-D", "--define"}))
    if words and words[0] in ("list", "describe", "monitor", "help"):
        return None
    return "nft changes the machine's firewall rules" if words else None


def _ip(name: str, texts: list[str]) -> str | None:
    index = 0
    while index < len(texts) and texts[index].startswith("-"):
        option = texts[index]
        short = "-" + option.lstrip("-").split("=", 1)[0]
        if len(short) > 1 and "-batch".startswith(short):
            return f"ip {option} runs network changes from a file"
        takes_value = short != "-force" and any(
            len(short) > 1 and full.startswith(short) for full in _IP_VALUE_OPTIONS
        )
        index += 2 if takes_value and "=" not in option else 1
    rest = texts[index:]
    if not rest:
        return None
    subject = rest[0]
    if subject in ("monitor", "help"):
        return None
    verb_at = 2 if subject in _IP_NESTED_OBJECTS and len(rest) > 2 else 1
    verb = rest[verb_at] if len(rest) > verb_at else ""
    if verb.startswith("-") or verb in _IP_READ_VERBS or (not verb and verb_at == 1):
        return None
    if subject in _IP_NESTED_OBJECTS and len(rest) == 2:
        return None
    return f"ip {' '.join(rest[: verb_at + 1])} changes the machine's network configuration"


def _tc(name: str, texts: list[str]) -> str | None:
    if set(texts) & {"-b", "-batch", "--batch"}:
        return "tc -batch runs traffic-control changes from a file"
    words = _positionals(texts, frozenset({"-n", "-netns"}))
    if len(words) < 2 or words[1] in ("show", "list", "ls", "help") or words[0] == "monitor":
        return None
    return f"tc {' '.join(words[:2])} changes how the machine's network queues traffic"


def _ifconfig(name: str, texts: list[str]) -> str | None:
    if len(_positionals(texts)) > 1:
        return "ifconfig with settings changes a network interface"
    return None


def _route(name: str, texts: list[str]) -> str | None:
    if set(texts) & {"add", "del", "delete", "flush"}:
        return "route changes the machine's routing table"
    return None


def _arp(name: str, texts: list[str]) -> str | None:
    if set(texts) & {"-s", "-d", "--set", "--delete", "-f", "--file"}:
        return "arp changes the machine's address-resolution table"
    return None


def _ethtool(name: str, texts: list[str]) -> str | None:
    options = [t for t in texts if t.startswith("-")]
    if options and options[0] not in _ETHTOOL_READ:
        return f"ethtool {options[0]} changes a network device's settings"
    return None


def _brctl(name: str, texts: list[str]) -> str | None:
    words = _positionals(texts)
    if words and not words[0].startswith("show"):
        return f"brctl {words[0]} changes the machine's network bridges"
    return None


def _ufw(name: str, texts: list[str]) -> str | None:
    words = _positionals(texts)
    if words and words[0] not in ("status", "show", "version"):
        return f"ufw {words[0]} changes the machine's firewall"
    return None


def _firewall_cmd(name: str, texts: list[str]) -> str | None:
    changing = next((t for t in texts if t.startswith(_FIREWALLD_CHANGES)), None)
    return f"firewall-cmd {changing} changes the machine's firewall" if changing else None


def _sysctl(name: str, texts: list[str]) -> str | None:
    written = next((t for t in texts if t in _SYSCTL_WRITES or t.startswith("--load=")), None)
    if written is not None:
        return f"sysctl {written} changes the running kernel's settings"
    setting = next((t for t in texts if "=" in t and not t.startswith("-")), None)
    if setting is not None:
        return f"sysctl {setting} changes the running kernel's settings"
    return None


def _mount(name: str, texts: list[str]) -> str | None:
    after_type = False
    for text in texts:
        if after_type:
            after_type = False
            continue
        if text in ("-t", "--types"):
            after_type = True
            continue
        if text.startswith("--types=") or text in _MOUNT_READ_FLAGS:
            continue
        return "mount attaches a file system (or changes how one is mounted)"
    return None


def _modprobe(name: str, texts: list[str]) -> str | None:
    if set(texts) & _MODPROBE_READ:
        return None
    return "modprobe loads or removes code in the running kernel"


def _systemctl(name: str, texts: list[str]) -> str | None:
    remote = any(t.split("=", 1)[0] in ("-H", "--host", "-M", "--machine") for t in texts)
    if "--user" in texts and not remote:
        return None
    verbs = _positionals(texts, _SYSTEMCTL_VALUES)
    verb = verbs[0] if verbs else ""
    if not verb or verb in _SYSTEMCTL_READ:
        return None
    scope = " for every user" if "--global" in texts else ""
    return f"systemctl {verb} changes the system's services{scope}"


def _service(name: str, texts: list[str]) -> str | None:
    words = _positionals(texts)
    if "--status-all" in texts or (len(words) >= 2 and words[1] == "status") or not words:
        return None
    return f"service {' '.join(words[:2])} starts, stops or changes a system service"


_RUN_LEVELS = frozenset("0 1 2 3 4 5 6 s S single q Q u U a b c emergency rescue".split())


def _init(name: str, texts: list[str]) -> str | None:
    if texts and texts[0] in _RUN_LEVELS:
        return f"{name} {texts[0]} changes the machine's run level"
    return None


_AST_GREP_SUBCOMMANDS = frozenset({"run", "scan", "test", "new", "lsp", "completions", "help"})


def _sg(name: str, texts: list[str]) -> str | None:
    """shadow-utils' ``sg GROUP [-c] CMD``, not ast-grep's ``sg run``/``sg -p PATTERN`` of the same name."""
    if not texts or texts[0] in _AST_GREP_SUBCOMMANDS or (texts[0].startswith("-") and texts[0] != "-"):
        return None
    return "sg runs a command with another group's rights"


def _journalctl(name: str, texts: list[str]) -> str | None:
    changing = next(
        (t for t in texts if t.split("=", 1)[0] in _JOURNAL_CHANGES or t.startswith("--vacuum-")), None
    )
    return f"journalctl {changing} deletes, rotates or moves the system journal" if changing else None


def _kill(name: str, texts: list[str]) -> str | None:
    if set(texts) & {"-l", "-L", "--list", "--table"}:
        return None
    targets: list[str] = []
    skip = False
    for index, text in enumerate(texts):
        if skip:
            skip = False
            continue
        if text in ("-s", "-n", "--signal"):
            skip = True
            continue
        if text == "--":
            targets.extend(texts[index + 1 :])
            break
        if text.startswith("-"):
            continue
        targets.append(text)
    if "1" in targets:
        return (
            f"{name} signals process 1, the init process (as root, some signals halt or reboot the machine)"
        )
    return None


def _date(name: str, texts: list[str]) -> str | None:
    if any(t in ("-s", "--set") or t.startswith("--set=") for t in texts):
        return "date --set changes the system clock"
    words = _positionals(texts, frozenset({"-d", "--date", "-f", "--file", "-r", "--reference"}))
    if any(not w.startswith("+") for w in words):
        return "date with a time changes the system clock"
    return None


def _hwclock(name: str, texts: list[str]) -> str | None:
    setting = next((t for t in texts if t.split("=", 1)[0] in _HWCLOCK_SETS), None)
    return f"hwclock {setting} changes the hardware or system clock" if setting else None


def _set_verb(what: str) -> Callable[[str, list[str]], str | None]:
    def rule(name: str, texts: list[str]) -> str | None:
        words = _positionals(texts)
        if words and (words[0].startswith("set-") or (words[0] == "hostname" and len(words) > 1)):
            return f"{name} {words[0]} changes the {what}"
        return None

    return rule


def _hostname(name: str, texts: list[str]) -> str | None:
    if _positionals(texts) or set(texts) & {"-F", "--file", "-b", "--boot"}:
        return "hostname with a name changes the machine's host name"
    return None


def _ldconfig(name: str, texts: list[str]) -> str | None:
    if set(texts) & {"-p", "--print-cache", "--help", "-V", "--version"}:
        return None
    return "ldconfig rewrites the system's shared-library cache"


_RULES: dict[str, Callable[[str, list[str]], str | None]] = {
    "chmod": _chmod,
    "chown": _chown,
    "chgrp": _chown,
    "install": _install,
    **dict.fromkeys(_IPTABLES, _iptables),
    "nft": _nft,
    "ip": _ip,
    "tc": _tc,
    "ifconfig": _ifconfig,
    "route": _route,
    "arp": _arp,
    "ethtool": _ethtool,
    "brctl": _brctl,
    "ufw": _ufw,
    "firewall-cmd": _firewall_cmd,
    "sysctl": _sysctl,
    "mount": _mount,
    "modprobe": _modprobe,
    "systemctl": _systemctl,
    "service": _service,
    "init": _init,
    "sg": _sg,
    "telinit": _init,
    "journalctl": _journalctl,
    "kill": _kill,
    "date": _date,
    "hwclock": _hwclock,
    "timedatectl": _set_verb("system clock or time zone"),
    "hostnamectl": _set_verb("machine's host name"),
    "hostname": _hostname,
    "ldconfig": _ldconfig,
}


def privileged_reason(name: str, args: Sequence[Word]) -> str | None:
    """What a privileged or kernel-level command ``name ARGS`` would do, or None for anything else (including
    the read-only forms of these programs)."""
    fixed = _FIXED.get(name)
    if fixed is not None:
        return fixed.format(name=name)
    rule = _RULES.get(name)
    if rule is None:
        return None
    return rule(name, _texts(args))


def dynamic_code_reason(runner: str, code: Word) -> str:
    """Why running program text computed at run time is in the same class: nobody can read it first."""
    shown = code.text if len(code.text) <= 60 else code.text[:57] + "..."
    return f"{runner} runs code built at run time ({shown}), which nobody can read before it runs"
