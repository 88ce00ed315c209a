"""What policy knows about individual programs: wrappers to see through, which operands are files read or
written, the capabilities a program needs, what is dangerous, and the small known-safe read-only set.

Everything here works on argv words the shell analyser has already unquoted; nothing touches the disk.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Literal

from seepient.policy.privileged import WRAPPER_REASONS, dynamic_code_reason, privileged_reason
from seepient.policy.sed import SedSyntaxError, read_sed_script, writes_to_a_file
from seepient.protocol import Capability


@dataclass(frozen=True)
class Word:
    """One argv word: what the program receives when ``static``, otherwise the source text.

    ``glob`` marks unquoted wildcards the shell expands against the file system before the program runs;
    ``pipe`` marks a process substitution (``<(cmd)``), which the program sees as ``/dev/fd/N``.
    """

    text: str
    static: bool = True
    glob: bool = False
    pipe: bool = False


@dataclass(frozen=True)
class Operand:
    """A file a command opens. ``directory`` means files of unknown names are written inside it;
    ``recursive`` means everything below it is read or changed; ``moves`` means its content ends up
    somewhere else (``mv`` sources), so it is read as well as changed; ``names_only`` means only names
    and metadata are read below it (``ls -R``, ``find``), never file contents."""

    word: Word
    write: bool
    role: str
    recursive: bool = False
    directory: bool = False
    moves: bool = False
    names_only: bool = False


@dataclass(frozen=True)
class Danger:
    """``deny`` for what no mode may run (formatting a disk); ``privileged`` for what runs with raised rights,
    changes the machine below the user or runs code built at run time (``policy/privileged.py``): denied in
    every mode unless an allow rule of the user, managed or ``--config`` settings covers the command;
    ``confirm`` for what a person must see whatever the mode (code fetched from the network run unseen);
    ``ask`` for what the mode weighs."""

    level: Literal["deny", "privileged", "confirm", "ask"]
    reason: str
    words: tuple[Word, ...] | None = None
    """The stage the danger is about (``sudo rm x`` inside ``xargs sudo rm x``): what an allow rule must name."""


@dataclass(frozen=True)
class Nested:
    """A command run by another one (``find -exec``): ``placeholder_roots`` stand in for ``{}``."""

    words: tuple[Word, ...]
    placeholder_roots: tuple[Word, ...] = ()


@dataclass
class Interpretation:
    """What one simple command does once wrappers are seen through."""

    stages: list[tuple[Word, ...]]
    wrappers: list[str] = field(default_factory=list)
    operands: list[Operand] = field(default_factory=list)
    capabilities: set[Capability] = field(default_factory=set)
    dangers: list[Danger] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    scripts: list[Word] = field(default_factory=list)
    nested: list[Nested] = field(default_factory=list)
    assignments: list[str] = field(default_factory=list)
    safe: bool = False
    reads_script_from_stdin: bool = False
    stdin_script_is_shell: bool = False
    operands_from_stdin: bool = False
    cwd_change: Word | None = None
    spellings: list[tuple[Word, ...]] = field(default_factory=list)
    """Other argv forms of the same command (a git alias resolved), which deny rules must see too."""
    embedded: list[Word] = field(default_factory=list)
    """Quoted strings inside inline program text (``python -c``, an awk program) that may be paths."""
    runs_unseen: bool = False
    """The command runs code that exists only at run time (``bash <(…)``, ``eval "$(…)"``)."""
    stdin_or: list[Operand] = field(default_factory=list)
    """What the command reads when its standard input is a terminal (``rg x`` searches ``.``), since a
    pipe or redirection into it is read instead."""

    @property
    def effective(self) -> tuple[Word, ...]:
        return self.stages[-1]

    @property
    def binary(self) -> Word:
        return self.effective[0] if self.effective else Word("")


def base_name(word: Word) -> str:
    """The program's name for matching: the last path component, case-folded (``/bin/RM`` is ``rm``
    on a case-insensitive file system)."""
    return word.text.rsplit("/", 1)[-1].casefold()


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# -- option parsing -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Options:
    """``values`` take an argument (``-o FILE``, ``--output FILE``, ``--output=FILE``); ``flags`` take none.
    ``flags=None`` accepts any other option as a flag; ``permute`` lets options follow operands (GNU style)."""

    values: frozenset[str] = frozenset()
    flags: frozenset[str] | None = None
    permute: bool = True


@dataclass
class _Parsed:
    options: list[tuple[str, Word | None]]
    operands: list[Word]
    problem: str | None = None

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.options)

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.options if name in names and value is not None]


def _opts(values: str = "", flags: str | None = None, *, permute: bool = True) -> _Options:
    """Options taking a value, and the flags a strict parser accepts (``None``: any other option is a flag)."""
    return _Options(
        values=frozenset(values.split()),
        flags=None if flags is None else frozenset(flags.split()),
        permute=permute,
    )


def _parse(args: Sequence[Word], spec: _Options, program: str) -> _Parsed:
    options: list[tuple[str, Word | None]] = []
    operands: list[Word] = []
    index = 0
    while index < len(args):
        word = args[index]
        text = word.text
        index += 1
        if not word.static or not text.startswith("-") or text == "-":
            operands.append(word)
            if not spec.permute:
                operands.extend(args[index:])
                break
            continue
        if text == "--":
            operands.extend(args[index:])
            break
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            if eq:
                options.append((name, Word(value, word.static, word.glob)))
            elif name in spec.values:
                if index >= len(args):
                    return _Parsed(options, operands, f"{program}: option {name} needs a value")
                options.append((name, args[index]))
                index += 1
            elif spec.flags is None or name in spec.flags:
                options.append((name, None))
            else:
                return _Parsed(options, operands, f"{program}: unrecognised option {name}")
            continue
        cluster = text[1:]
        for position, letter in enumerate(cluster):
            name = f"-{letter}"
            if name in spec.values:
                rest = cluster[position + 1 :]
                if rest:
                    options.append((name, Word(rest)))
                elif index < len(args):
                    options.append((name, args[index]))
                    index += 1
                else:
                    return _Parsed(options, operands, f"{program}: option {name} needs a value")
                break
            if spec.flags is None or name in spec.flags:
                options.append((name, None))
            else:
                return _Parsed(options, operands, f"{program}: unrecognised option {name}")
    return _Parsed(options, operands)


# -- wrappers -------------------------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "posh", "fish", "busybox-sh"})
INTERPRETERS = _names("python python2 python3 perl ruby node nodejs php lua deno bun osascript")
PRIVILEGE_WRAPPERS = frozenset({"sudo", "doas", "su", "pkexec", "runuser", "chroot", "unshare", "nsenter"})
# Assigning these changes which program a later name runs or how the shell reads what follows, so a
# line that sets them cannot be analysed statically.
# PS0-PS4 are prompt-expanded (PS4 on every traced command), which runs the substitutions in them;
# EXECIGNORE changes which file a command name finds.
SHELL_STATE_VARIABLES = _names(
    "PATH BASH_ENV ENV SHELLOPTS BASHOPTS GLOBIGNORE CDPATH PROMPT_COMMAND LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT DYLD_INSERT_LIBRARIES DYLD_LIBRARY_PATH"
    " PS0 PS1 PS2 PS3 PS4 EXECIGNORE"
)


@dataclass(frozen=True)
class _Wrapper:
    options: _Options
    positionals: int = 0
    assignments: bool = False
    script_options: frozenset[str] = frozenset()
    refuse_options: frozenset[str] = frozenset()
    stdin_operands: bool = False
    default: tuple[str, ...] = ()
    no_command_options: frozenset[str] = frozenset()
    joins_words_as_script: bool = False


_WRAPPERS: dict[str, _Wrapper] = {
    "env": _Wrapper(
        _opts(
            "-u --unset -C --chdir -S --split-string",
            "-i --ignore-environment -0 --null -v --debug --default-signal --ignore-signal --block-signal "
            "--list-signal-handling",
            permute=False,
        ),
        assignments=True,
        refuse_options=frozenset({"-C", "--chdir", "-S", "--split-string"}),
    ),
    "sudo": _Wrapper(
        _opts(
            "-u --user -g --group -h --host -p --prompt -C --close-from -r --role -t --type -T "
            "--command-timeout -U --other-user -D --chdir",
            "-A --askpass -b --background -E --preserve-env -H --set-home -K --remove-timestamp -k "
            "--reset-timestamp -n --non-interactive -P --preserve-groups -S --stdin -s --shell -i --login "
            "-N --no-update -B --bell",
            permute=False,
        ),
        assignments=True,
        refuse_options=frozenset({"-D", "--chdir", "-e", "--edit"}),
        no_command_options=frozenset({"-l", "--list", "-v", "--validate", "-V", "--version"}),
    ),
    "doas": _Wrapper(_opts("-u -C", "-n -s -L", permute=False)),
    "pkexec": _Wrapper(_opts("--user", "--disable-internal-agent --keep-cwd", permute=False)),
    "nice": _Wrapper(_opts("-n --adjustment", "", permute=False)),
    "ionice": _Wrapper(_opts("-c --class -n --classdata", "-t --ignore", permute=False)),
    "timeout": _Wrapper(
        _opts("-s --signal -k --kill-after", "--preserve-status --foreground -v --verbose", permute=False),
        positionals=1,
    ),
    "nohup": _Wrapper(_opts("", "", permute=False)),
    "setsid": _Wrapper(_opts("", "-c --ctty -f --fork -w --wait", permute=False)),
    "stdbuf": _Wrapper(_opts("-i --input -o --output -e --error", "", permute=False)),
    "unbuffer": _Wrapper(_opts("", "-p", permute=False)),
    "chroot": _Wrapper(
        _opts("--userspec --groups", "--skip-chdir", permute=False), positionals=1, default=("sh",)
    ),
    "taskset": _Wrapper(_opts("", "-a --all-tasks -c --cpu-list", permute=False), positionals=1),
    # bash's 'time' keyword times a whole pipeline: it may be negated and carry prefix assignments.
    "time": _Wrapper(
        _opts("-f --format", "-p --portability -v --verbose -q --quiet", permute=False), assignments=True
    ),
    "command": _Wrapper(_opts("", "-p", permute=False), no_command_options=frozenset({"-v", "-V"})),
    "builtin": _Wrapper(_opts("", "", permute=False)),
    "exec": _Wrapper(_opts("-a", "-c -l", permute=False)),
    "coproc": _Wrapper(_opts("", "", permute=False)),
    "xargs": _Wrapper(
        _opts(
            "-a --arg-file -d --delimiter -E -I -L -n --max-args -P --max-procs -s --max-chars "
            "--process-slot-var",
            "-0 --null -p --interactive -r --no-run-if-empty -t --verbose -x --exit -o --open-tty -e -i -l "
            "--replace --eof --max-lines",
            permute=False,
        ),
        stdin_operands=True,
        default=("echo",),
    ),
    "watch": _Wrapper(
        _opts(
            "-n --interval -q --equexit",
            "-b --beep -c --color -C --no-color -d --differences -e --errexit -g --chgexit -t --no-title "
            "-w --no-wrap -p --precise -x --exec -r --no-rerun",
            permute=False,
        ),
        joins_words_as_script=True,
    ),
    "flock": _Wrapper(
        _opts(
            "-w --timeout -E --conflict-exit-code",
            "-s --shared -x --exclusive -e -u --unlock -n --nonblock --nb -o --close -F --no-fork --verbose",
            permute=False,
        ),
        positionals=1,
        script_options=frozenset({"-c", "--command"}),
    ),
    "unshare": _Wrapper(_opts("", permute=False)),
    "nsenter": _Wrapper(_opts("-t --target", permute=False)),
    "strace": _Wrapper(
        _opts(
            "-e -o -p -s -u -E -a -b -I -O -P -S -X",
            "-f -ff -c -C -d -i -q -qq -r -t -tt -ttt -T -v -V -w -x -xx -y -yy -z -Z -k",
            permute=False,
        )
    ),
    "ltrace": _Wrapper(
        _opts(
            "-e -o -p -s -u -a -l -n -w -A -D -F", "-f -c -C -h -i -L -r -S -t -tt -ttt -T -V", permute=False
        )
    ),
}
_FLOCK_SCRIPT_OPTIONS = frozenset({"-c", "--command"})
_TIME_KEYWORD = _opts("", "", permute=False)


def _privileged(interpretation: Interpretation, name: str, stage: tuple[Word, ...]) -> None:
    interpretation.capabilities.add(Capability.PRIVILEGE)
    reason = WRAPPER_REASONS.get(name, f"{name} runs a command with raised privileges")
    interpretation.dangers.append(Danger("privileged", reason, stage))


def _strip_assignments(args: list[Word], interpretation: Interpretation) -> list[Word]:
    # env (and sudo) take every leading word with an '=' as an environment entry, whatever its name.
    while args and args[0].static and "=" in args[0].text:
        name = args[0].text.split("=", 1)[0]
        if not _ASSIGNMENT.match(args[0].text):
            interpretation.problems.append(
                f"sets the environment entry {name!r}, which is not a variable name "
                "(an entry like BASH_FUNC_name%% defines a function in every bash it starts)"
            )
        interpretation.assignments.append(name)
        if name in SHELL_STATE_VARIABLES:
            interpretation.problems.append(f"sets {name}, which changes which program later names run")
        args = args[1:]
    return args


def _unwrap(argv: tuple[Word, ...], interpretation: Interpretation, depth: int = 0) -> None:
    """Peel wrappers off ``argv`` stage by stage until the real program is in front."""
    if depth > 16:
        interpretation.problems.append("wrappers nested more than 16 deep")
        return
    name = base_name(argv[0])
    if name == "busybox" and len(argv) > 1:
        interpretation.wrappers.append("busybox")
        interpretation.stages.append(argv[1:])
        _unwrap(argv[1:], interpretation, depth + 1)
        return
    if name == "su" or (name == "runuser" and not any(w.text in ("-u", "--user") for w in argv)):
        _unwrap_su(argv, interpretation)
        return
    if name == "runuser":
        args = list(argv[1:])
        parsed = _parse(
            args,
            _opts(
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
        _unwrap(tuple(parsed.operands), interpretation, depth + 1)
        return
    spec = _WRAPPERS.get(name)
    if spec is None:
        return
    if name in PRIVILEGE_WRAPPERS:
        # Before the options are read: 'sudo -l' or an option nobody analysed is still sudo.
        _privileged(interpretation, name, argv)
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
    parsed = _parse(args, options, name)
    if parsed.problem:
        interpretation.problems.append(f"{parsed.problem}; cannot tell which program it runs")
        return
    if any(opt in spec.refuse_options for opt, _ in parsed.options):
        used = next(opt for opt, _ in parsed.options if opt in spec.refuse_options)
        interpretation.problems.append(f"{name} {used} is not analysed; cannot tell what it runs or where")
        return
    interpretation.wrappers.append(name)
    if any(opt in spec.no_command_options for opt, _ in parsed.options):
        return
    if name == "xargs":
        for value in parsed.values("-a", "--arg-file"):
            interpretation.operands.append(Operand(value, write=False, role="xargs argument file"))
    rest = parsed.operands
    if name == "flock" and any(opt in _FLOCK_SCRIPT_OPTIONS for opt, _ in parsed.options):
        script = next(v for o, v in parsed.options if o in _FLOCK_SCRIPT_OPTIONS and v is not None)
        if rest:
            interpretation.operands.append(Operand(rest[0], write=True, role="lock file"))
        interpretation.scripts.append(script)
        return
    if len(rest) < spec.positionals:
        interpretation.problems.append(f"{name}: missing operand")
        return
    if name == "flock" and rest:
        interpretation.operands.append(Operand(rest[0], write=True, role="lock file"))
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
    _unwrap(tuple(rest), interpretation, depth + 1)


def _unwrap_su(argv: tuple[Word, ...], interpretation: Interpretation) -> None:
    name = base_name(argv[0])
    interpretation.wrappers.append(name)
    _privileged(interpretation, name, argv)
    parsed = _parse(
        list(argv[1:]),
        _opts(
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

_SHELL_VALUE_OPTIONS = frozenset({"o", "O"})
_SHELL_LONG_VALUE = frozenset({"--rcfile", "--init-file"})


def _interpret_shell(args: Sequence[Word], interpretation: Interpretation) -> None:
    """bash-like option parsing: ``-c`` takes the first operand as the script, ``-s`` or no operand reads stdin."""
    command_mode = False
    stdin_mode = False
    index = 0
    while index < len(args):
        word = args[index]
        text = word.text
        if not word.static:
            break  # the first operand (a script, or a script file) computed at run time
        if text in ("--", "-"):
            index += 1
            break
        if text.startswith("--"):
            if text in _SHELL_LONG_VALUE:
                index += 1
            index += 1
            continue
        if text[:1] in ("-", "+") and len(text) > 1:
            for letter in text[1:]:
                if letter == "c":
                    command_mode = True
                elif letter == "s":
                    stdin_mode = True
                elif letter in _SHELL_VALUE_OPTIONS:
                    index += 1
            index += 1
            continue
        break
    operands = list(args[index:])
    if command_mode:
        if not operands:
            interpretation.problems.append("a shell -c without a script")
            return
        interpretation.scripts.append(operands[0])
        return
    if operands and not stdin_mode:
        if operands[0].pipe:
            _unseen_script(
                interpretation,
                f"the shell runs a script another command writes at run time ({operands[0].text})",
            )
            return
        interpretation.operands.append(Operand(operands[0], write=False, role="shell script"))
        return
    interpretation.reads_script_from_stdin = True
    interpretation.stdin_script_is_shell = True


def _unseen_script(interpretation: Interpretation, problem: str) -> None:
    interpretation.problems.append(problem)
    interpretation.runs_unseen = True


# -- find -------------------------------------------------------------------------------------------

_FIND_VALUE_TESTS = frozenset(
    "-name -iname -path -ipath -regex -iregex -wholename -iwholename -lname -ilname -type -xtype -user -group "
    "-perm -size -mtime -atime -ctime -mmin -amin -cmin -newer -anewer -cnewer -samefile -inum -links "
    "-maxdepth -mindepth -uid -gid -used -fstype -context -printf -regextype -D".split()
)
_FIND_FILE_WRITES = frozenset({"-fprint", "-fprint0", "-fls"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


def _interpret_find(args: Sequence[Word], interpretation: Interpretation) -> None:
    index = 0
    while (
        index < len(args)
        and args[index].text in ("-H", "-L", "-P")
        or (index < len(args) and args[index].text.startswith("-O"))
    ):
        index += 1
    roots: list[Word] = []
    while index < len(args):
        text = args[index].text
        if args[index].static and (text.startswith("-") or text in ("(", "!", ")", ",")):
            break
        roots.append(args[index])
        index += 1
    if not roots:
        roots = [Word(".")]
    deletes = False
    while index < len(args):
        word = args[index]
        text = word.text
        index += 1
        if text in _FIND_VALUE_TESTS or text.startswith("-newer"):
            index += 1
        elif text in _FIND_FILE_WRITES or text == "-fprintf":
            if index < len(args):
                interpretation.operands.append(
                    Operand(args[index], write=True, role=f"find {text} output file")
                )
            index += 2 if text == "-fprintf" else 1
        elif text == "-files0-from":
            if index < len(args):
                interpretation.operands.append(
                    Operand(args[index], write=False, role="find -files0-from list")
                )
            index += 1
        elif text == "-delete":
            deletes = True
        elif text in _FIND_EXEC:
            end = index
            while end < len(args) and args[end].text not in (";", "+"):
                end += 1
            if end >= len(args):
                interpretation.problems.append(f"find {text} without a terminating ';' or '+'")
                return
            inner = tuple(args[index:end])
            if not inner:
                interpretation.problems.append(f"find {text} without a command")
                return
            interpretation.nested.append(Nested(inner, placeholder_roots=tuple(roots)))
            index = end + 1
    for root in roots:
        interpretation.operands.append(
            Operand(root, write=deletes, role="find root", recursive=True, names_only=True)
        )
    if deletes:
        interpretation.capabilities.add(Capability.DESTRUCTIVE)
        interpretation.dangers.append(Danger("ask", "find -delete removes every file the expression matches"))


# -- per-program operand roles ---------------------------------------------------------------------

_OperandRule = Callable[[Sequence[Word], Interpretation, str], None]


def _all_operands(
    write: bool, spec: _Options, role: str, *, recursive_flags: str = "", names_only: bool = False
) -> _OperandRule:
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = _parse(args, spec, program)
        recursive = any(opt in recursive_set for opt, _ in parsed.options)
        for word in parsed.operands:
            interpretation.operands.append(
                Operand(
                    word, write=write, role=f"{program} {role}", recursive=recursive, names_only=names_only
                )
            )

    return rule


def _skip_first(
    write: bool,
    spec: _Options,
    role: str,
    *,
    unless: str = "",
    recursive_flags: str = "",
    always_recursive: bool = False,
    names_only_flags: str = "",
) -> _OperandRule:
    """Programs whose first operand is not a file (a grep pattern, a chmod mode) unless an option gave it.

    A recursive search without a path searches the working directory (unless its input is piped)."""
    unless_set = frozenset(unless.split())
    recursive_set = frozenset(recursive_flags.split())
    names_only_set = frozenset(names_only_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = _parse(args, spec, program)
        operands = parsed.operands if parsed.has(*unless_set) else parsed.operands[1:]
        recursive = always_recursive or any(opt in recursive_set for opt, _ in parsed.options)
        names_only = any(opt in names_only_set for opt, _ in parsed.options)
        for word in operands:
            interpretation.operands.append(
                Operand(
                    word, write=write, role=f"{program} {role}", recursive=recursive, names_only=names_only
                )
            )
        if recursive and not operands and not write:
            interpretation.stdin_or.append(
                Operand(
                    Word("."),
                    write=False,
                    role=f"{program} {role} (the working directory)",
                    recursive=True,
                    names_only=names_only,
                )
            )

    return rule


def _copy_like(
    spec: _Options, *, sources_written: bool, recursive_flags: str = "", whole_trees: bool = False
) -> _OperandRule:
    """cp, mv, ln, install, rsync, scp. ``whole_trees``: a source directory goes along with everything
    below it whatever the flags (``mv dir x``; ``ln -s dir x`` opens everything below ``dir`` through ``x``)."""
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = _parse(args, spec, program)
        recursive = whole_trees or any(opt in recursive_set for opt, _ in parsed.options)
        targets = parsed.values("-t", "--target-directory")
        sources = list(parsed.operands)
        if targets:
            destinations = targets
        elif len(sources) >= 2:
            destinations = [sources.pop()]
        elif program == "ln" and sources:
            destinations = [Word(".")]
        else:
            destinations = []
        for word in sources:
            interpretation.operands.append(
                Operand(
                    word,
                    write=sources_written,
                    role=f"{program} source",
                    recursive=recursive,
                    moves=sources_written,
                )
            )
        if program == "ln" and parsed.has("-s", "--symbolic"):
            # A relative symlink target is resolved from the link's own directory, not from here.
            for source in sources:
                if not source.static or source.text.startswith(("/", "~")):
                    continue
                for destination in destinations:
                    if not destination.static:
                        continue
                    for directory in {destination.text, posixpath.dirname(destination.text) or "."}:
                        interpretation.operands.append(
                            Operand(
                                Word(posixpath.join(directory, source.text), glob=source.glob),
                                write=False,
                                role="ln -s target, seen from the link's directory",
                                recursive=True,
                            )
                        )
        for word in destinations:
            interpretation.operands.append(
                Operand(
                    word,
                    write=True,
                    role=f"{program} destination",
                    recursive=recursive,
                    directory=bool(targets),
                )
            )

    return rule


@dataclass
class _SedCall:
    expressions: list[Word]
    files: list[Word]
    script_files: list[Word]
    in_place: bool
    quiet: bool
    problem: str | None = None


def _sed_call(args: Sequence[Word]) -> _SedCall:
    """GNU sed's options, parsed by hand: ``-i`` takes an optional suffix glued to it (``-i.bak``, so
    ``-in`` is in-place with suffix ``n``, not ``-i -n``), ``-e``/``-f``/``-l`` take values."""
    call = _SedCall([], [], [], False, False)
    positional: list[Word] = []
    index = 0
    while index < len(args):
        word = args[index]
        text = word.text
        index += 1
        if not word.static or not text.startswith("-") or text == "-":
            positional.append(word)
            continue
        if text == "--":
            positional.extend(args[index:])
            break
        if text.startswith("--"):
            name, eq, value = text.partition("=")
            if name in ("--expression", "--file", "--line-length"):
                if not eq:
                    if index >= len(args):
                        call.problem = f"sed {name} needs a value"
                        return call
                    given = args[index]
                    index += 1
                else:
                    given = Word(value, word.static)
                if name == "--expression":
                    call.expressions.append(given)
                elif name == "--file":
                    call.script_files.append(given)
            elif name == "--in-place":
                call.in_place = True
            elif name in ("--quiet", "--silent"):
                call.quiet = True
            continue
        cluster = text[1:]
        for position, letter in enumerate(cluster):
            if letter == "i":
                call.in_place = True
                break  # the rest of the word is the backup suffix
            if letter in "efl":
                rest = cluster[position + 1 :]
                if rest:
                    given = Word(rest, word.static)
                elif index < len(args):
                    given = args[index]
                    index += 1
                else:
                    call.problem = f"sed -{letter} needs a value"
                    return call
                if letter == "e":
                    call.expressions.append(given)
                elif letter == "f":
                    call.script_files.append(given)
                break
            if letter == "n":
                call.quiet = True
    if not call.expressions and not call.script_files:
        if not positional:
            call.problem = "sed without a script"
            return call
        call.expressions.append(positional.pop(0))
    call.files = positional
    return call


def _sed(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    call = _sed_call(args)
    if call.problem:
        interpretation.problems.append(call.problem)
        return
    for value in call.script_files:
        interpretation.operands.append(Operand(value, write=False, role="sed script file"))
    if call.script_files:
        # The commands of a script file are only known when sed reads it; 'e' and 'w' could be in it.
        interpretation.problems.append("sed -f runs a script file whose commands are not analysed here")
    for word in call.files:
        interpretation.operands.append(
            Operand(word, write=call.in_place, role="sed -i file" if call.in_place else "sed input")
        )
    if any(not e.static for e in call.expressions):
        interpretation.problems.append("sed runs a script computed at run time")
        return
    try:
        script = read_sed_script("\n".join(e.text for e in call.expressions))
    except SedSyntaxError as exc:
        interpretation.problems.append(f"sed: {exc}")
        return
    for name in script.reads:
        interpretation.operands.append(Operand(Word(name), write=False, role="sed r file"))
    for name in writes_to_a_file(script):
        interpretation.operands.append(Operand(Word(name), write=True, role="sed w file"))
    for command in script.runs:
        interpretation.scripts.append(Word(command))
    if script.runs_pattern_space:
        interpretation.problems.append(
            "sed runs text from its input as a shell command (the e command or the s///e flag)"
        )
        interpretation.runs_unseen = True


def _dd(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    for word in args:
        key, eq, value = word.text.partition("=")
        if not eq:
            continue
        if key == "if":
            interpretation.operands.append(
                Operand(Word(value, word.static, word.glob), write=False, role="dd input")
            )
        elif key == "of":
            target = Word(value, word.static, word.glob)
            interpretation.operands.append(Operand(target, write=True, role="dd output"))
            if value.startswith("/dev/") and value not in _names(
                "/dev/null /dev/stdout /dev/stderr /dev/zero"
            ):
                interpretation.dangers.append(Danger("deny", f"dd writes straight to the device {value}"))


def _tar(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    words = list(args)
    if words and words[0].static and not words[0].text.startswith("-") and words[0].text[:1].isalpha():
        words[0] = Word("-" + words[0].text)  # old-style bundled options: 'tar czf out.tgz dir'
    parsed = _parse(
        words,
        _opts(
            "-f --file -C --directory -T --files-from -X --exclude-from -b -g --listed-incremental -I "
            "--use-compress-program -H --format --exclude -N --newer"
        ),
        program,
    )
    creating = parsed.has("-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate")
    extracting = parsed.has("-x", "--extract", "--get")
    for archive in parsed.values("-f", "--file"):
        interpretation.operands.append(Operand(archive, write=creating, role="tar archive"))
    for listing in parsed.values("-T", "--files-from", "-X", "--exclude-from"):
        interpretation.operands.append(Operand(listing, write=False, role="tar file list"))
    if extracting:
        targets = parsed.values("-C", "--directory") or [Word(".")]
        for target in targets:
            interpretation.operands.append(
                Operand(target, write=True, role="tar extraction directory", recursive=True, directory=True)
            )
    elif creating:
        for word in parsed.operands:
            interpretation.operands.append(Operand(word, write=False, role="tar input", recursive=True))


def _unzip(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(args, _opts("-d -x -P"), program)
    if parsed.operands:
        interpretation.operands.append(Operand(parsed.operands[0], write=False, role="unzip archive"))
    if not parsed.has("-l", "-t", "-v", "-p", "-Z"):
        for target in parsed.values("-d") or [Word(".")]:
            interpretation.operands.append(
                Operand(target, write=True, role="unzip extraction directory", recursive=True, directory=True)
            )


def _zip(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(args, _opts("-b -n -t -tt -x -i -P -Z -O"), program)
    recursive = parsed.has("-r", "-R", "--recurse-paths")
    if parsed.operands:
        interpretation.operands.append(Operand(parsed.operands[0], write=True, role="zip archive"))
    for word in parsed.operands[1:]:
        interpretation.operands.append(Operand(word, write=False, role="zip input", recursive=recursive))


def _compressor(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(args, _opts("-S --suffix -T --threads -o"), program)
    to_stdout = parsed.has("-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test")
    for word in parsed.operands:
        interpretation.operands.append(Operand(word, write=not to_stdout, role=f"{program} file"))


def _with_output(
    spec: _Options, outputs: str, *, recursive_flags: str = "", names_only: bool = False
) -> _OperandRule:
    """Programs that read their operands and write one file named by an option (``iconv -o out``)."""
    output_set = tuple(outputs.split())
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = _parse(args, spec, program)
        recursive = any(opt in recursive_set for opt, _ in parsed.options)
        for word in parsed.values(*output_set):
            interpretation.operands.append(Operand(word, write=True, role=f"{program} output"))
        for word in parsed.operands:
            interpretation.operands.append(
                Operand(
                    word, write=False, role=f"{program} input", recursive=recursive, names_only=names_only
                )
            )

    return rule


def _xxd(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    """``xxd [options] [infile [outfile]]``: the second operand is written."""
    parsed = _parse(args, _opts("-c -cols -g -groupsize -l -len -s -seek -o -offset -n -name"), program)
    for position, word in enumerate(parsed.operands[:2]):
        interpretation.operands.append(
            Operand(word, write=position == 1, role="xxd output" if position else "xxd input")
        )


def _sort(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(
        args,
        _opts(
            "-o --output -k --key -t --field-separator -S --buffer-size -T "
            "--temporary-directory --files0-from --compress-program --parallel --batch-size"
        ),
        program,
    )
    for word in parsed.values("-o", "--output"):
        interpretation.operands.append(Operand(word, write=True, role="sort output"))
    for word in parsed.operands:
        interpretation.operands.append(Operand(word, write=False, role="sort input"))


def _uniq(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(args, _opts("-f --skip-fields -s --skip-chars -w --check-chars"), program)
    for position, word in enumerate(parsed.operands[:2]):
        interpretation.operands.append(
            Operand(word, write=position == 1, role="uniq output" if position else "uniq input")
        )


def _tee(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(args, _opts("--output-error"), program)
    for word in parsed.operands:
        interpretation.operands.append(Operand(word, write=True, role="tee output"))


def _curl(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    values = (
        "-o --output -c --cookie-jar -D --dump-header --trace --trace-ascii --stderr --output-dir -T --upload-file "
        "-K --config -d --data --data-binary --data-raw --data-urlencode --data-ascii -F --form -H --header -u "
        "--user -X --request -e --referer -A --user-agent -b --cookie -x --proxy -m --max-time --connect-timeout "
        "-w --write-out -r --range -E --cert --key --cacert --capath --retry --url -Y -y -z --limit-rate"
    )
    parsed = _parse(args, _opts(values), program)
    for word in parsed.values(
        "-o", "--output", "-c", "--cookie-jar", "-D", "--dump-header", "--trace", "--trace-ascii", "--stderr"
    ):
        if word.text != "-":
            interpretation.operands.append(Operand(word, write=True, role="curl output"))
    for word in parsed.values("--output-dir"):
        interpretation.operands.append(
            Operand(word, write=True, role="curl output directory", directory=True)
        )
    if parsed.has("-O", "--remote-name", "-J", "--remote-header-name", "--remote-name-all"):
        interpretation.operands.append(
            Operand(Word("."), write=True, role="curl download directory", directory=True)
        )
    for word in parsed.values("-T", "--upload-file", "-K", "--config"):
        interpretation.operands.append(Operand(word, write=False, role="curl upload"))


def _wget(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    values = (
        "-O --output-document -o --output-file -a --append-output -P --directory-prefix -i --input-file "
        "--post-file --body-file --load-cookies --save-cookies -U --user-agent --header -t --tries -T --timeout "
        "-e --execute -l --level -A --accept -R --reject -D --domains --user --password --method --body-data "
        "--post-data"
    )
    parsed = _parse(args, _opts(values), program)
    outputs = parsed.values("-O", "--output-document")
    for word in outputs:
        if word.text != "-":
            interpretation.operands.append(Operand(word, write=True, role="wget output"))
    for word in parsed.values("-o", "--output-file", "-a", "--append-output", "--save-cookies"):
        interpretation.operands.append(Operand(word, write=True, role="wget log"))
    directories = parsed.values("-P", "--directory-prefix")
    if not outputs:
        for word in directories or [Word(".")]:
            interpretation.operands.append(
                Operand(
                    word,
                    write=True,
                    role="wget download directory",
                    directory=True,
                    recursive=parsed.has("-r", "--recursive", "-m", "--mirror"),
                )
            )
    for word in parsed.values("-i", "--input-file", "--post-file", "--body-file", "--load-cookies"):
        interpretation.operands.append(Operand(word, write=False, role="wget input"))


def _patch(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(
        args,
        _opts(
            "-i --input -p --strip -d --directory -o --output -r --reject-file -F --fuzz "
            "-z --suffix -B --prefix -D --ifdef -V --version-control"
        ),
        program,
    )
    for word in parsed.values("-i", "--input"):
        interpretation.operands.append(Operand(word, write=False, role="patch file"))
    target = (parsed.values("-d", "--directory") or [Word(".")])[0]
    if parsed.operands:
        interpretation.operands.append(Operand(parsed.operands[0], write=True, role="patched file"))
        for word in parsed.operands[1:]:
            interpretation.operands.append(Operand(word, write=False, role="patch file"))
    else:
        # The files a patch changes are named inside it, so anything below the directory may change.
        interpretation.operands.append(
            Operand(target, write=True, role="files named inside the patch", recursive=True, directory=True)
        )


def _chmod_like(program: str) -> _OperandRule:
    def rule(args: Sequence[Word], interpretation: Interpretation, name: str) -> None:
        parsed = _parse(args, _opts("--reference --from"), name)
        operands = list(parsed.operands)
        if not parsed.values("--reference") and operands:
            operands.pop(0)  # the mode, owner or attributes: not a file
        recursive = parsed.has("-R", "--recursive")
        for word in operands:
            interpretation.operands.append(
                Operand(word, write=True, role=f"{name} target", recursive=recursive)
            )
        # setuid/setgid modes and hand-overs to root are judged in privileged.py, like every such command.
        if program in ("chown", "chgrp"):
            interpretation.capabilities.add(Capability.PRIVILEGE)

    return rule


def _git(
    args: Sequence[Word], interpretation: Interpretation, program: str, *, aliased: bool = False
) -> None:
    sub_index = _git_subcommand_index(args)
    aliases = _git_globals(args[: len(args) if sub_index is None else sub_index], interpretation)
    if sub_index is None:
        return
    sub = args[sub_index].text
    rest = list(args[sub_index + 1 :])
    texts = [w.text for w in rest]
    alias = aliases.get(sub)
    if alias is not None and not aliased:
        # 'git -c alias.x=push x' runs 'git push': deny rules and every check below see that form too.
        spelled = (Word("git"), *(Word(part) for part in alias), *rest)
        interpretation.spellings.append(spelled)
        _git(spelled[1:], interpretation, program, aliased=True)
    _git_runs_programs(sub, rest, interpretation)
    if sub == "config":
        _git_config(rest, interpretation)
    if sub == "credential" or sub.startswith("credential-"):
        interpretation.dangers.append(
            Danger("confirm", f"git {sub} reads or changes stored git passwords and tokens")
        )
    if sub in ("push", "pull", "fetch", "clone", "ls-remote", "submodule", "remote"):
        if sub != "remote" or (texts and texts[0] in ("update", "prune", "show")):
            interpretation.capabilities.add(Capability.NETWORK)
    if sub in ("clone", "init") and rest:
        operands = _parse(
            rest,
            _opts(
                "-b --branch -o --origin --depth --reference -c --config --template "
                "--separate-git-dir -u --upload-pack --filter -j --jobs"
            ),
            program,
        ).operands
        target = operands[-1] if sub == "init" else (operands[1] if len(operands) > 1 else None)
        if target is not None:
            interpretation.operands.append(
                Operand(target, write=True, role=f"git {sub} directory", recursive=True)
            )
    for word in rest:
        if word.text.startswith("--output="):
            interpretation.operands.append(
                Operand(Word(word.text.split("=", 1)[1], word.static), write=True, role=f"git {sub} output")
            )
    for position, word in enumerate(rest[:-1]):
        if word.text in ("--output", "-o") and sub in _names("diff log show format-patch archive bundle"):
            interpretation.operands.append(
                Operand(
                    rest[position + 1], write=True, role=f"git {sub} output", directory=sub == "format-patch"
                )
            )
    if sub in _names(
        "commit add rm mv checkout switch restore reset merge rebase pull cherry-pick revert stash tag branch clean apply am init clone gc fetch worktree submodule config"
    ):
        interpretation.capabilities.add(Capability.WRITE_WORKSPACE)
    if sub in ("apply", "am") and not any(
        t in ("--check", "--stat", "--numstat", "--summary") for t in texts
    ):
        interpretation.operands.append(
            Operand(
                Word("."),
                write=True,
                role=f"files named inside the patch (git {sub})",
                recursive=True,
                directory=True,
            )
        )
    if sub == "reset" and "--hard" in texts:
        _destructive(interpretation, "git reset --hard discards uncommitted changes")
    if sub == "clean" and any(
        t == "--force" or (t.startswith("-") and not t.startswith("--") and "f" in t) for t in texts
    ):
        _destructive(interpretation, "git clean -f deletes untracked files")
        interpretation.operands.append(
            Operand(Word("."), write=True, role="git clean", recursive=True, directory=True)
        )
    if sub == "checkout" and any(t in ("-f", "--force", "--", ".") for t in texts):
        _destructive(interpretation, "git checkout can overwrite uncommitted changes")
    if sub == "restore" and "--staged" not in texts:
        _destructive(interpretation, "git restore discards uncommitted changes")
    if sub == "push" and any(
        t in ("-f", "--force", "--force-with-lease", "--mirror", "--delete", "-d")
        or t.startswith("+")
        or t.startswith("--force")
        for t in texts
    ):
        _destructive(interpretation, "a forced push rewrites history on the remote")
    if sub == "branch" and any(t in ("-D",) or (t == "-d" and "--force" in texts) for t in texts):
        _destructive(interpretation, "git branch -D deletes a branch that may not be merged")
    if sub == "stash" and texts[:1] and texts[0] in ("drop", "clear"):
        _destructive(interpretation, "git stash drop/clear deletes stashed work")


_GIT_VALUE_GLOBALS = _names(
    "-C -c --git-dir --work-tree --namespace --exec-path --super-prefix --config-env --list-cmds --attr-source"
)

# Settings whose value is a program git runs (through the shell) at some point of some command.
_GIT_PROGRAM_KEYS = (
    "core.pager core.editor core.sshcommand core.askpass core.fsmonitor core.gitproxy "
    "core.alternaterefscommand credential.helper credential.*.helper diff.external diff.*.command "
    "diff.*.textconv difftool.*.cmd mergetool.*.cmd merge.*.driver filter.*.clean filter.*.smudge "
    "filter.*.process gpg.program gpg.*.program sequence.editor pager.* interactive.difffilter "
    "uploadpack.packobjectshook sendemail.tocmd sendemail.cccmd sendemail.sendmailcmd "
    "sendemail.smtpserver remote.*.uploadpack remote.*.receivepack web.browser browser.*.cmd man.*.cmd "
    "man.viewer core.hookspath"
).split()
# Settings that make git read more settings, or enable transports that run commands.
_GIT_INDIRECT_KEYS = ("include.*", "includeif.*", "protocol.*", "url.*", "remote.*.vcs")
# Settings known to change only how git shows or records things.
_GIT_HARMLESS_PREFIXES = (
    "color.",
    "user.",
    "author.",
    "committer.",
    "log.",
    "advice.",
    "i18n.",
    "status.",
    "grep.",
    "column.",
    "blame.",
    "versionsort.",
    "feature.",
    "index.",
    "core.quotepath",
    "core.autocrlf",
    "core.safecrlf",
    "core.abbrev",
    "core.eol",
    "core.filemode",
    "core.ignorecase",
    "core.longpaths",
    "core.precomposeunicode",
    "core.whitespace",
    "core.commentchar",
    "core.compression",
    "init.defaultbranch",
    "pull.rebase",
    "pull.ff",
    "push.default",
    "push.autosetupremote",
    "safe.directory",
    "commit.gpgsign",
    "tag.gpgsign",
    "tag.sort",
    "branch.sort",
    "diff.renames",
    "diff.algorithm",
    "diff.noprefix",
    "diff.mnemonicprefix",
    "diff.context",
    "diff.colormoved",
    "diff.indentheuristic",
    "diff.relative",
    "merge.conflictstyle",
    "merge.ff",
    "rebase.autosquash",
    "rebase.autostash",
    "fetch.prune",
    "maintenance.auto",
    "gc.auto",
    "submodule.recurse",
    "pack.threads",
)


def _git_key_kind(key: str) -> Literal["program", "indirect", "harmless", "unknown"]:
    key = key.lower()
    if key.startswith("alias."):
        return "program"
    if any(fnmatchcase(key, pattern) for pattern in _GIT_PROGRAM_KEYS):
        return "program"
    if any(fnmatchcase(key, pattern) for pattern in _GIT_INDIRECT_KEYS):
        return "indirect"
    if key.startswith(_GIT_HARMLESS_PREFIXES):
        return "harmless"
    return "unknown"


def _git_globals(words: Sequence[Word], interpretation: Interpretation) -> dict[str, list[str]]:
    """Options before the subcommand: ``-c key=value`` may name programs git runs or aliases, and
    ``--exec-path=DIR`` swaps every git helper. Returns the aliases set with ``-c alias.NAME=…``."""
    aliases: dict[str, list[str]] = {}
    index = 0
    while index < len(words):
        word = words[index]
        text = word.text
        index += 1
        setting: Word | None = None
        from_environment = False
        if text in ("-c", "--config-env") and index < len(words):
            setting, from_environment = words[index], text == "--config-env"
            index += 1
        elif text.startswith("--config-env="):
            setting, from_environment = Word(text.split("=", 1)[1], word.static), True
        elif text.startswith("-c") and len(text) > 2 and not text.startswith("--"):
            setting = Word(text[2:], word.static)
        elif text.startswith("--exec-path="):
            interpretation.problems.append(
                "git --exec-path= makes git run its helper programs from another directory; not analysed"
            )
        elif text in ("--git-dir", "--work-tree", "-C") and index < len(words):
            interpretation.operands.append(
                Operand(words[index], write=False, role=f"git {text} directory", names_only=True)
            )
            index += 1
        elif text.startswith(("--git-dir=", "--work-tree=")):
            name, _, value = text.partition("=")
            interpretation.operands.append(
                Operand(Word(value, word.static), write=False, role=f"git {name} directory", names_only=True)
            )
        if setting is None:
            continue
        key, eq, value = setting.text.partition("=")
        if not setting.static or (not eq and not from_environment):
            interpretation.problems.append(f"git -c {setting.text} cannot be read before it runs")
            continue
        _git_setting(key, None if from_environment else value, interpretation, aliases, via="-c")
    return aliases


def _git_setting(
    key: str,
    value: str | None,
    interpretation: Interpretation,
    aliases: dict[str, list[str]],
    *,
    via: str,
) -> None:
    """One setting given on the command line or written by ``git config``; ``value`` None: from the environment."""
    kind = _git_key_kind(key)
    shown = f"git {via} {key}"
    if kind == "harmless":
        return
    if kind in ("indirect", "unknown"):
        why = (
            "makes git read settings or run transports from elsewhere"
            if kind == "indirect"
            else "may name a program git runs"
        )
        interpretation.problems.append(f"{shown} {why}; it is not analysed")
        return
    if value is None:
        interpretation.problems.append(f"{shown} takes a program from the environment at run time")
        return
    if key.lower() == "core.hookspath":
        interpretation.problems.append(
            f"{shown} makes git run hook scripts from {value}; they are not analysed"
        )
        return
    if key.lower().startswith("alias."):
        if value.startswith("!"):
            interpretation.scripts.append(Word(value[1:]))
        else:
            aliases[key[len("alias.") :]] = value.split()
        return
    if value.strip():
        interpretation.scripts.append(Word(value))


def _git_runs_programs(sub: str, rest: Sequence[Word], interpretation: Interpretation) -> None:
    """Subcommands whose options name a command to run: each is analysed like any other command."""
    texts = [w.text for w in rest]
    command_options = {
        "rebase": ("-x", "--exec"),
        "difftool": ("-x", "--extcmd"),
        "grep": ("-O", "--open-files-in-pager"),
        "filter-branch": (
            "--env-filter",
            "--tree-filter",
            "--index-filter",
            "--parent-filter",
            "--msg-filter",
            "--commit-filter",
            "--tag-name-filter",
        ),
    }.get(sub, ())
    for position, word in enumerate(rest):
        text = word.text
        for option in command_options:
            if text == option and position + 1 < len(rest) and sub != "grep":
                interpretation.scripts.append(rest[position + 1])
            elif text.startswith(option + "=") or (
                option in ("-O", "-x") and text.startswith(option) and len(text) > 2
            ):
                glued = text.split("=", 1)[1] if "=" in text and text.startswith("--") else text[2:]
                interpretation.scripts.append(Word(glued, word.static))
    if sub == "bisect" and texts[:1] == ["run"] and len(rest) > 1:
        interpretation.nested.append(Nested(tuple(rest[1:])))
    if sub == "submodule" and "foreach" in texts:
        command = [w for w in rest[texts.index("foreach") + 1 :] if w.text != "--recursive"]
        if command:
            interpretation.scripts.append(
                Word(" ".join(w.text for w in command), static=all(w.static for w in command))
            )


_GIT_CONFIG_READS = _names(
    "--get --get-all --get-regexp --get-urlmatch -l --list --get-color --get-colorbool get list"
)
_GIT_CONFIG_WRITES = _names(
    "--unset --unset-all --add --replace-all --rename-section --remove-section -e --edit set unset "
    "rename-section remove-section edit"
)


def _git_config(rest: Sequence[Word], interpretation: Interpretation) -> None:
    """``git config`` writes settings git later acts on, outside any sandbox: a key that names a program is
    refused, other writes are file writes to the scope's file (``--global`` is ``~/.gitconfig``)."""
    texts = [w.text for w in rest]
    parsed = _parse(
        rest,
        _opts("-f --file --blob --type --default --comment --value"),
        "git config",
    )
    positional = [w for w in parsed.operands]
    words = [w.text for w in positional]
    if words[:1] and words[0] in _GIT_CONFIG_READS | _GIT_CONFIG_WRITES:
        action = words[0]
        positional = positional[1:]
    else:
        action = next((t for t in texts if t in _GIT_CONFIG_READS | _GIT_CONFIG_WRITES), None)
    if action in _GIT_CONFIG_READS or (action is None and len(positional) < 2):
        return
    if action in ("-e", "--edit", "edit"):
        interpretation.dangers.append(
            Danger(
                "deny", "git config --edit lets anything into the settings git acts on outside the sandbox"
            )
        )
        return
    if parsed.has("--global"):
        target = Word("~/.gitconfig")
    elif parsed.has("--system"):
        target = Word("/etc/gitconfig")
    elif parsed.values("-f", "--file"):
        target = parsed.values("-f", "--file")[0]
    else:
        target = None
    if target is not None:
        interpretation.operands.append(Operand(target, write=True, role="git config file"))
    if action in ("--unset", "--unset-all", "unset", "--remove-section", "remove-section"):
        return
    if not positional:
        return
    key = positional[0]
    value = " ".join(w.text for w in positional[1:2]) if len(positional) > 1 else ""
    if not key.static or (len(positional) > 1 and not positional[1].static):
        interpretation.problems.append("git config writes a setting computed at run time")
        return
    kind = _git_key_kind(key.text)
    if key.text.lower().startswith("alias.") and not value.startswith("!"):
        return  # an alias for other git words; git never lets one replace a built-in command
    if kind == "program":
        interpretation.dangers.append(
            Danger(
                "deny",
                f"git config {key.text} names a program git would run later, outside the sandbox "
                f"({value or 'empty'})",
            )
        )
    elif kind in ("indirect", "unknown"):
        interpretation.problems.append(
            f"git config {key.text} is not analysed; it may make git run something"
        )


def _git_subcommand_index(args: Sequence[Word]) -> int | None:
    index = 0
    while index < len(args):
        text = args[index].text
        if text in _GIT_VALUE_GLOBALS:
            index += 2
            continue
        if text.startswith("-"):
            index += 1
            continue
        return index
    return None


def _destructive(interpretation: Interpretation, reason: str) -> None:
    interpretation.capabilities.add(Capability.DESTRUCTIVE)
    interpretation.dangers.append(Danger("ask", reason))


def _rm(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(args, _opts("--interactive"), program)
    recursive = parsed.has("-r", "-R", "--recursive")
    force = parsed.has("-f", "--force")
    if parsed.has("--no-preserve-root"):
        interpretation.dangers.append(Danger("deny", "rm --no-preserve-root is how whole systems get erased"))
    for word in parsed.operands:
        interpretation.operands.append(Operand(word, write=True, role="rm target", recursive=recursive))
    if recursive or force:
        flags = "-" + ("r" if recursive else "") + ("f" if force else "")
        _destructive(interpretation, f"rm {flags} deletes files without a way back")


def _kill(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    # 'kill -1' alone names signal 1; a trailing -1 after another word is the process id -1: everything.
    if len(args) >= 2 and args[-1].text == "-1":
        interpretation.dangers.append(Danger("deny", "kill ... -1 signals every process the user owns"))


_GREP = _opts(
    "-e --regexp -f --file -m --max-count -A --after-context -B --before-context -C --context "
    "--include --exclude --exclude-dir --label --color --colour -d --directories -D --devices "
    "--binary-files"
)
_RG = _opts(
    "-e --regexp -f --file -g --glob --iglob -t --type -T --type-not -m --max-count -A -B -C "
    "--context --after-context --before-context -j --threads -M --max-columns --max-depth -d "
    "--max-filesize --pre --pre-glob --hostname-bin -r --replace --sort --sortr --type-add --color "
    "--colors -E --encoding --path-separator --ignore-file --engine"
)
_ANY = _opts("")

_AWK_OPTIONS = _opts("-f --file -v --assign -F --field-separator -i --include -l --load -E --exec")
_AWK_PIPE_IN = re.compile(r'"((?:[^"\\\n]|\\.)*)"\s*\|\s*getline')
_AWK_PIPE_OUT = re.compile(r'\|&?\s*"((?:[^"\\\n]|\\.)*)"')
_AWK_FILE_OUT = re.compile(r'\bprintf?\b[^;}\n]*?>>?\s*"((?:[^"\\\n]|\\.)*)"')


def _awk(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    """awk reads its input files, and its program may run commands (``system()``, pipes) and write files."""
    parsed = _parse(args, _AWK_OPTIONS, program)
    scripts = parsed.values("-f", "--file", "-E", "--exec")
    operands = list(parsed.operands)
    for script in scripts:
        interpretation.operands.append(Operand(script, write=False, role=f"{program} program file"))
    if scripts:
        interpretation.problems.append(
            f"{program} -f runs a program file whose commands are not analysed here"
        )
    elif operands:
        code = operands.pop(0)
        _inline_code(code, interpretation, program)
        if code.static:
            for match in (*_AWK_PIPE_IN.finditer(code.text), *_AWK_PIPE_OUT.finditer(code.text)):
                interpretation.scripts.append(Word(match.group(1)))
            for match in _AWK_FILE_OUT.finditer(code.text):
                interpretation.operands.append(
                    Operand(Word(match.group(1)), write=True, role=f"{program} output")
                )
            if re.search(r"\bsystem\s*\(\s*[^\s\")]", code.text) or re.search(
                r"\|&?\s*(?!getline\b)[A-Za-z_$]", code.text
            ):
                interpretation.problems.append(f"{program} runs a command built at run time")
    for word in operands:
        if word.static and _ASSIGNMENT.match(word.text):
            continue  # 'var=value' operands set variables, they are not files
        interpretation.operands.append(Operand(word, write=False, role=f"{program} input"))


_OPERAND_RULES: dict[str, _OperandRule] = {
    **{
        name: _all_operands(False, _opts(""), "input", recursive_flags="-R -r --recursive")
        for name in _names(
            "cat tac less more nl wc od hexdump strings file md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum base32 comm paste join fold fmt expand unexpand column rev numfmt look"
        )
    },
    **{name: _all_operands(False, _opts(""), "input", names_only=True) for name in ("readlink", "realpath")},
    **{
        name: _all_operands(False, _opts("-n --lines -c --bytes -s --sleep-interval --pid"), "input")
        for name in ("head", "tail")
    },
    "cut": _all_operands(
        False,
        _opts("-d --delimiter -f --fields -b --bytes -c --characters --output-delimiter"),
        "input",
    ),
    "ls": _all_operands(
        False,
        _opts("-I --ignore -w --width -T --tabsize --hide --block-size --time-style"),
        "input",
        recursive_flags="-R --recursive",
        names_only=True,
    ),
    "du": _all_operands(
        False,
        _opts("-X --exclude-from --exclude -d --max-depth -B --block-size -t --threshold --time-style"),
        "input",
        recursive_flags="-a -s -c",
        names_only=True,
    ),
    "diff": _all_operands(
        False,
        _opts(
            "-U -C -x --exclude -X --exclude-from -I -L --label -F --show-function-line --to-file --from-file"
        ),
        "input",
        recursive_flags="-r --recursive",
    ),
    "stat": _all_operands(False, _opts("-c --format --printf"), "input", names_only=True),
    "base64": _with_output(_opts("-w --wrap -i --input -o --output"), "-o --output"),
    "iconv": _with_output(_opts("-f --from-code -t --to-code -o --output"), "-o --output"),
    "shuf": _with_output(
        _opts("-n --head-count -o --output --random-source -i --input-range"), "-o --output"
    ),
    "tree": _with_output(
        _opts("-L -P -I --filelimit --timefmt -o -H -T --charset"),
        "-o",
        recursive_flags="-a",
        names_only=True,
    ),
    "xxd": _xxd,
    "grep": _skip_first(
        False,
        _GREP,
        "input",
        unless="-e --regexp -f --file",
        recursive_flags="-r -R --recursive --dereference-recursive",
    ),
    "egrep": _skip_first(
        False, _GREP, "input", unless="-e --regexp -f --file", recursive_flags="-r -R --recursive"
    ),
    "fgrep": _skip_first(
        False, _GREP, "input", unless="-e --regexp -f --file", recursive_flags="-r -R --recursive"
    ),
    "rg": _skip_first(
        False,
        _RG,
        "input",
        unless="-e --regexp -f --file --files --type-list",
        always_recursive=True,
        names_only_flags="--files --type-list",
    ),
    "ag": _skip_first(False, _opts("-G --file-search-regex -A -B -C --depth --ignore"), "input"),
    **{name: _awk for name in ("awk", "gawk", "mawk", "nawk")},
    "jq": _skip_first(
        False,
        _opts("-f --from-file --arg --argjson --slurpfile --rawfile --indent --tab"),
        "input",
        unless="-f --from-file",
    ),
    "sed": _sed,
    "rm": _rm,
    "rmdir": _all_operands(True, _ANY, "target"),
    "unlink": _all_operands(True, _ANY, "target"),
    "touch": _all_operands(True, _opts("-d --date -t -r --reference"), "target"),
    "mkdir": _all_operands(True, _opts("-m --mode --context"), "target"),
    "mkfifo": _all_operands(True, _opts("-m --mode"), "target"),
    "shred": _all_operands(True, _opts("-n --iterations -s --size --random-source"), "target"),
    "truncate": _all_operands(True, _opts("-s --size -r --reference"), "target"),
    "chmod": _chmod_like("chmod"),
    "chown": _chmod_like("chown"),
    "chgrp": _chmod_like("chgrp"),
    "chattr": _chmod_like("chattr"),
    "setfacl": _all_operands(
        True,
        _opts("-m --modify -x --remove -M -X --set --set-file"),
        "target",
        recursive_flags="-R --recursive",
    ),
    "cp": _copy_like(
        _opts("-t --target-directory -S --suffix --backup --preserve --sparse --reflink"),
        sources_written=False,
        recursive_flags="-r -R --recursive -a --archive",
    ),
    "mv": _copy_like(
        _opts("-t --target-directory -S --suffix --backup"),
        sources_written=True,
        recursive_flags="",
        whole_trees=True,
    ),
    "ln": _copy_like(
        _opts("-t --target-directory -S --suffix --backup"), sources_written=False, whole_trees=True
    ),
    "install": _copy_like(
        _opts("-t --target-directory -m --mode -o --owner -g --group -S --suffix"),
        sources_written=False,
    ),
    "rsync": _copy_like(
        _opts(
            "-e --rsh --exclude --include --exclude-from --include-from --files-from --filter -f "
            "--backup-dir --suffix --chmod --timeout --bwlimit --port --partial-dir --log-file "
            "--password-file --rsync-path -T --temp-dir --compare-dest --copy-dest --link-dest"
        ),
        sources_written=False,
        recursive_flags="-r --recursive -a --archive",
    ),
    "scp": _copy_like(_opts("-i -F -o -P -l -c -S -J"), sources_written=False, recursive_flags="-r"),
    "tee": _tee,
    "dd": _dd,
    "tar": _tar,
    "unzip": _unzip,
    "zip": _zip,
    **{
        name: _compressor
        for name in ("gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lzma", "compress")
    },
    "sort": _sort,
    "uniq": _uniq,
    "curl": _curl,
    "wget": _wget,
    "patch": _patch,
    "git": _git,
    "find": lambda args, interpretation, program: _interpret_find(args, interpretation),
    "kill": _kill,
}

# -- capabilities and dangers by name ---------------------------------------------------------------

_NETWORK_PROGRAMS = frozenset(
    "curl wget nc ncat netcat socat ssh scp sftp ftp lftp telnet ping ping6 dig nslookup host whois http https "
    "aria2c mosh rsync npx gh aws gcloud az kubectl helm terraform".split()
)
_NETWORK_SUBCOMMANDS: dict[str, frozenset[str]] = {
    "pip": frozenset({"install", "download", "wheel", "search", "index"}),
    "pip3": frozenset({"install", "download", "wheel", "search", "index"}),
    "uv": frozenset({"pip", "add", "sync", "lock", "run", "tool", "python", "venv"}),
    "npm": _names("install i ci add update upgrade publish exec x view info outdated audit"),
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
        _destructive(interpretation, "crontab -r deletes every scheduled job")
    elif (name == "crontab" and not set(texts) & {"-l", "-V"}) or (
        name in ("at", "batch") and "-l" not in texts
    ):
        interpretation.dangers.append(
            Danger("confirm", f"{name} schedules commands that run later, outside the sandbox")
        )
    _history_wiping(name, args, interpretation)
    rule = _OPERAND_RULES.get(name)
    if rule is not None:
        rule(args, interpretation, name)
    elif name in SHELLS:
        _interpret_shell(args, interpretation)
    elif name in INTERPRETERS or re.fullmatch(r"python\d(\.\d+)?", name):
        _interpret_interpreter(args, interpretation, name)
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


HISTORY_VARIABLES = frozenset({"HISTFILE", "HISTSIZE", "HISTFILESIZE", "HISTCONTROL", "HISTIGNORE"})


def history_setting_hides(name: str, value: str | None) -> bool:
    """Whether setting (``value``) or unsetting (None) a history variable stops commands being recorded."""
    if name == "HISTFILE":
        return True  # moved or dropped, the record is gone from where anyone would look
    if name in ("HISTSIZE", "HISTFILESIZE"):
        return value is None or value.strip() in ("", "0")
    if name == "HISTIGNORE":
        return value is not None and "*" in value
    if name == "HISTCONTROL":
        return value is not None and "ignorespace" in value or value is not None and "ignoreboth" in value
    return False


def _history_wiping(name: str, args: Sequence[Word], interpretation: Interpretation) -> None:
    texts = [w.text for w in args]
    reason = None
    if name == "history" and any(
        t.startswith("-") and not t.startswith("--") and set(t[1:]) & {"c", "d"} for t in texts
    ):
        reason = "history -c/-d erases the shell's record of what ran"
    elif name == "unset" and any(t in HISTORY_VARIABLES and history_setting_hides(t, None) for t in texts):
        reason = "unsetting the history variables stops the shell recording what runs"
    elif name == "set" and "history" in texts and "+o" in texts:
        reason = "set +o history stops the shell recording what runs"
    if reason is not None:
        interpretation.dangers.append(history_danger(reason))


def history_danger(reason: str) -> Danger:
    return Danger("deny", f"{reason}, which hides the session's tracks")


_INLINE_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-r", "-m", "--eval", "--print", "-p", "--command"})


def _interpret_interpreter(args: Sequence[Word], interpretation: Interpretation, name: str) -> None:
    """``python x.py`` reads a script file; ``python -c CODE`` carries its program inline; bare ``python`` reads stdin."""
    for position, word in enumerate(args):
        text = word.text
        if not word.static or not text.startswith("-") or text == "-":
            if text != "-":
                if word.pipe:
                    _unseen_script(
                        interpretation, f"{name} runs a program another command writes at run time ({text})"
                    )
                    return
                interpretation.operands.append(Operand(word, write=False, role=f"{name} script"))
                return
            break
        if text in _INLINE_CODE_OPTIONS or (not text.startswith("--") and ("c" in text or "e" in text)):
            letter = next((i for i, ch in enumerate(text) if ch in "cepr" and i > 0), len(text) - 1)
            glued = text[letter + 1 :] if not text.startswith("--") else ""
            code = (
                Word(glued, word.static)
                if glued
                else (args[position + 1] if position + 1 < len(args) else None)
            )
            if code is not None:
                _inline_code(code, interpretation, name)
            return
    interpretation.reads_script_from_stdin = True


_STRING_LITERAL = re.compile(r"'((?:[^'\\\n]|\\.)*)'" + r'|"((?:[^"\\\n]|\\.)*)"')
_SHELL_CALL = re.compile(
    r"\b(?:system|popen|exec[lv]?p?e?|spawn(?:Sync)?|execSync|check_output|check_call|getoutput"
    r"|getstatusoutput|call|run|Popen)\s*\(\s*[rbf]?(['\"])((?:(?!\1)[^\\\n]|\\.)*)\1"
)
_FORK_LOOP = re.compile(
    r"\bfork\b[\s\S]*\b(?:while|for|loop|until)\b|\b(?:while|for|loop|until)\b[\s\S]*\bfork\b"
)
_MAX_INLINE_CODE = 20_000


def _inline_code(code: Word, interpretation: Interpretation, name: str) -> None:
    """Program text on the command line (``python -c``, ``perl -e``, an awk program) stays opaque, but the
    obvious is still read out of it: quoted paths it may open, commands it hands to a shell, and a loop
    that forks."""
    if not code.static:
        danger = Danger("privileged", dynamic_code_reason(name, code), interpretation.effective)
        interpretation.dangers.append(danger)
        return
    text = code.text[:_MAX_INLINE_CODE]
    for match in _STRING_LITERAL.finditer(text):
        literal = match.group(1) if match.group(1) is not None else match.group(2)
        if literal and ("/" in literal or literal.startswith((".", "~"))) and "\x00" not in literal:
            interpretation.embedded.append(Word(literal))
    for match in _SHELL_CALL.finditer(text):
        interpretation.scripts.append(Word(match.group(2)))
    if _FORK_LOOP.search(text):
        interpretation.dangers.append(Danger("deny", f"the {name} program forks in a loop: a fork bomb"))


def takes_paths(name: str) -> bool:
    """Whether the program's arguments name files, so an argument computed at run time is a path nobody checked."""
    return name in _OPERAND_RULES or name in SHELLS or name in INTERPRETERS or name.startswith("python")


def interpret(argv: tuple[Word, ...]) -> Interpretation:
    """Unwrap, classify and find the files of one simple command (``argv[0]`` must be static)."""
    interpretation = Interpretation(stages=[argv])
    _unwrap(argv, interpretation)
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

_SAFE_PLAIN = frozenset(
    "ls cat head tail wc grep egrep fgrep pwd echo printf true false : test [ [[ which type whoami id uname "
    "basename dirname realpath readlink file stat du df cut tr nl tac rev column seq expr md5sum sha1sum "
    "sha256sum sha512sum cksum b2sum od hexdump strings diff cmp comm paste join fold numfmt cd nproc".split()
)
_SAFE_GIT = frozenset(
    "status diff log show rev-parse ls-files blame ls-tree cat-file grep shortlog describe".split()
)
_UNSAFE_GIT_GLOBALS = tuple(
    "-c --config-env --git-dir --work-tree --exec-path --namespace --super-prefix --list-cmds --attr-source".split()
)
_SAFE_SYSTEM_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/")


def is_known_safe(interpretation: Interpretation) -> bool:
    """True for a program from the small read-only set, called without wrappers and with nothing that writes."""
    if interpretation.wrappers or interpretation.assignments or interpretation.nested:
        return False
    if interpretation.scripts:
        # 'bash -c SCRIPT' only runs its script, whose commands are analysed and judged one by one.
        argv = interpretation.effective
        return (
            len(interpretation.scripts) == 1
            and interpretation.scripts[0].static
            and base_name(argv[0]) in SHELLS
            and "/" not in argv[0].text
            and not interpretation.operands
        )
    if any(op.write for op in interpretation.operands) or interpretation.operands_from_stdin:
        return False
    argv = interpretation.effective
    if not argv or not all(w.static for w in argv):
        return False
    program = argv[0].text
    if "/" in program:
        if not program.startswith(_SAFE_SYSTEM_DIRS):
            return False  # './ls' or 'bin/cat' may be anything the model wrote
        program = program.rsplit("/", 1)[-1]
    texts = [w.text for w in argv[1:]]
    if program in _SAFE_PLAIN:
        return True
    if program == "find":
        return not any(
            t in _FIND_EXEC or t == "-delete" or t in _FIND_FILE_WRITES or t == "-fprintf" for t in texts
        )
    if program == "rg":
        return not any(
            t in ("-z", "--search-zip", "--pre", "--hostname-bin")
            or t.startswith(("--pre=", "--hostname-bin="))
            for t in texts
        )
    if program == "sed":
        return _safe_sed(argv[1:])
    if program == "sort":
        return not any(
            t in ("-o", "--output", "--compress-program")
            or t.startswith(("--output=", "-o", "--compress-program"))
            for t in texts
        )
    if program in ("uniq", "xxd"):
        return len([t for t in texts if not t.startswith("-")]) <= 1 and not any(
            t in ("-r", "-revert") for t in texts
        )
    if program == "base64":
        return not any(t in ("-o", "--output") or t.startswith(("--output=", "-o")) for t in texts)
    if program == "date":
        return not any(t in ("-s", "--set") or t.startswith("--set") for t in texts)
    if program == "hostname":
        return not texts
    if program == "git":
        return _safe_git(texts)
    if program == "jq":
        return True
    if program == "tree":
        return not any(t == "-o" or t.startswith("-o") for t in texts)
    return False


_SED_SAFE_FLAGS = frozenset("nErsuz")
_SED_SAFE_LONG = frozenset(
    {"--quiet", "--silent", "--regexp-extended", "--separate", "--unbuffered", "--debug"}
)


def _safe_sed(args: Sequence[Word]) -> bool:
    """``sed -n`` with a script of addresses and printing commands only (``sed -n '1,5p' f``,
    ``sed -n -e '/x/p' f``), no in-place editing, no script file, nothing but read-only options."""
    call = _sed_call(args)
    if call.problem or call.in_place or call.script_files or not call.quiet:
        return False
    for word in args:
        text = word.text
        if not word.static or not text.startswith("-") or text == "-" or word in call.expressions:
            continue
        if text.startswith("--"):
            if text.partition("=")[0] not in (*_SED_SAFE_LONG, "--expression"):
                return False
        elif not set(text[1:].split("e", 1)[0]) <= _SED_SAFE_FLAGS:
            return False
    try:
        script = read_sed_script("\n".join(e.text for e in call.expressions))
    except SedSyntaxError:
        return False
    return script.print_only and not script.reads and not script.writes


def _safe_git(texts: list[str]) -> bool:
    index = 0
    while index < len(texts):
        text = texts[index]
        if text == "-C":
            index += 2
            continue
        if text.startswith(_UNSAFE_GIT_GLOBALS) or text.startswith("-c"):
            return False
        if text.startswith("-"):
            if text not in ("--no-pager", "-P", "--no-optional-locks", "--bare", "--literal-pathspecs"):
                return False
            index += 1
            continue
        break
    if index >= len(texts):
        return False
    sub, rest = texts[index], texts[index + 1 :]
    if any(t == "--output" or t.startswith("--output=") or t in ("--ext-diff", "--textconv") for t in rest):
        return False
    if sub == "grep" and any(t.startswith(("-O", "--open-files-in-pager")) for t in rest):
        return False  # opens the matches in a pager or editor program
    if sub == "branch":
        listing = {
            "--show-current",
            "-a",
            "--all",
            "-r",
            "--remotes",
            "-v",
            "-vv",
            "--verbose",
            "--list",
            "-l",
            "--contains",
            "--merged",
            "--no-merged",
            "--no-color",
            "--color",
        }
        return all(t in listing for t in rest)
    if sub == "tag":
        return all(t in ("-l", "--list", "-n") for t in rest)
    if sub == "remote":
        return all(t in ("-v", "--verbose") for t in rest)
    return sub in _SAFE_GIT
