"""One simple command, interpreted: wrappers peeled, the program's files found through the program table,
its capabilities and dangers by name, and whether it is in the known-safe set.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from seepient.protocol import Capability
from seepient.shell.command_options import command_options
from seepient.shell.history import history_wiping
from seepient.shell.interpretation import Danger, Interpretation, Word, base_name, destructive
from seepient.shell.interpreters import INTERPRETERS, SHELLS, interpret_interpreter, interpret_shell
from seepient.shell.known_safe import is_known_safe
from seepient.shell.options import name_set
from seepient.shell.privileged import dynamic_code_reason, privileged_reason
from seepient.shell.program_table import operand_rule
from seepient.shell.wrappers import unwrap

_NETWORK_PROGRAMS = frozenset(
    "curl wget nc ncat netcat socat ssh scp sftp ftp lftp telnet ping ping6 dig nslookup host whois http https "
    "aria2c mosh rsync npx gh aws gcloud az kubectl helm terraform".split()
)
_NETWORK_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "pip": frozenset({"install", "download", "wheel", "search", "index"}),
    "pip3": frozenset({"install", "download", "wheel", "search", "index"}),
    "uv": frozenset({"pip", "add", "sync", "lock", "run", "tool", "python", "venv"}),
    "npm": name_set("install i ci add update upgrade publish exec x view info outdated audit"),
    "pnpm": frozenset({"install", "i", "add", "update", "up", "dlx", "publish"}),
    "yarn": frozenset({"install", "add", "upgrade", "dlx", "publish", "up"}),
    "bun": frozenset({"install", "i", "add", "x", "update"}),
    "cargo": frozenset({"install", "fetch", "build", "update", "add", "publish", "search", "run", "test"}),
    "go": frozenset({"get", "install", "mod", "build", "run", "test"}),
    "gem": frozenset({"install", "update", "fetch", "push"}),
    "bundle": frozenset({"install", "update"}),
    "composer": frozenset({"install", "require", "update"}),
    "apt": frozenset({"install", "update", "upgrade", "full-upgrade", "dist-upgrade"}),
    "apt-get": frozenset({"install", "update", "upgrade", "dist-upgrade", "source", "download"}),
    "brew": frozenset({"install", "update", "upgrade", "fetch", "tap"}),
    "conda": frozenset({"install", "update", "create"}),
    "mamba": frozenset({"install", "update", "create"}),
    "poetry": frozenset({"install", "add", "update", "lock", "publish"}),
    "docker": frozenset({"pull", "push", "run", "build", "login", "search"}),
    "podman": frozenset({"pull", "push", "run", "build", "login", "search"}),
}
_PROCESS_CONTROL = frozenset("kill pkill killall skill xkill systemctl service launchctl renice".split())
_PRIVILEGE_PROGRAMS = frozenset(
    "sudo su doas pkexec runuser chroot setcap mount umount insmod modprobe rmmod useradd usermod userdel "
    "groupadd passwd chpasswd visudo sudoedit".split()
)
_DISK_DESTROYERS = frozenset(
    "mkfs mke2fs mkswap wipefs fdisk sfdisk cfdisk parted sgdisk gdisk blkdiscard".split()
)
_POWER = frozenset("shutdown reboot halt poweroff".split())


def _classify(interpretation: Interpretation) -> None:
    argv = interpretation.effective
    if not argv:
        return
    name = base_name(argv[0])
    args = argv[1:]
    texts = [w.text for w in args]
    if name in _NETWORK_PROGRAMS:
        interpretation.capabilities.add(Capability.NETWORK)
    subcommands = _NETWORK_SUBCOMMANDS.get(name)
    if subcommands and texts[:1] and texts[0] in subcommands:
        interpretation.capabilities.add(Capability.NETWORK)
    if (
        name.startswith("python")
        and texts[:2] == ["-m", "pip"]
        and len(texts) > 2
        and texts[2] in _NETWORK_SUBCOMMANDS["pip"]
    ):
        interpretation.capabilities.add(Capability.NETWORK)
    if name in _PROCESS_CONTROL:
        interpretation.capabilities.add(Capability.PROCESS_CONTROL)
    if name in _PRIVILEGE_PROGRAMS:
        interpretation.capabilities.add(Capability.PRIVILEGE)
    privileged = privileged_reason(name, args)
    if privileged is not None:
        interpretation.capabilities.add(Capability.PRIVILEGE)
        interpretation.dangers.append(Danger("privileged", privileged, argv))
    if name in _DISK_DESTROYERS or name.startswith("mkfs."):
        interpretation.capabilities.add(Capability.DESTRUCTIVE)
        interpretation.dangers.append(Danger("deny", f"{name} rewrites a disk or partition table"))
    if (
        name in _POWER
        or (name in ("init", "telinit") and texts[:1] in (["0"], ["6"]))
        or (
            name == "systemctl"
            and texts[:1]
            and texts[0] in ("poweroff", "reboot", "halt", "kexec", "suspend", "hibernate")
        )
    ):
        interpretation.capabilities.add(Capability.DESTRUCTIVE)
        interpretation.dangers.append(
            Danger("deny", f"{' '.join([name, *texts[:1]])} shuts down or restarts the machine")
        )
    if name == "crontab" and "-r" in texts:
        destructive(interpretation, "crontab -r deletes every scheduled job")
    elif (name == "crontab" and not set(texts) & {"-l", "-V"}) or (
        name in ("at", "batch") and "-l" not in texts
    ):
        interpretation.dangers.append(
            Danger("confirm", f"{name} schedules commands that run later, outside the sandbox")
        )
    history_wiping(name, args, interpretation)
    command_options(name, args, interpretation)
    rule = operand_rule(name)
    if rule is not None:
        rule(args, interpretation, name)
    elif name in SHELLS:
        interpret_shell(args, interpretation)
    elif name in INTERPRETERS or re.fullmatch(r"python\d(\.\d+)?", name):
        interpret_interpreter(args, interpretation, name)
    if name in ("cd", "pushd"):
        positional = [w for w in args if not (w.static and w.text.startswith("-") and w.text != "-")]
        interpretation.cwd_change = positional[0] if positional else Word("~")
    _dynamic_code(name, args, interpretation)
    if name in ("eval", "source", ".", "alias", "hash", "enable", "fc", "trap") and not (
        name == "trap" and (not texts or texts[0] in ("-l", "-p"))
    ):
        if name == "trap" and texts and args[0].static:
            interpretation.scripts.append(args[0])
        elif name == "trap":
            interpretation.problems.append("trap runs a handler computed at run time")
        else:
            interpretation.problems.append(
                f"{name} makes the shell run or redefine commands that cannot be read here"
            )
            interpretation.runs_unseen = name in ("eval", "source", ".")


def _dynamic_code(name: str, args: Sequence[Word], interpretation: Interpretation) -> None:
    """``eval "$x"``, ``source "$f"``/``source <(…)`` and ``trap "$x"`` run code that exists only at run time."""
    code: Word | None = None
    if name == "eval":
        code = next((w for w in args if not w.static), None)
    elif name in ("source", ".") and args and (not args[0].static or args[0].pipe):
        code = args[0]
    elif name == "trap" and args and not args[0].static:
        code = args[0]
    if code is not None:
        danger = Danger("privileged", dynamic_code_reason(name, code), interpretation.effective)
        interpretation.dangers.append(danger)


def takes_paths(name: str) -> bool:
    """Whether the program's arguments name files, so an argument computed at run time is a path nobody checked."""
    return (
        operand_rule(name) is not None or name in SHELLS or name in INTERPRETERS or name.startswith("python")
    )


def interpret(argv: tuple[Word, ...]) -> Interpretation:
    """Unwrap, classify and find the files of one simple command (``argv[0]`` must be static)."""
    interpretation = Interpretation(stages=[argv])
    unwrap(argv, interpretation)
    if not interpretation.problems:
        _classify(interpretation)
    for script in interpretation.scripts:
        if not script.static:
            # 'bash -c "$X"', 'su -c "$(…)"', 'flock f -c "$X"': the program text exists only at run time.
            reason = dynamic_code_reason(base_name(interpretation.binary), script)
            interpretation.dangers.append(Danger("privileged", reason, interpretation.effective))
    interpretation.safe = not interpretation.problems and is_known_safe(interpretation)
    return interpretation


# -- the known-safe read-only set --------------------------------------------------------------------


_STACK_ROTATION = re.compile(r"[+-][0-9]+")


def directory_stack_change(name: str, interpretation: Interpretation) -> None:
    """``cd -``, ``popd`` and ``pushd`` without a folder go to $OLDPWD or the directory stack, which the
    line can set (``OLDPWD=…; cd -``): the folder they reach is known only at run time."""
    if name not in ("cd", "pushd", "popd"):
        return
    arguments = [w for w in interpretation.effective[1:] if not (w.static and w.text in ("-n", "--"))]
    if (
        (name == "cd" and arguments and arguments[-1].static and arguments[-1].text == "-")
        or name == "popd"
        or (
            name == "pushd"
            and (not arguments or (arguments[0].static and _STACK_ROTATION.fullmatch(arguments[0].text)))
        )
    ):
        interpretation.cwd_change = Word("$OLDPWD" if name == "cd" else "$DIRSTACK", static=False)
