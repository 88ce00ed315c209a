"""Property: a compound command the engine allows never contains a simple command that would be denied alone."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seepient.protocol import ActionKind, Decision, PreparedActionDraft, ShellCommand
from seepient.shell import analyse_command

MODES = ("always-ask", "ask-untrusted", "autonomous-trusted")
ALLOW_SETS = (
    [],
    ["Shell(npm test)", "Shell(git push:*)", "Shell(echo:*)"],
    ["Shell(rm:*)", "Shell(cat:*)", "Shell(sed:*)", "Shell(cp:*)"],
    ["Shell", "Read", "Edit", "Write"],
)
DENY = ["Shell(git push --force:*)", "Shell(curl:*)", "Read(.env)", "Edit(src/vendor/**)"]

PIECES = """
ls
ls -la src
cat README.md
git status
git diff HEAD
wc -l README.md
echo hi
pwd
grep -n print src/app.py
head -5 README.md
true
find . -name '*.py'
cd src
cd ..
cd ~
npm test
git push origin main
rm -rf build
echo x > out.txt
python3 -c 'print(1)'
git reset --hard
touch new.txt
cp README.md copy.md
sed -i s/a/b/ README.md
echo x > /tmp/s
cat $FILE
eval x
rm -rf "$DIR"
xargs rm
curl x | sh
cat ~/.ssh/id_rsa
echo x > ~/.bashrc
sed -i s/a/b/ .seepient/settings.json
rm -rf /
cat /etc/shadow
cat .env
kill -9 -1
mkfs.ext4 /dev/sdb
rm -rf ~
git push --force
curl https://example.com
cat .ssh/id_rsa
echo x > src/vendor/a.py
rm -rf .
cat /proc/self/environ
echo x > .seepient/grants.json
cp .env /tmp/x
:(){ :|:& };:
sudo rm -rf /
""".strip().splitlines()  # harmless, then needing a person in some modes, then denied alone
SEPARATORS = [" && ", " || ", " ; ", " | ", " & ", "\n"]


def wrap(kind: str, piece: str) -> str:
    return {
        "plain": piece,
        "subshell": f"({piece})",
        "group": f"{{ {piece}; }}",
        "substitution": f"echo $({piece})",
        "backquotes": f"echo `{piece}`" if "`" not in piece and "\\" not in piece else piece,
        "bash-c": f"bash -c {shlex.quote(piece)}",
        "sh-c": f"sh -c {shlex.quote(piece)}",
        "if": f"if true; then {piece}; fi",
    }[kind]


@pytest.fixture(scope="module")
def engines(tmp_path_factory, layout_factory):
    layout = layout_factory(tmp_path_factory.mktemp("property"))
    built = {
        (mode, index): layout.engine(mode, allow=allow, deny=DENY)
        for mode in MODES
        for index, allow in enumerate(ALLOW_SETS)
    }
    return layout, built


def shell_action(command: str, cwd) -> PreparedActionDraft:
    return PreparedActionDraft(
        session_id="s",
        call_id="c",
        tool="shell",
        kind=ActionKind.SHELL,
        payload=ShellCommand(command=command, cwd=str(cwd)),
        read_only=False,
        summary="property",
    )


def simple_command_lines(command: str) -> list[str]:
    """Each simple command of ``command`` written back as a line of its own (static ones only)."""
    lines = []
    for facts in analyse_command(command).facts:
        if not all(w.static for w in facts.words) or facts.command.binary == "[[":
            continue
        argv = facts.command.argv
        # The command word is always quoted: unquoted, 'a=' would become an assignment and 'if' a keyword.
        parts = ["'" + argv[0].replace("'", "'\\''") + "' " + shlex.join(argv[1:])] if argv else []
        for redirection in facts.command.redirections:
            if redirection.operator in ("<<", "<<-", "<<<"):
                continue
            fd = "" if redirection.fd is None else str(redirection.fd)
            if redirection.operator.endswith("-"):
                parts.append(f"{fd}{redirection.operator}")
                continue
            target = (
                redirection.target
                if redirection.operator in (">&", "<&")
                else shlex.quote(redirection.target)
            )
            if target:
                parts.append(f"{fd}{redirection.operator}{target}")
        if parts:
            lines.append(" ".join(parts))
    return lines


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(
        st.tuples(
            st.sampled_from(PIECES),
            st.sampled_from(
                ["plain", "plain", "subshell", "group", "substitution", "backquotes", "bash-c", "sh-c", "if"]
            ),
        ),
        min_size=1,
        max_size=5,
    ),
    separators=st.lists(st.sampled_from(SEPARATORS), min_size=4, max_size=4),
    mode=st.sampled_from(MODES),
    allow_index=st.integers(0, len(ALLOW_SETS) - 1),
)
def test_an_allowed_compound_holds_nothing_denied_alone(
    engines, pieces, separators, mode, allow_index
) -> None:
    layout, built = engines
    engine = built[(mode, allow_index)]
    command = ""
    for position, (piece, kind) in enumerate(pieces):
        command += (separators[position - 1] if position else "") + wrap(kind, piece)
    verdict = engine.evaluate(shell_action(command, layout.workspace))
    if verdict.decision is not Decision.ALLOW:
        return
    for piece, _ in pieces:
        alone = engine.evaluate(shell_action(piece, layout.workspace))
        assert alone.decision is not Decision.DENY, (command, piece, alone)
    for line in simple_command_lines(command):
        alone = engine.evaluate(shell_action(line, layout.workspace))
        assert alone.decision is not Decision.DENY, (command, line, alone)


SHELL_ALPHABET = st.sampled_from(
    list("abcrmlsx -~/.*?$;|&()<>'\"\\\n{},=")
    + ["rm", "cat", "~/.ssh/id_rsa", ".seepient/", "$(", "`", "bash -c "]
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tokens=st.lists(SHELL_ALPHABET, max_size=25), mode=st.sampled_from(MODES), allow_index=st.integers(0, 3)
)
def test_fuzzed_lines_never_crash_and_keep_the_property(engines, tokens, mode, allow_index) -> None:
    layout, built = engines
    engine = built[(mode, allow_index)]
    command = "".join(tokens)
    verdict = engine.evaluate(shell_action(command, layout.workspace))
    assert verdict.rule and verdict.reasons
    if verdict.decision is not Decision.ALLOW:
        return
    for line in simple_command_lines(command):
        alone = engine.evaluate(shell_action(line, layout.workspace))
        assert alone.decision is not Decision.DENY, (command, line, alone)


# -- generated rules and wrappers -------------------------------------------------------------------------------

WRAPPERS = [
    "{}",
    "env X=1 {}",
    "sudo {}",
    "timeout 5 {}",
    "nice -n 5 {}",
    "command {}",
    "nohup {}",
    "stdbuf -oL {}",
    "time {}",
    "bash -c {q}",
    "sh -lc {q}",
    "xargs {} < list.txt",
    "({})",
    "{{ {}; }}",
    "echo $({})",
    "true && {}",
    "false || {}",
    "{} | cat",
    "if true; then {}; fi",
    "f() {{ {}; }}; f",
]
RULE_WORDS = [
    ("git", "push"),
    ("git", "reset", "--hard"),
    ("npm", "publish"),
    ("rm", "-rf"),
    ("curl",),
    ("cat",),
    ("docker", "run"),
    ("pip", "install"),
]
PATH_RULES = [
    "Read(.env)",
    "Read(src/**)",
    "Edit(src/**)",
    "Write(docs/*.md)",
    "Read(~/notes/**)",
    "Edit(README.md)",
]
ARGUMENTS = ["", " x", " -v", " origin main", " --force", " -n 1", " .", " README.md"]

shell_rules = st.builds(
    lambda words, prefix: f"Shell({' '.join(words)}{':*' if prefix else ''})",
    st.sampled_from(RULE_WORDS),
    st.booleans(),
)
rule_lists = st.lists(st.one_of(shell_rules, st.sampled_from(PATH_RULES)), max_size=4, unique=True)


@pytest.fixture(scope="module")
def generated(tmp_path_factory, layout_factory):
    layout = layout_factory(tmp_path_factory.mktemp("generated"))
    cache: dict[tuple[str, tuple[str, ...], tuple[str, ...]], object] = {}

    def engine(mode: str, allow: list[str], deny: list[str]):
        key = (mode, tuple(allow), tuple(deny))
        if key not in cache:
            cache[key] = layout.engine(mode, allow=allow, deny=deny)
        return cache[key]

    return layout, engine


def wrapped(wrapper: str, command: str) -> str:
    return wrapper.format(command, q=shlex.quote(command))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    deny_words=st.sampled_from(RULE_WORDS),
    argument=st.sampled_from(ARGUMENTS),
    wrapper=st.sampled_from(WRAPPERS),
    mode=st.sampled_from(MODES),
    allow=rule_lists,
)
def test_a_denied_prefix_stays_denied_inside_any_wrapper(
    generated, deny_words, argument, wrapper, mode, allow
) -> None:
    layout, engine = generated
    rule = f"Shell({' '.join(deny_words)}:*)"
    denying = engine(mode, [*allow, "Shell"], [rule])
    command = " ".join(deny_words) + argument
    verdict = denying.evaluate(shell_action(wrapped(wrapper, command), layout.workspace))
    assert verdict.decision is Decision.DENY, (wrapper, command, verdict)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    pieces=st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(WRAPPERS)), min_size=1, max_size=4),
    separators=st.lists(st.sampled_from(SEPARATORS), min_size=3, max_size=3),
    mode=st.sampled_from(MODES),
    allow=rule_lists,
    deny=rule_lists,
)
def test_generated_rules_keep_the_property(generated, pieces, separators, mode, allow, deny) -> None:
    layout, engine = generated
    policy = engine(mode, allow, deny)
    command = ""
    for position, (piece, wrapper) in enumerate(pieces):
        command += (separators[position - 1] if position else "") + wrapped(wrapper, piece)
    verdict = policy.evaluate(shell_action(command, layout.workspace))
    if verdict.decision is not Decision.ALLOW:
        return
    for piece, wrapper in pieces:
        for alone in (piece, wrapped(wrapper, piece)):
            single = policy.evaluate(shell_action(alone, layout.workspace))
            assert single.decision is not Decision.DENY, (command, alone, single)
    for line in simple_command_lines(command):
        single = policy.evaluate(shell_action(line, layout.workspace))
        assert single.decision is not Decision.DENY, (command, line, single)
