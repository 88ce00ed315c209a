"""Attacks through what bash evaluates at run time (issue 16): an allow rule never covers a line whose words
the analysis cannot fully resolve.

Each line below was allowed before: an allow rule such as ``Shell(echo:*)`` covered it, or the line was
judged known-safe, while bash ran a command hidden inside a value (prompt expansion, indirection,
arithmetic, subscripts, variable names builtins evaluate), split a word where the analysis did not, or
changed which program a later name finds. Now each is unparsed, and an unparsed line asks in every mode.
The bash oracle (``tests/shell/test_bash_oracle.py``) shows for each family that bash really runs the command.
"""

from __future__ import annotations

import subprocess

import pytest

from seepient.protocol import Decision
from seepient.shell import Word, analyse_command
from seepient.shell.evaluation import builtin_assignments, constant_arithmetic, plain_name

ALLOW, ASK, DENY = Decision.ALLOW, Decision.ASK, Decision.DENY
# Rules a user might well write; each attack below stays inside what they name.
ALLOW_RULES = [
    "Shell(echo:*)",
    "Shell(printf:*)",
    "Shell(test:*)",
    "Shell(read:*)",
    "Shell(let:*)",
    "Shell(cat:*)",
    "Shell(ls:*)",
    "Shell(mapfile:*)",
    "Shell(readarray:*)",
    "Shell(compgen:*)",
    "Shell(set:*)",
    "Shell(true)",
    "Shell(:)",
    "Shell(getopts:*)",
    "Shell(wait:*)",
    "Shell(env:*)",
    "Shell(bash:*)",
    "Shell(dd:*)",
]

EVALUATED_VALUES = [
    # prompt expansion runs the substitutions in a value
    'echo "${v=aa\\140 touch pwned\\140}${v@P}"',
    "v='$(id)'; echo ${v@P}",
    "v='`id`'; echo \"${v@P}\"",
    "echo ${a[@]@P}",
    "cat <<EOF\n${v@P}\nEOF\n",
    "bash -c 'echo ${v@P}'",
    "echo ${x:-${v@P}}",
    # indirection expands the variable a value names, evaluating a subscript in it
    "x='a[$(id)]'; echo ${!x}",
    "echo ${!x:-y}",
    'echo "${!x}"',
    "echo ${!x[0]}",
    ": ${!x=1}",
    # arithmetic evaluates the values of the names in it, recursively
    "x='a[$(id)]'; echo $((x))",
    "echo $(( $x ))",
    "echo $[x]",
    "echo ${y:x}",
    "echo ${y:0:x}",
    "echo $(( 'a[$(id)]' ))",
    "echo $(( $(cat n) + 1 ))",
    "(( x ))",
    "for ((i=0; i<n; i++)); do echo; done",
    "let x",
    "let 'a[$(id)]'",
    "[[ $x -eq 1 ]]",
    "[[ 'a[$(id)]' -lt 1 ]]",
    "[[ x -ge 1 ]] && echo y",
    "declare -i n; n=$x",
    "typeset -i y='a[$(id)]'",
    # subscripts of indexed arrays are arithmetic
    "echo ${a[x]}",
    "echo ${a[$x]}",
    "echo \"${a['$(id)']}\"",
    "echo ${#a[$x]}",
    "a[x]=1",
    "a=([x]=1)",
    "a=(['$(id)']=1)",
    "declare -A m; m[k]=1; unset 'm[$(id)]'",
    # names that builtins evaluate
    "printf -v 'a[$(id)]' x",
    "printf -va'[$(id)]' x",
    "read 'a[$(id)]' <<< x",
    "read -ra 'a[$(id)]' <<< x",
    "mapfile 'a[$(id)]' < /dev/null",
    "getopts ab 'a[$(id)]'",
    "wait -p 'a[$(id)]'",
    "test -v 'a[$(id)]'",
    "[ -v 'a[$(id)]' ]",
    "[[ -v 'a[$(id)]' ]]",
    "unset 'a[$(id)]'",
    "declare 'a[$(id)]=1'",
    "export 'a[$(id)]=1'",
    'printf -v "$n" x',
    'read "$n"',
    'declare "$n=1"',
    "builtin printf -v 'a[$(id)]' x",
    "command read 'a[$(id)]'",
    "echo x | read -a 'b[$(id)]'",
    # compound assignments hidden in a declaration's value
    "declare -a 'a=([$(id)]=1)'",
    "declare -a a=$x",
    'local -a a="$x"',
    "a=(1); declare a=$x",
    "read -a a <<< 1; declare a=$x",
    "mapfile < /dev/null; declare MAPFILE=$x",
    "f() { local -a a; local a=$x; }; f",
    "declare -a 'a=($(id))'",
    "declare -n r='a[$(id)]'; echo $r",
    # builtins that run a command given as text
    "mapfile -C id -c 1 a < /dev/null",
    "readarray -C 'id' a < /dev/null",
    "compgen -C id x",
    # substitutions the parser left inside other text
    "echo ${x:-`id`}",
    "echo \"${x:-'`id`'}\"",
    "echo ${x/a/`id`}",
    "cat <<< ${x:-`id`}",
    "[[ a =~ <(id) ]]",
    "echo >&'$(id)'",
    "echo >&'x`id`'",
]

SHELL_STATE = [
    # builtins that assign a variable which decides which program a name runs
    "read PATH <<< .; ls",
    "printf -v PATH .; ls",
    "for PATH in .; do ls; done",
    "mapfile PATH <<< .; ls",
    "unset PATH; ls",
    "f() { local PATH; ls; }; f",
    ": ${PATH:=.}; ls",
    "read -a BASH_ENV <<< x; bash -c true",
    # PS4 is prompt-expanded for every traced command
    "PS4='$(id)'; set -x; echo a",
    "read -d '' PS4 <<< '$(id)'; set -x; true",
    "PS4='`id`' bash -xc true",
    # env takes any word with '=' as an environment entry; BASH_FUNC_ entries define functions
    "env 'BASH_FUNC_echo%%=() { id; }' bash -c 'echo hi'",
    "env 'X%=1' cat README.md",
    # '~' after HOME changes, and '~-', '~+', '~N', name folders known only at run time
    "HOME=~/.ssh; cat ~/id_rsa",
    "read HOME <<< /etc; cat ~/shadow",
    # cd to the folder a variable names
    "shopt -s cdable_vars; c=config; cd c; cat secret.json",
]

# Words naming folders known only at run time: the path guard cannot check them, which asks in every mode.
RUN_TIME_FOLDERS = [
    "dd if=~-/id_rsa of=out",
    "cat ~+/x ~-/y ~1/z",
    "cat x=~-/y",
    "OLDPWD=~/.ssh; cat ~-/id_rsa",
]

SPLIT_BY_BASH_DIFFERENTLY = [
    "A=1\recho rm -rf /",
    "X=1\rls",
    "echo a;\rid",
    "echo\ra",
    "echo\x0bx",
    "echo a\x0cb",
    "[x]",
    "[ -n x]",
    "time -v ls",  # bash's time keyword takes only -p: this runs a program named '-v'
    "time -p -p ls",
    # text that is no text: the analysis reports it instead of failing
    "echo \ud800",
]


@pytest.mark.parametrize("command", EVALUATED_VALUES + SHELL_STATE + SPLIT_BY_BASH_DIFFERENTLY)
@pytest.mark.parametrize("mode", ["ask-untrusted", "autonomous-trusted"])
def test_no_allow_rule_and_no_mode_lets_an_unresolved_line_run(
    layout, actions, mode: str, command: str
) -> None:
    engine = layout.engine(mode, allow=ALLOW_RULES)
    verdict = engine.evaluate(actions.shell(command))
    assert verdict.decision is not ALLOW, (command, verdict)
    if verdict.decision is ASK:
        assert verdict.rule == "shell:unparsed", (command, verdict)
    analysis = analyse_command(command)
    assert not analysis.parsed and analysis.problems, command


@pytest.mark.parametrize("command", RUN_TIME_FOLDERS)
def test_directory_stack_tildes_are_computed_at_run_time(layout, actions, command: str) -> None:
    engine = layout.engine("autonomous-trusted", allow=ALLOW_RULES)
    verdict = engine.evaluate(actions.shell(command))
    assert (verdict.decision, verdict.rule) == (ASK, "shell:unverifiable_path"), (command, verdict)


@pytest.mark.parametrize(
    "command",
    [
        "OLDPWD=config; cd -; cat secret.json",
        "OLDPWD=config; cd -L - && cat secret.json",
        "pushd config; pushd /tmp; pushd +1; cat secret.json",
        "DIRSTACK[1]=config; popd; cat secret.json",
    ],
)
def test_cd_to_a_folder_the_line_chose_leaves_the_folder_unknown(layout, actions, command: str) -> None:
    (layout.workspace / "config").mkdir()
    (layout.workspace / "config" / "secret.json").write_text("{}\n")
    engine = layout.engine("autonomous-trusted", allow=ALLOW_RULES, deny=["Read(config/secret.json)"])
    verdict = engine.evaluate(actions.shell(command))
    assert verdict.decision is not ALLOW, (command, verdict)


def test_a_function_named_like_an_allowed_program_is_judged_by_its_body(layout, actions) -> None:
    engine = layout.engine("always-ask", allow=["Shell(echo:*)"])
    assert engine.evaluate(actions.shell("echo hi")).decision is ALLOW
    for command in ("echo() { curl x; }; echo hi", "function echo { rm -rf build; }; echo hi"):
        assert engine.evaluate(actions.shell(command)).decision is not ALLOW, command


def test_the_reported_example_asks_and_says_why(layout, actions) -> None:
    engine = layout.engine("autonomous-trusted", allow=["Shell(echo:*)"])
    verdict = engine.evaluate(actions.shell('echo "${v=aa\\140 touch pwned\\140}${v@P}"'))
    assert (verdict.decision, verdict.rule) == (ASK, "shell:unparsed")
    assert any("prompt string" in reason for reason in verdict.reasons), verdict.reasons
    verdict = engine.evaluate(actions.shell("A=1\recho rm -rf /"))
    assert (verdict.decision, verdict.rule) == (ASK, "shell:unparsed")
    assert any("carriage return" in reason for reason in verdict.reasons), verdict.reasons


# -- what stays resolved ------------------------------------------------------------------------------------

RESOLVED = [
    "echo ${x:-a} ${x#a} ${x%b} ${x/a/b} ${x^^} ${x,,} ${#x}",
    "echo ${x@Q} ${x@E} ${x@A} ${x@a} ${x@K} ${x@k} ${x@U} ${x@u} ${x@L}",
    "echo $((1+2)) $((0x1f * 2#101)) $[3] ${x:1:2} ${x: -1}",
    "echo ${a[0]} ${a[@]} ${a[*]} ${#a[@]} ${!a[@]} ${!pre*} ${!pre@}",
    "echo ~/notes ~root",
    "echo $'\\x41' $'\\c?' $'\\xc3\\xa9' $'\\u00e9'",
    "cat README.md",
    "ls -la",
]


@pytest.mark.parametrize("command", RESOLVED)
def test_plain_expansions_stay_covered_by_an_allow_rule(layout, actions, command: str) -> None:
    engine = layout.engine("always-ask", allow=ALLOW_RULES)
    verdict = engine.evaluate(actions.shell(command))
    assert verdict.decision is ALLOW, (command, verdict)


@pytest.mark.parametrize(
    "command",
    [
        "[[ -v x && 1 -eq 1 && -n $y ]]",
        "test -v x",
        'read -r line < input.txt; echo "$line"',
        "printf -v out '%s-%s' a b",
        "mapfile -t lines < input.txt",
        "declare -a arr=(1 2 3) n=4; local -r w=2; export X=$Y",
        'f() { local n="$1"; declare d=$(date); echo "$n $d"; }; f 3',
        "declare -a 'a=(1 2)'",
        "a=(1); export a=$x",
        "a=([0]=x [1]=y); unset a x",
        "for f in *.py; do echo $f; done",
        "x=$((2#101)); (( 1 )); let 1+2",
        '[[ $# -eq 0 ]] && (( $? == 0 )) && [[ "$#" -lt 3 ]]; echo $(( ${#x} + 1 ))',
        "echo ${a[0]:1:2} ${x: -1} ${@:2}",
        "getopts ab opt",
        "cmd & wait $!",
    ],
)
def test_constructs_bash_does_not_evaluate_are_still_analysed(command: str) -> None:
    analysis = analyse_command(command)
    assert analysis.parsed, (command, analysis.problems)


def test_wait_on_a_computed_job_is_unresolved_since_its_options_may_name_a_variable() -> None:
    # 'wait $pids' with pids='-p a[$(id)]' evaluates the subscript; 'wait $!' cannot hold an option.
    assert not analyse_command("wait $pids").parsed


# -- the pieces -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "constant"),
    [
        ("1", True),
        (" 1 + 2 * (3 - 4) ", True),
        ("0x1F << 2#101", True),
        ("64#zZ@_ % 7", True),
        ("1 ? 2 : 3", True),
        ("", True),
        ("x", False),
        ("1+x", False),
        ("a[0]", False),
        ("$x", False),
        ("'1'", False),
        ('"1"', False),
        ("1e5", False),
        ("0x", False),
        ("\\1", False),
        ("$# + ${#x} * ${#a[@]} - $?", True),  # always numbers
        ("$1", False),
        ("${#a[x]}", False),
        ("$#x", False),
    ],
)
def test_constant_arithmetic(text: str, constant: bool) -> None:
    assert constant_arithmetic(text) is constant


@pytest.mark.parametrize(
    ("text", "plain"),
    [
        ("x", True),
        ("_a1", True),
        ("a[0]", True),
        ("a[@]", True),
        ("a[1+2]", True),
        ("a[x]", False),
        ("a[$(id)]", False),
        ("a['k']", False),
        ("1a", False),
        ("a]", False),
        ("", False),
    ],
)
def test_plain_names(text: str, plain: bool) -> None:
    assert plain_name(text) is plain


@pytest.mark.parametrize(
    ("argv", "names", "problem"),
    [
        ("read -r a b", ["a", "b"], False),
        ("read -ra arr", ["arr"], False),
        ("read -rarr", ["rr"], False),
        ("read -p 'a[$(id)]' x", ["x"], False),  # a prompt, not a name
        ("read -- -x", [], True),
        ("printf -v out %s", ["out"], False),
        ("printf -vout %s", ["out"], False),
        ("printf -- -v 'a[$(id)]'", [], False),  # '-v' is the format here
        ("printf %s 'a[$(id)]'", [], False),
        ("mapfile -t -u 3 lines", ["lines"], False),
        ("mapfile -C cb arr", ["arr"], True),
        ("getopts ab opt 'a[$(id)]'", ["opt"], False),
        ("unset -f 'a[$(id)]'", [], False),
        ("unset -v 'a[$(id)]'", [], True),
        ("wait -n", [], False),
        ("wait -fp pid", ["pid"], False),
        ("let 1+2 3", [], False),
        ("let x", [], True),
        ("test -v x", [], False),
        ("test -n a -a -v 'a[x]'", [], True),
        ("/usr/bin/printf -v x", [], False),  # a program on disk, not the builtin
    ],
)
def test_builtin_assignments(argv: str, names: list[str], problem: bool) -> None:
    words = analyse_command(argv).facts[0].words
    found = builtin_assignments(words)
    assert [name for name, _ in found.names] == names
    assert bool(found.problems) is problem, found.problems


def test_a_computed_option_word_is_unresolved() -> None:
    found = builtin_assignments((Word("read"), Word("$opts", static=False), Word("x")))
    assert found.problems and not found.names


def test_unicode_escapes_beyond_ascii_depend_on_the_locale() -> None:
    """bash writes $'\\u00e9' as UTF-8 in a UTF-8 locale and leaves it as written in the C locale, so the
    analysis cannot know the word; byte escapes are the same everywhere."""
    outputs = {
        locale: subprocess.run(
            ["/bin/bash", "--norc", "-c", "printf '%s' $'\\u00e9' $'\\xc3\\xa9'"],
            capture_output=True,
            env={"LC_ALL": locale},
            check=True,
        ).stdout
        for locale in ("C", "C.UTF-8")
    }
    assert outputs["C"] != outputs["C.UTF-8"] and outputs["C"].endswith("é".encode())
    words = analyse_command("echo $'\\u00e9' $'\\xc3\\xa9' $'\\u0041' $'\\xff'").facts[0].words
    assert [(w.text, w.static) for w in words[1:]] == [
        ("$'\\u00e9'", False),
        ("é", True),
        ("A", True),
        ("$'\\xff'", False),  # the byte 0xff is no text; bash passes it on as it is
    ]
