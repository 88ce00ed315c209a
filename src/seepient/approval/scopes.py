"""Session grants: which asks a grant may answer, which scopes an ask offers, and whether a grant covers an action.

A grant is the lowest-precedence allow there is: it only ever answers an ask of the consent mode (a
verdict whose rule is ``mode:…``), which policy gives after deny rules, the action's own checks, ask rules
and allow rules have all had their say. So a grant never reaches a deny, never skips an ask that no mode
may skip, and never overrides an ask rule a person wrote.
"""

from __future__ import annotations

import hmac
import re
import shlex
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from seepient.policy.rules import PolicyRuleError, Rule, parse_rule
from seepient.protocol import (
    ApprovalScope,
    Capability,
    Decision,
    FileChange,
    FileChangeSet,
    PathAccess,
    PathDenied,
    PreparedActionDraft,
    ShellCommand,
    Verdict,
)
from seepient.shell import CommandFacts, ShellAnalysis, Word, analyse_command, base_name, is_shell_sink

MODE_RULE_PREFIX = "mode:"
"""Verdicts the consent mode gave start with this; only they may be answered by a standing grant."""

# Runners whose next word names what they run (`npm run test`, `uv run pytest`): the prefix keeps it.
_RUNNER_WORDS = frozenset({"run", "exec", "x", "dlx"})
# A word that can stand in a derived prefix: a subcommand or script name, never an option, a path or a glob.
_SUBCOMMAND_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:@+-]*")
# Path components that can go into an Edit rule as they are: no glob metacharacters, blanks or escapes.
_PLAIN_COMPONENT = re.compile(r"[A-Za-z0-9_@+=,.-]+")
# Programs (and git subcommands) some of whose forms destroy data or state with no way back: 'rm -rf',
# 'chmod -R', 'git push --force', 'dd'. A prefix grant for one would cover those forms too, so an ask about
# them offers only this exact action or these exact words, and no prefix grant ever covers a line with one.
DESTRUCTIVE_PROGRAMS = frozenset(
    "rm rmdir unlink shred wipe srm truncate dd find chmod chown chgrp chattr setfacl crontab rsync kill pkill "
    "killall skill".split()
)
DESTRUCTIVE_GIT = frozenset(
    "push reset clean checkout restore switch branch stash tag rebase filter-branch filter-repo update-ref "
    "reflog gc prune worktree".split()
)
_DESTRUCTIVE_TOOL_WORDS = {
    **dict.fromkeys(("docker", "podman"), frozenset({"rm", "rmi", "prune", "kill", "down"})),
    "kubectl": frozenset({"delete", "drain", "replace"}),
    "helm": frozenset({"uninstall", "delete", "rollback"}),
    "terraform": frozenset({"destroy", "apply", "import", "state", "taint"}),
}
_GIT_VALUE_GLOBALS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env"})


def _git_subcommand(words: tuple[Word, ...]) -> str | None:
    index = 1
    while index < len(words):
        text = words[index].text
        if text in _GIT_VALUE_GLOBALS:
            index += 2
        elif text.startswith("-"):
            index += 1
        else:
            return text
    return None


def is_destructive(facts: CommandFacts) -> bool:
    """Whether one simple command is a destructive program or form (at any wrapper stage, or any other
    spelling of it such as a resolved git alias)."""
    if Capability.DESTRUCTIVE in facts.capabilities:
        return True
    for words in (*facts.stages, *facts.spellings):
        if not words:
            continue
        name = base_name(words[0])
        if name in DESTRUCTIVE_PROGRAMS:
            return True
        if name == "git" and _git_subcommand(words) in DESTRUCTIVE_GIT:
            return True
        tool_words = _DESTRUCTIVE_TOOL_WORDS.get(name)
        if tool_words is not None and any(w.text in tool_words for w in words[1:]):
            return True
    return False


def once_only_reason(verdict: Verdict) -> str | None:
    """Why only approve-once may answer this verdict, or None when a grant (or the classifier) may answer it."""
    if verdict.decision is not Decision.ASK:
        return f"policy said {verdict.decision.value}, not ask"
    rule = verdict.rule or ""
    if rule.startswith(MODE_RULE_PREFIX):
        return None
    if rule.startswith("ask:"):
        return f"an ask rule ({rule.removeprefix('ask:')}) asks every time"
    return f"{rule or 'this check'} asks every time; no grant and no mode may skip it"


@dataclass(frozen=True)
class Offer:
    """What an ask may be answered with beyond once: session scopes and the project rule."""

    scopes: tuple[ApprovalScope, ...] = ()
    project_rule: str | None = None


@dataclass(frozen=True)
class SessionGrant:
    """A standing answer for the rest of the session.

    ``kind`` ``exact`` binds a digest; ``prefix`` and ``rule`` carry a parsed allow rule (a command prefix, or
    the rule written to the project settings); ``directory`` a workspace-relative directory.
    """

    kind: Literal["exact", "prefix", "directory", "rule"]
    label: str
    digest: str | None = None
    rule: Rule | None = None
    directory: PurePosixPath | None = None


class ScopeFinder:
    """Derives the scopes an ask offers and decides whether a grant covers an action, for one workspace.

    Every decision re-reads the action itself: shell lines are analysed again and file paths resolved again
    (symlinks and ``..`` included) through the same path guard policy uses, so a grant covers what the
    action does now, not what its text looks like.
    """

    def __init__(self, workspace: Path, paths: PathAccess, *, home: Path | None = None) -> None:
        self.workspace = workspace
        self._paths = paths
        self._home = home or Path.home()

    # -- offering -------------------------------------------------------------------------------------

    def offer(self, action: PreparedActionDraft, verdict: Verdict) -> Offer:
        if once_only_reason(verdict) is not None:
            return Offer()
        scopes = [ApprovalScope(kind="exact", value=action.digest, label="this exact action")]
        project_rule: str | None = None
        payload = action.payload
        if isinstance(payload, ShellCommand):
            analysis = self._analyse(payload)
            if any(is_destructive(facts) for facts in analysis.facts):
                exact = self._exact_words_rule(payload, analysis)
                if exact is not None:
                    spec = exact.text[len("Shell(") : -1]
                    scopes.append(
                        ApprovalScope(
                            kind="prefix",
                            value=spec,
                            label=f"exactly `{spec}` (destructive: no prefix is offered)",
                        )
                    )
                    project_rule = exact.text
            else:
                prefix = self._prefix_rule(payload, analysis)
                if prefix is not None:
                    assert prefix.argv is not None
                    shown = " ".join(prefix.argv)
                    spec = prefix.text[len("Shell(") : -1]
                    scopes.append(
                        ApprovalScope(kind="prefix", value=spec, label=f"commands starting with `{shown}`")
                    )
                    project_rule = prefix.text
        elif isinstance(payload, FileChange):
            resolved = self._resolve_change(payload)
            if resolved is not None:
                relative, absolute = resolved
                directory = relative.parent
                label = (
                    "edits anywhere in the workspace"
                    if directory == PurePosixPath(".")
                    else f"edits under {directory}/"
                )
                scopes.append(ApprovalScope(kind="directory", value=str(directory), label=label))
                project_rule = self._edit_rule(relative, absolute)
        elif isinstance(payload, FileChangeSet):
            directory = self._set_directory(payload)
            if directory is not None:
                label = (
                    "edits anywhere in the workspace"
                    if directory == PurePosixPath(".")
                    else f"edits under {directory}/"
                )
                scopes.append(ApprovalScope(kind="directory", value=str(directory), label=label))
        return Offer(scopes=tuple(scopes), project_rule=project_rule)

    # -- covering -------------------------------------------------------------------------------------

    def covers(self, grant: SessionGrant, action: PreparedActionDraft) -> bool:
        """Whether ``grant`` covers ``action``. The caller has already checked the verdict is a mode ask."""
        if grant.kind == "exact":
            return grant.digest is not None and hmac.compare_digest(grant.digest, action.digest)
        payload = action.payload
        if isinstance(payload, FileChangeSet):
            return self._set_covered(grant, payload)
        if grant.kind == "directory":
            if grant.directory is None or not isinstance(payload, FileChange):
                return False
            resolved = self._resolve_change(payload)
            return resolved is not None and _strictly_under(resolved[0], grant.directory)
        rule = grant.rule
        if rule is None:
            return False
        if rule.tool == "Shell":
            return isinstance(payload, ShellCommand) and self._shell_covered(rule, payload)
        if rule.tool in ("Edit", "Write") and isinstance(payload, FileChange):
            if rule.tool == "Write" and payload.new_content is None:
                return False
            resolved = self._resolve_change(payload)
            return resolved is not None and rule.matches_path(
                resolved[1], workspace=self.workspace, home=self._home, lenient=False
            )
        return False

    # -- shell ----------------------------------------------------------------------------------------

    def _analyse(self, shell: ShellCommand) -> ShellAnalysis:
        return analyse_command(
            shell.command, cwd=Path(shell.cwd or self.workspace), workspace=self.workspace, home=self._home
        )

    def _shell_covered(self, rule: Rule, shell: ShellCommand, analysis: ShellAnalysis | None = None) -> bool:
        """Every simple command of the line, nested ones included, starts with the rule's words and writes
        through no redirection: one more command of any other kind and the line is not covered. A prefix
        never covers a destructive command (``git push:*`` does not cover ``git push --force``): only a rule
        of exact words does."""
        analysis = analysis or self._analyse(shell)
        if not analysis.parsed or analysis.sets_variables or not analysis.facts:
            return False
        if rule.argv is None or (rule.prefix and any(is_destructive(f) for f in analysis.facts)):
            return False
        for facts in analysis.facts:
            if not facts.stages or not facts.stages[0]:
                return False
            for operand in facts.operands:
                if operand.write and operand.role == "redirection target":
                    if not (operand.word.static and is_shell_sink(operand.word.text)):
                        return False
            if not rule.matches_argv(facts.stages[0], lenient=False):
                return False
        return True

    def _exact_words_rule(self, shell: ShellCommand, analysis: ShellAnalysis) -> Rule | None:
        """``Shell(<every word>)`` when the line is one simple command of plain words (repeated is fine): it
        covers exactly those words, so the paths it deletes or changes are pinned."""
        if not analysis.parsed or analysis.sets_variables or not analysis.facts:
            return None
        words = analysis.facts[0].stages[0] if analysis.facts[0].stages else ()
        if not words or any(not w.static or w.glob or w.pipe for w in words):
            return None
        texts = tuple(w.text for w in words)
        try:
            rule = parse_rule(f"Shell({shlex.join(texts)})", "session grant")
        except PolicyRuleError:
            return None
        if rule.argv != texts or rule.prefix:
            return None
        return rule if self._shell_covered(rule, shell, analysis) else None

    def _prefix_rule(self, shell: ShellCommand, analysis: ShellAnalysis | None = None) -> Rule | None:
        """``Shell(<program> [subcommand…]:*)`` from the first simple command, when it covers the whole line.

        The prefix is the program and the words after it that name a subcommand (``git commit``, ``npm run
        test``), stopping at the first option, file operand or computed word. It is offered only when it
        covers the very line being approved, so a person never grants something other than what they see.
        """
        analysis = analysis or self._analyse(shell)
        if not analysis.parsed or analysis.sets_variables or not analysis.facts:
            return None
        first = analysis.facts[0]
        if len(first.stages) != 1 or not first.stages[0]:
            return None  # behind a wrapper (sudo, env, timeout…) a prefix would mean the wrapper
        argv = first.stages[0]
        program = argv[0]
        if not program.static or program.glob or not program.text:
            return None
        operands = {operand.word.text for operand in first.operands}
        words = [program.text]
        limit = 3 if len(argv) > 1 and argv[1].text in _RUNNER_WORDS else 2
        for word in argv[1:limit]:
            if (
                not word.static
                or word.glob
                or word.text in operands
                or not _SUBCOMMAND_WORD.fullmatch(word.text)
            ):
                break
            words.append(word.text)
        try:
            rule = parse_rule(f"Shell({' '.join(words)}:*)", "session grant")
        except PolicyRuleError:
            return None
        if rule.argv != tuple(words) or not rule.prefix:
            return None
        return rule if self._shell_covered(rule, shell, analysis) else None

    # -- files ----------------------------------------------------------------------------------------

    def _set_directory(self, change_set: FileChangeSet) -> PurePosixPath | None:
        """The deepest directory holding every file of a set, or None when a path does not resolve or the set
        deletes a file (a grant for edits is not one for deletions, so only the exact set is offered)."""
        parents: list[tuple[str, ...]] = []
        for change in change_set.changes:
            resolved = None if change.delete else self._resolve_change(change)
            if resolved is None:
                return None
            parents.append(resolved[0].parent.parts)
        common = parents[0]
        for parts in parents[1:]:
            length = 0
            while length < min(len(common), len(parts)) and common[length] == parts[length]:
                length += 1
            common = common[:length]
        return PurePosixPath(*common) if common else PurePosixPath(".")

    def _set_covered(self, grant: SessionGrant, change_set: FileChangeSet) -> bool:
        """A grant covers a set when it covers each file of it as a change of its own; never a deletion."""
        if grant.kind not in ("directory", "rule") or any(change.delete for change in change_set.changes):
            return False
        for change in change_set.changes:
            single = PreparedActionDraft(
                session_id="grant-check",
                call_id="grant-check",
                tool="apply_patch",
                kind="file_change",
                payload=change,
                read_only=False,
                summary=change.path,
            )
            if not self.covers(grant, single):
                return False
        return True

    def _resolve_change(self, change: FileChange) -> tuple[PurePosixPath, str] | None:
        """The change's workspace-relative and absolute path after resolving symlinks and ``..``, or None
        when the path guard refuses it."""
        try:
            resolved = self._paths.for_write(change.path)
        except PathDenied:
            return None
        if resolved.relative is None or resolved.relative in ("", "."):
            return None
        return PurePosixPath(resolved.relative), resolved.absolute

    def _edit_rule(self, relative: PurePosixPath, absolute: str) -> str | None:
        """``Edit(/dir/**)`` for a file in a subdirectory, ``Edit(/name)`` for one at the root; None when a
        component would need glob escaping (the rule must mean exactly what the person is shown)."""
        parts = relative.parts
        if not parts or any(not _PLAIN_COMPONENT.fullmatch(part) or part in (".", "..") for part in parts):
            return None
        text = f"Edit(/{'/'.join(parts[:-1])}/**)" if len(parts) > 1 else f"Edit(/{parts[0]})"
        try:
            rule = parse_rule(text, "project rule")
        except PolicyRuleError:
            return None
        if not rule.matches_path(absolute, workspace=self.workspace, home=self._home, lenient=False):
            return None
        return text


def grant_for(scope: ApprovalScope) -> SessionGrant:
    """The grant a chosen (offered) scope leaves behind."""
    if scope.kind == "exact":
        return SessionGrant(kind="exact", label=scope.label, digest=scope.value)
    if scope.kind == "prefix":
        return SessionGrant(
            kind="prefix", label=scope.label, rule=parse_rule(f"Shell({scope.value})", "session grant")
        )
    return SessionGrant(kind="directory", label=scope.label, directory=PurePosixPath(scope.value))


def grant_for_rule(rule_text: str) -> SessionGrant:
    """The session grant standing in for a rule just written to the project settings (the policy engine
    read its rules when the session opened)."""
    return SessionGrant(
        kind="rule", label=rule_text, rule=parse_rule(rule_text, "project settings (approved at the prompt)")
    )


def _strictly_under(path: PurePosixPath, directory: PurePosixPath) -> bool:
    """Component-wise containment: ``src/a.py`` is under ``src`` but ``srcx/a.py`` is not."""
    base = () if directory == PurePosixPath(".") else directory.parts
    return len(path.parts) > len(base) and path.parts[: len(base)] == base
