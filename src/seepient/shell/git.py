"""git: subcommands that write, reach the network or destroy work; settings (``-c``, ``git config``) that
name programs git runs later outside any sandbox; aliases resolved; and the read-only subcommands.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Literal

from seepient.protocol import Capability
from seepient.shell.interpretation import Danger, Interpretation, Nested, Word, destructive
from seepient.shell.options import name_set, option_spec, parse_options


def git_operands(
    args: Sequence[Word],
    interpretation: Interpretation,
    program: str,
    *,
    aliases: Mapping[str, str] | None = None,
    seen: frozenset[str] = frozenset(),
) -> None:
    sub_index = _git_subcommand_index(args)
    found = _git_globals(args[: len(args) if sub_index is None else sub_index], interpretation)
    aliases = {**(aliases or {}), **found}
    if sub_index is None:
        return
    sub = args[sub_index].text
    rest = list(args[sub_index + 1 :])
    texts = [w.text for w in rest]
    alias = aliases.get(sub.lower())
    if alias is not None and sub.lower() not in seen:
        _git_alias(alias, rest, interpretation, program, aliases, seen | {sub.lower()})
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
        operands = parse_options(
            rest,
            option_spec(
                "-b --branch -o --origin --depth --reference -c --config --template "
                "--separate-git-dir -u --upload-pack --filter -j --jobs"
            ),
            program,
        ).operands
        target = operands[-1] if sub == "init" else (operands[1] if len(operands) > 1 else None)
        if target is not None:
            interpretation.opens(target, write=True, role=f"git {sub} directory", recursive=True)
    for word in rest:
        if word.text.startswith("--output="):
            interpretation.opens(
                Word(word.text.split("=", 1)[1], word.static), write=True, role=f"git {sub} output"
            )
    for position, word in enumerate(rest[:-1]):
        if word.text in ("--output", "-o") and sub in name_set("diff log show format-patch archive bundle"):
            interpretation.opens(
                rest[position + 1], write=True, role=f"git {sub} output", directory=sub == "format-patch"
            )
    if sub in name_set(
        "commit add rm mv checkout switch restore reset merge rebase pull cherry-pick revert stash tag branch clean apply am init clone gc fetch worktree submodule config"
    ):
        interpretation.capabilities.add(Capability.WRITE_WORKSPACE)
    if sub in ("apply", "am") and not any(
        t in ("--check", "--stat", "--numstat", "--summary") for t in texts
    ):
        interpretation.opens(
            Word("."),
            write=True,
            role=f"files named inside the patch (git {sub})",
            recursive=True,
            directory=True,
        )
    if sub == "reset" and "--hard" in texts:
        destructive(interpretation, "git reset --hard discards uncommitted changes")
    if sub == "clean" and any(
        t == "--force" or (t.startswith("-") and not t.startswith("--") and "f" in t) for t in texts
    ):
        destructive(interpretation, "git clean -f deletes untracked files")
        interpretation.opens(Word("."), write=True, role="git clean", recursive=True, directory=True)
    if sub == "checkout" and any(t in ("-f", "--force", "--", ".") for t in texts):
        destructive(interpretation, "git checkout can overwrite uncommitted changes")
    if sub == "restore" and "--staged" not in texts:
        destructive(interpretation, "git restore discards uncommitted changes")
    if sub == "push" and any(
        t in ("-f", "--force", "--force-with-lease", "--mirror", "--delete", "-d")
        or t.startswith("+")
        or t.startswith("--force")
        for t in texts
    ):
        destructive(interpretation, "a forced push rewrites history on the remote")
    if sub == "branch" and any(t in ("-D",) or (t == "-d" and "--force" in texts) for t in texts):
        destructive(interpretation, "git branch -D deletes a branch that may not be merged")
    if sub == "stash" and texts[:1] and texts[0] in ("drop", "clear"):
        destructive(interpretation, "git stash drop/clear deletes stashed work")


_GIT_VALUE_GLOBALS = name_set(
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
    "man.viewer core.hookspath trailer.*.command trailer.*.cmd tar.*.command hook.*.command imap.tunnel "
    "gpg.ssh.defaultkeycommand browser.*.path man.*.path difftool.*.path mergetool.*.path guitool.*.cmd "
    "instaweb.httpd submodule.*.update"
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


def _git_alias(
    alias: str,
    rest: Sequence[Word],
    interpretation: Interpretation,
    program: str,
    aliases: Mapping[str, str],
    seen: frozenset[str],
) -> None:
    """An alias set with ``-c alias.NAME=…`` and used: ``!cmd`` runs ``cmd`` with the words after the alias
    appended, anything else is more git words (which may name another alias, as git resolves them)."""
    if alias.startswith("!"):
        if all(w.static for w in rest):
            interpretation.launches.append(Word(" ".join([alias[1:], *(shlex.quote(w.text) for w in rest)])))
        else:
            interpretation.problems.append("a git '!' alias is given words computed at run time")
        return
    # 'git -c alias.x=push x' runs 'git push': deny rules and every check below see that form too.
    spelled = (Word("git"), *(Word(part) for part in alias.split()), *rest)
    interpretation.spellings.append(spelled)
    git_operands(spelled[1:], interpretation, program, aliases=aliases, seen=seen)


def _git_globals(words: Sequence[Word], interpretation: Interpretation) -> dict[str, str]:
    """Options before the subcommand: ``-c key=value`` may name programs git runs or aliases, and
    ``--exec-path=DIR`` swaps every git helper. Returns the aliases set with ``-c alias.NAME=…`` by name."""
    aliases: dict[str, str] = {}
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
            interpretation.opens(words[index], write=False, role=f"git {text} directory", names_only=True)
            index += 1
        elif text.startswith(("--git-dir=", "--work-tree=")):
            name, _, value = text.partition("=")
            interpretation.opens(
                Word(value, word.static), write=False, role=f"git {name} directory", names_only=True
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
    aliases: dict[str, str],
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
    if fnmatchcase(key.lower(), "submodule.*.update") and not value.startswith("!"):
        return  # checkout, rebase, merge or none; only '!command' runs a program
    if key.lower().startswith("alias."):
        # git matches an alias's name without regard to case; a '!' alias runs only when it is used.
        aliases[key[len("alias.") :].lower()] = value
        return
    if not value.strip():
        return
    if fnmatchcase(key.lower(), "credential.*helper") and not value.startswith(("!", "/", "~")):
        value = f"git credential-{value}"  # a helper's bare name is a git subcommand ('store' runs git credential-store)
    interpretation.launches.append(Word(value.removeprefix("!")))


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


_GIT_CONFIG_READS = name_set(
    "--get --get-all --get-regexp --get-urlmatch -l --list --get-color --get-colorbool get list"
)
_GIT_CONFIG_WRITES = name_set(
    "--unset --unset-all --add --replace-all --rename-section --remove-section -e --edit set unset "
    "rename-section remove-section edit"
)


def _git_config(rest: Sequence[Word], interpretation: Interpretation) -> None:
    """``git config`` writes settings git later acts on, outside any sandbox: a key that names a program is
    refused, other writes are file writes to the scope's file (``--global`` is ``~/.gitconfig``)."""
    texts = [w.text for w in rest]
    parsed = parse_options(
        rest,
        option_spec("-f --file --blob --type --default --comment --value"),
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
        interpretation.opens(target, write=True, role="git config file")
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
    if fnmatchcase(key.text.lower(), "submodule.*.update") and not value.startswith("!"):
        return
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


def git_is_read_only(texts: list[str]) -> bool:
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


_SAFE_GIT = frozenset(
    "status diff log show rev-parse ls-files blame ls-tree cat-file grep shortlog describe".split()
)
_UNSAFE_GIT_GLOBALS = tuple(
    "-c --config-env --git-dir --work-tree --exec-path --namespace --super-prefix --list-cmds --attr-source".split()
)
