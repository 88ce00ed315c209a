"""Wrappers to see through (``sudo``, ``env``, ``xargs``, ``timeout`` ...): their options, where the
wrapped program starts, and what a wrapper itself means (raised privileges, a lock file, words from stdin).
"""

from __future__ import annotations

import re

from seepient.protocol import Capability
from seepient.shell.environment import loading_problem, loads_code, names_a_program, program_text
from seepient.shell.interpretation import Danger, Interpretation, Word, base_name
from seepient.shell.options import ASSIGNMENT, name_set, option_spec, parse_options
from seepient.shell.privileged import WRAPPER_REASONS
from seepient.shell.program_table import wrapper_spec

PRIVILEGE_WRAPPERS = frozenset({"sudo", "doas", "su", "pkexec", "runuser", "chroot", "unshare", "nsenter"})
# Assigning these changes which program a later name runs or how the shell reads what follows, so a
# line that sets them cannot be analysed statically.
# PS0-PS4 are prompt-expanded (PS4 on every traced command), which runs the substitutions in them;
# EXECIGNORE changes which file a command name finds.
SHELL_STATE_VARIABLES = name_set(
    "PATH BASH_ENV ENV SHELLOPTS BASHOPTS GLOBIGNORE CDPATH PROMPT_COMMAND LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT DYLD_INSERT_LIBRARIES DYLD_LIBRARY_PATH"
    " PS0 PS1 PS2 PS3 PS4 EXECIGNORE"
)


_FLOCK_SCRIPT_OPTIONS = frozenset({"-c", "--command"})
_TIME_KEYWORD = option_spec("", "", permute=False)


def _privileged(interpretation: Interpretation, name: str, stage: tuple[Word, ...]) -> None:
    interpretation.capabilities.add(Capability.PRIVILEGE)
    reason = WRAPPER_REASONS.get(name, f"{name} runs a command with raised privileges")
    interpretation.dangers.append(Danger("privileged", reason, stage))


def _strip_assignments(args: list[Word], interpretation: Interpretation) -> list[Word]:
    # env (and sudo) take every leading word with an '=' as an environment entry, whatever its name.
    while args and args[0].static and "=" in args[0].text:
        name = args[0].text.split("=", 1)[0]
        if not ASSIGNMENT.match(args[0].text):
            interpretation.problems.append(
                f"sets the environment entry {name!r}, which is not a variable name "
                "(an entry like BASH_FUNC_name%% defines a function in every bash it starts)"
            )
        interpretation.assignments.append(name)
        if name in SHELL_STATE_VARIABLES:
            interpretation.problems.append(f"sets {name}, which changes which program later names run")
        elif loads_code(name):
            interpretation.problems.append(loading_problem(name))
        elif names_a_program(name):
            value = args[0].text.split("=", 1)[1]
            if value.strip():
                interpretation.launches.append(Word(program_text(name, value)))
        args = args[1:]
    return args


def unwrap(argv: tuple[Word, ...], interpretation: Interpretation, depth: int = 0) -> None:
    """Peel wrappers off ``argv`` stage by stage until the real program is in front."""
    if depth > 16:
        interpretation.problems.append("wrappers nested more than 16 deep")
        return
    name = base_name(argv[0])
    if name == "busybox" and len(argv) > 1:
        interpretation.wrappers.append("busybox")
        interpretation.stages.append(argv[1:])
        unwrap(argv[1:], interpretation, depth + 1)
        return
    if name == "su" or (name == "runuser" and not any(w.text in ("-u", "--user") for w in argv)):
        _unwrap_su(argv, interpretation)
        return
    if name == "runuser":
        args = list(argv[1:])
        parsed = parse_options(
            args,
            option_spec(
                "-u --user -g --group -G --supp-group -w --whitelist-environment",
                "-l --login -m -p --preserve-environment",
                permute=False,
            ),
            "runuser",
        )
        interpretation.wrappers.append("runuser")
        _privileged(interpretation, "runuser", argv)
        if parsed.problem or not parsed.operands:
            interpretation.problems.append(parsed.problem or "runuser without a command")
            return
        interpretation.stages.append(tuple(parsed.operands))
        unwrap(tuple(parsed.operands), interpretation, depth + 1)
        return
    spec = wrapper_spec(name)
    if spec is None:
        return
    if name in PRIVILEGE_WRAPPERS:
        # Before the options are read: 'sudo -l' or an option nobody analysed is still sudo.
        _privileged(interpretation, name, argv)
    if name == "systemd-run":
        interpretation.dangers.append(
            Danger("confirm", "systemd-run has the service manager start the command, outside the sandbox")
        )
    if name == "time" and len(argv) > 1 and argv[1].text in ("-o", "--output", "-a", "--append"):
        interpretation.problems.append("time -o writes its report to a file; it is not analysed")
        return
    args = list(argv[1:])
    if name == "nice" and args and re.fullmatch(r"-\d+", args[0].text):
        args = args[1:]  # the historic 'nice -10 cmd' form
    options = spec.options
    if name == "time" and depth == 0 and argv[0].text == "time":
        # The first word 'time' is bash's keyword, which takes '-p' once and '--'; any other option word is
        # the program it runs ('time -v ls' runs a program named '-v').
        options = _TIME_KEYWORD
        if args[:1] and args[0].text == "-p":
            args = args[1:]
        if args[:1] and args[0].text == "--":
            args = args[1:]
        if args and args[0].static and args[0].text.startswith("-") and args[0].text != "-":
            interpretation.problems.append(
                f"bash's time keyword takes only -p, so 'time {args[0].text}' runs a program named {args[0].text!r}"
            )
            return
    parsed = parse_options(args, options, name)
    if parsed.problem:
        interpretation.problems.append(f"{parsed.problem}; cannot tell which program it runs")
        return
    if any(opt in spec.refuse_options for opt, _ in parsed.options):
        used = next(opt for opt, _ in parsed.options if opt in spec.refuse_options)
        interpretation.problems.append(f"{name} {used} is not analysed; cannot tell what it runs or where")
        return
    for option, value in parsed.options:
        if option in spec.outputs and value is not None:
            _wrapper_output(name, value, interpretation)
    if any(opt in spec.no_command_options for opt, _ in parsed.options):
        return  # a lookup or a listing ('command -v rm', 'sudo -l'), which runs no program after it
    interpretation.wrappers.append(name)
    if name == "xargs":
        for value in parsed.values("-a", "--arg-file"):
            interpretation.opens(value, write=False, role="xargs argument file")
    rest = parsed.operands
    if name == "flock" and any(opt in _FLOCK_SCRIPT_OPTIONS for opt, _ in parsed.options):
        script = next(v for o, v in parsed.options if o in _FLOCK_SCRIPT_OPTIONS and v is not None)
        if rest:
            interpretation.opens(rest[0], write=True, role="lock file")
        interpretation.scripts.append(script)
        return
    if len(rest) < spec.positionals:
        interpretation.problems.append(f"{name}: missing operand")
        return
    if name == "flock" and rest:
        interpretation.opens(rest[0], write=True, role="lock file")
        if len(rest) > 2 and rest[1].text in _FLOCK_SCRIPT_OPTIONS:
            interpretation.scripts.append(rest[2])  # 'flock FILE -c COMMAND'
            return
    rest = rest[spec.positionals :]
    if name == "time":
        while rest and rest[0].static and rest[0].text == "!":
            rest = rest[1:]
    if spec.assignments:
        rest = _strip_assignments(rest, interpretation)
    if spec.joins_words_as_script and not parsed.has("-x", "--exec"):
        if rest:
            static = all(w.static for w in rest)
            interpretation.scripts.append(Word(" ".join(w.text for w in rest), static=static))
        return
    if not rest:
        if name in ("sudo", "doas") and parsed.has("-s", "--shell", "-i", "--login"):
            interpretation.reads_script_from_stdin = True  # a root shell that reads its commands from stdin
            interpretation.stdin_script_is_shell = True
        if not spec.default:
            return
        rest = [Word(text) for text in spec.default]
    if spec.stdin_operands:
        interpretation.operands_from_stdin = True
    interpretation.stages.append(tuple(rest))
    if not rest[0].static:
        interpretation.problems.append(
            f"{name} runs a program whose name is computed at run time ({rest[0].text})"
        )
        return
    unwrap(tuple(rest), interpretation, depth + 1)


def _wrapper_output(name: str, value: Word, interpretation: Interpretation) -> None:
    """The file a tracer writes its log to; strace pipes the log to a command instead for ``-o '|cmd'``."""
    if name == "strace" and value.text.startswith(("|", "!")):
        interpretation.launches.append(Word(value.text[1:], value.static))
    else:
        interpretation.opens(value, write=True, role=f"{name} output")


def _unwrap_su(argv: tuple[Word, ...], interpretation: Interpretation) -> None:
    name = base_name(argv[0])
    interpretation.wrappers.append(name)
    _privileged(interpretation, name, argv)
    parsed = parse_options(
        list(argv[1:]),
        option_spec(
            "-c --command --session-command -s --shell -g --group -G --supp-group -w --whitelist-environment",
            "-l --login -m -p --preserve-environment -P --pty -f --fast",
        ),
        name,
    )
    if parsed.problem:
        interpretation.problems.append(f"{parsed.problem}; cannot tell what it runs")
        return
    scripts = parsed.values("-c", "--command", "--session-command")
    if not scripts:
        interpretation.problems.append(
            f"{name} without -c starts an interactive shell that reads commands later"
        )
        return
    interpretation.scripts.extend(scripts)


# -- shells -----------------------------------------------------------------------------------------
