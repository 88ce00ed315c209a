"""What policy knows about individual programs: wrappers to see through, which operands are files read or
written, the capabilities a program needs, what is dangerous, and the small known-safe read-only set.

Everything here works on argv words the shell analyser has already unquoted; nothing touches the disk.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

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
    ``recursive`` means everything below it is read or changed."""

    word: Word
    write: bool
    role: str
    recursive: bool = False
    directory: bool = False


@dataclass(frozen=True)
class Danger:
    """``deny`` for what no mode may run (formatting a disk), ``ask`` for what needs a person's eyes."""

    level: Literal["deny", "ask"]
    reason: str


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
SHELL_STATE_VARIABLES = _names(
    "PATH BASH_ENV ENV SHELLOPTS BASHOPTS GLOBIGNORE CDPATH PROMPT_COMMAND LD_PRELOAD LD_LIBRARY_PATH LD_AUDIT DYLD_INSERT_LIBRARIES DYLD_LIBRARY_PATH"
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


def _privileged(interpretation: Interpretation, name: str) -> None:
    interpretation.capabilities.add(Capability.PRIVILEGE)
    interpretation.dangers.append(Danger("ask", f"{name} runs a command with raised privileges"))


def _strip_assignments(args: list[Word], interpretation: Interpretation) -> list[Word]:
    while args and args[0].static and _ASSIGNMENT.match(args[0].text):
        name = args[0].text.split("=", 1)[0]
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
        _privileged(interpretation, "runuser")
        if parsed.problem or not parsed.operands:
            interpretation.problems.append(parsed.problem or "runuser without a command")
            return
        interpretation.stages.append(tuple(parsed.operands))
        _unwrap(tuple(parsed.operands), interpretation, depth + 1)
        return
    spec = _WRAPPERS.get(name)
    if spec is None:
        return
    if name == "time" and len(argv) > 1 and argv[1].text in ("-o", "--output", "-a", "--append"):
        interpretation.problems.append("time -o writes its report to a file; it is not analysed")
        return
    args = list(argv[1:])
    if name == "nice" and args and re.fullmatch(r"-\d+", args[0].text):
        args = args[1:]  # the historic 'nice -10 cmd' form
    parsed = _parse(args, spec.options, name)
    if parsed.problem:
        interpretation.problems.append(f"{parsed.problem}; cannot tell which program it runs")
        return
    if any(opt in spec.refuse_options for opt, _ in parsed.options):
        used = next(opt for opt, _ in parsed.options if opt in spec.refuse_options)
        interpretation.problems.append(f"{name} {used} is not analysed; cannot tell what it runs or where")
        return
    interpretation.wrappers.append(name)
    if name in PRIVILEGE_WRAPPERS:
        _privileged(interpretation, name)
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
    _privileged(interpretation, name)
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
        interpretation.operands.append(Operand(operands[0], write=False, role="shell script"))
        return
    interpretation.reads_script_from_stdin = True
    interpretation.stdin_script_is_shell = True


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
        interpretation.operands.append(Operand(root, write=deletes, role="find root", recursive=True))
    if deletes:
        interpretation.capabilities.add(Capability.DESTRUCTIVE)
        interpretation.dangers.append(Danger("ask", "find -delete removes every file the expression matches"))


# -- per-program operand roles ---------------------------------------------------------------------

_OperandRule = Callable[[Sequence[Word], Interpretation, str], None]


def _all_operands(write: bool, spec: _Options, role: str, *, recursive_flags: str = "") -> _OperandRule:
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = _parse(args, spec, program)
        recursive = any(opt in recursive_set for opt, _ in parsed.options)
        for word in parsed.operands:
            interpretation.operands.append(
                Operand(word, write=write, role=f"{program} {role}", recursive=recursive)
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
) -> _OperandRule:
    """Programs whose first operand is not a file (a grep pattern, a chmod mode) unless an option gave it."""
    unless_set = frozenset(unless.split())
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = _parse(args, spec, program)
        operands = parsed.operands if parsed.has(*unless_set) else parsed.operands[1:]
        recursive = always_recursive or any(opt in recursive_set for opt, _ in parsed.options)
        for word in operands:
            interpretation.operands.append(
                Operand(word, write=write, role=f"{program} {role}", recursive=recursive)
            )

    return rule


def _copy_like(spec: _Options, *, sources_written: bool, recursive_flags: str = "") -> _OperandRule:
    recursive_set = frozenset(recursive_flags.split())

    def rule(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
        parsed = _parse(args, spec, program)
        recursive = any(opt in recursive_set for opt, _ in parsed.options)
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
                Operand(word, write=sources_written, role=f"{program} source", recursive=recursive)
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


def _sed(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    parsed = _parse(args, _opts("-e --expression -f --file -l --line-length"), program)
    in_place = any(opt in ("-i", "--in-place") or opt.startswith("--in-place") for opt, _ in parsed.options)
    files = parsed.operands if parsed.has("-e", "--expression", "-f", "--file") else parsed.operands[1:]
    for value in parsed.values("-f", "--file"):
        interpretation.operands.append(Operand(value, write=False, role="sed script file"))
    for word in files:
        interpretation.operands.append(
            Operand(word, write=in_place, role="sed -i file" if in_place else "sed input")
        )


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
        mode = None
        if not parsed.values("--reference") and operands:
            mode = operands.pop(0)
        recursive = parsed.has("-R", "--recursive")
        for word in operands:
            interpretation.operands.append(
                Operand(word, write=True, role=f"{name} target", recursive=recursive)
            )
        if program == "chmod" and mode is not None and _is_setid_mode(mode.text):
            interpretation.capabilities.add(Capability.PRIVILEGE)
            interpretation.dangers.append(
                Danger("ask", f"chmod {mode.text} makes a program run with its owner's rights")
            )
        if program in ("chown", "chgrp"):
            interpretation.capabilities.add(Capability.PRIVILEGE)

    return rule


def _is_setid_mode(mode: str) -> bool:
    if re.fullmatch(r"[0-7]+", mode):
        return int(mode, 8) & 0o6000 != 0
    return re.search(r"[+=][rwxXt]*s", mode) is not None


def _git(args: Sequence[Word], interpretation: Interpretation, program: str) -> None:
    sub_index = _git_subcommand_index(args)
    if sub_index is None:
        return
    sub = args[sub_index].text
    rest = list(args[sub_index + 1 :])
    texts = [w.text for w in rest]
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

_OPERAND_RULES: dict[str, _OperandRule] = {
    **{
        name: _all_operands(False, _opts(""), "input", recursive_flags="-R -r --recursive")
        for name in _names(
            "cat tac less more nl wc od xxd hexdump strings file stat md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum base32 comm paste join fold fmt expand unexpand readlink realpath column iconv rev shuf numfmt look"
        )
    },
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
    ),
    "du": _all_operands(
        False,
        _opts("-X --exclude-from --exclude -d --max-depth -B --block-size -t --threshold --time-style"),
        "input",
        recursive_flags="-a -s -c",
    ),
    "tree": _all_operands(
        False,
        _opts("-L -P -I --filelimit --timefmt -o -H -T --charset"),
        "input",
        recursive_flags="-a",
    ),
    "diff": _all_operands(
        False,
        _opts(
            "-U -C -x --exclude -X --exclude-from -I -L --label -F --show-function-line --to-file --from-file"
        ),
        "input",
        recursive_flags="-r --recursive",
    ),
    "stat": _all_operands(False, _opts("-c --format --printf"), "input"),
    "base64": _all_operands(False, _opts("-w --wrap -i --input"), "input"),
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
        False, _RG, "input", unless="-e --regexp -f --file --files --type-list", always_recursive=True
    ),
    "ag": _skip_first(False, _opts("-G --file-search-regex -A -B -C --depth --ignore"), "input"),
    "awk": _skip_first(
        False,
        _opts("-f --file -v --assign -F --field-separator -i --include"),
        "input",
        unless="-f --file",
    ),
    "gawk": _skip_first(
        False,
        _opts("-f --file -v --assign -F --field-separator -i --include"),
        "input",
        unless="-f --file",
    ),
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
    ),
    "ln": _copy_like(_opts("-t --target-directory -S --suffix --backup"), sources_written=False),
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


_INLINE_CODE_OPTIONS = frozenset({"-c", "-e", "-E", "-r", "-m", "--eval", "--print", "-p", "--command"})


def _interpret_interpreter(args: Sequence[Word], interpretation: Interpretation, name: str) -> None:
    """``python x.py`` reads a script file; ``python -c CODE`` carries its program inline; bare ``python`` reads stdin."""
    for word in args:
        text = word.text
        if not word.static or not text.startswith("-") or text == "-":
            if text != "-":
                interpretation.operands.append(Operand(word, write=False, role=f"{name} script"))
                return
            break
        if text in _INLINE_CODE_OPTIONS or (not text.startswith("--") and ("c" in text or "e" in text)):
            return
    interpretation.reads_script_from_stdin = True


def takes_paths(name: str) -> bool:
    """Whether the program's arguments name files, so an argument computed at run time is a path nobody checked."""
    return name in _OPERAND_RULES or name in SHELLS or name in INTERPRETERS or name.startswith("python")


def interpret(argv: tuple[Word, ...]) -> Interpretation:
    """Unwrap, classify and find the files of one simple command (``argv[0]`` must be static)."""
    interpretation = Interpretation(stages=[argv])
    _unwrap(argv, interpretation)
    if not interpretation.problems:
        _classify(interpretation)
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
        return _safe_sed(texts)
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


def _safe_sed(texts: list[str]) -> bool:
    if not texts or texts[0] != "-n" or len(texts) < 2:
        return False
    return re.fullmatch(r"\d+(,\d+)?p", texts[1]) is not None and all(
        not t.startswith("-") for t in texts[2:]
    )


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
