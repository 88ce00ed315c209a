"""What every check consults: the consent mode under the managed lock, and the permission rules matched
against one action (by tool, path or host) in this workspace. Built once per engine, frozen."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from seepient.net.address_policy import AddressPolicy
from seepient.policy.modes import ModeSubject, decide
from seepient.policy.paths import PathGuard, real_path
from seepient.policy.rules import Rule, RuleSet
from seepient.policy.sensitive import component_key
from seepient.protocol import Decision, PreparedActionDraft, Verdict

MANAGED_ONLY_PREFIX = "managed_only:"
USER_LEVEL_SOURCES = frozenset({"user", "managed", "command-line", "settings"})
"""Rule sources whose allow rules may open a privileged command or a write to what other programs run from the
workspace: the user's own settings, the managed file, a ``--config`` file or flags, and rules handed over in
code (the SDK, tests); never a project's settings, a project rule approved at a prompt, or a session grant."""
# How many entries below a recursive read are looked at for a file a deny rule names; past it, one is assumed.
MAX_ENTRIES_SEARCHED = 5000
_VERDICTS = {"deny": Verdict.deny, "ask": Verdict.ask, "allow": Verdict.allow}


@dataclass(frozen=True)
class Decider:
    """The consent mode, the rules, the path guard and the fetch address policy of one engine."""

    mode: str
    rules: RuleSet
    guard: PathGuard
    net_policy: AddressPolicy

    @property
    def workspace(self) -> Path:
        return self.guard.workspace

    @property
    def home(self) -> Path:
        return self.guard.home

    # -- the consent mode -----------------------------------------------------------------------------

    def decide(self, subject: ModeSubject, locked: Rule | None = None) -> Verdict:
        """The consent mode's answer; under a managed allow-rules lock its asks cannot be granted away.
        ``locked`` is an allow rule the lock switched off that would have covered the action."""
        verdict = decide(self.mode, subject)
        if verdict.decision is not Decision.ASK or not self.rules.managed_only:
            return verdict
        reasons = list(verdict.reasons)
        if locked is not None:
            reasons.insert(
                0,
                f"an allow rule ({locked.source}: {locked.text}) would cover this, but the managed settings "
                "let only their own allow rules count",
            )
        reasons.append(
            "the managed settings allow only managed allow rules, so no grant may answer this ask: a person must"
        )
        return Verdict.ask(f"{MANAGED_ONLY_PREFIX}{self.mode}", *reasons)

    def locked(
        self, covers: Callable[[Rule], bool], action: PreparedActionDraft, families: Sequence[str]
    ) -> Rule | None:
        """The first allow rule switched off by the managed lock that would cover the action."""
        return next(
            (r for r in self.rules.locked_out if self.applies(r, action, families) and covers(r)), None
        )

    # -- rules that name the tool ---------------------------------------------------------------------

    def applies(self, rule: Rule, action: PreparedActionDraft, families: Sequence[str]) -> bool:
        """Whether ``rule`` speaks about the action: its family (``Read``, ``Shell``…), or, bare, its tool."""
        if rule.bare:
            return (
                rule.tool in families
                or rule.tool == action.tool
                or (rule.tool.startswith("mcp__") and action.tool.startswith(rule.tool + "__"))
            )
        return rule.tool in families

    def tool_rule(self, action: PreparedActionDraft, kind: str) -> Rule | None:
        """The first bare ``kind`` rule (``deny``, ``ask``, ``allow``) naming exactly the action's tool."""
        return next((r for r in getattr(self.rules, kind) if r.bare and r.tool == action.tool), None)

    def tool_verdict(self, action: PreparedActionDraft, kinds: Sequence[str], what: str) -> Verdict | None:
        """The verdict of the first bare rule naming the tool, trying ``kinds`` in order; ``what`` ends its reason."""
        for kind in kinds:
            rule = self.tool_rule(action, kind)
            if rule is not None:
                return _VERDICTS[kind](f"{kind}:{rule.text}", f"a {kind} rule ({rule.source}) covers {what}")
        return None

    def tool_allow(self, action: PreparedActionDraft, what: str) -> Verdict | None:
        """``tool_verdict`` for allow rules alone, worded as the memory and look-up checks word it."""
        rule = self.tool_rule(action, "allow")
        if rule is None:
            return None
        return Verdict.allow(f"allow:{rule.text}", f"an allow rule ({rule.source}) covers {what}")

    # -- rules that name paths ------------------------------------------------------------------------

    def matches(self, rule: Rule, absolute: str, *, lenient: bool) -> bool:
        return rule.matches_path(absolute, workspace=self.workspace, home=self.home, lenient=lenient)

    def spellings(self, path: str, *, base: str | None = None) -> list[str]:
        """A path as written and as it resolves, without refusing anything (deny rules see both)."""
        home = str(self.home)
        expanded = home + path[1:] if path == "~" or path.startswith("~/") else path
        absolute = expanded if expanded.startswith("/") else f"{base or self.workspace}/{expanded}"
        lexical = os.path.normpath(absolute)
        lexical = "/" + lexical.lstrip("/")
        try:
            return list(dict.fromkeys([lexical, real_path(absolute)]))
        except ValueError:
            return [lexical]

    def path_rule_hit(
        self,
        rules: Iterable[Rule],
        action: PreparedActionDraft,
        families: Sequence[str],
        spellings: Iterable[str],
        *,
        lenient: bool,
    ) -> Rule | None:
        """The first rule that applies and names one of ``spellings`` (a bare one names every path)."""
        spellings = list(spellings)
        for rule in rules:
            if not self.applies(rule, action, families):
                continue
            if rule.bare or any(self.matches(rule, s, lenient=lenient) for s in spellings):
                return rule
        return None

    def path_rules(
        self, rules: Iterable[Rule], action: PreparedActionDraft, families: Sequence[str]
    ) -> list[Rule]:
        """The rules that apply and name a path pattern."""
        return [r for r in rules if self.applies(r, action, families) and r.pattern is not None]

    def all_covered(
        self,
        rules: Sequence[Rule],
        action: PreparedActionDraft,
        families: Sequence[str],
        paths: Sequence[str],
    ) -> bool:
        """Whether every one of ``paths`` is named by some rule that applies."""
        applicable = [r for r in rules if self.applies(r, action, families)]
        return (
            bool(applicable)
            and bool(paths)
            and all(any(r.bare or self.matches(r, p, lenient=False) for r in applicable) for p in paths)
        )

    def first_cover(
        self,
        rules: Sequence[Rule],
        action: PreparedActionDraft,
        families: Sequence[str],
        paths: Sequence[str],
    ) -> Rule:
        """The first rule that applies and names one of ``paths``; call after ``all_covered``."""
        return next(
            r
            for r in rules
            if self.applies(r, action, families)
            and (r.bare or any(self.matches(r, p, lenient=False) for p in paths))
        )

    def below(self, rule: Rule, directory: str, file_glob: str | None = None) -> bool:
        """Whether a recursive read of ``directory`` could open a file ``rule`` names.

        A pattern for one name at any depth (``.env``, ``*.pem``) is looked for on disk, a bounded walk
        that does not follow symbolic links (it counts them as found); any other pattern counts whenever
        its shape allows a match below."""
        if not rule.could_match_below(
            directory, workspace=self.workspace, home=self.home, file_glob=file_glob
        ):
            return False
        pattern = (rule.pattern or "**").strip("/")
        if "/" in pattern or "**" in pattern:
            return True
        return _name_below(directory, component_key(pattern))

    def user_allows_write(self, absolute: str) -> bool:
        """Whether an Edit or Write allow rule that names the path, from the user's own settings (never a
        project's file, never a session grant), covers it."""
        return any(
            rule.origin in USER_LEVEL_SOURCES
            and rule.tool in ("Edit", "Write")
            and not rule.bare
            and self.matches(rule, absolute, lenient=False)
            for rule in self.rules.allow
        )


def _name_below(directory: str, pattern: str) -> bool:
    """Whether a name matching ``pattern`` (a folded key) is somewhere below ``directory``, looking at
    no more than ``MAX_ENTRIES_SEARCHED`` entries; too many to look at counts as found."""
    if not os.path.isdir(directory):
        return False
    pending = [directory]
    visited = {os.path.realpath(directory)}
    seen = 0
    while pending:
        current = pending.pop()
        try:
            with os.scandir(current) as entries:
                for entry in entries:
                    seen += 1
                    if seen > MAX_ENTRIES_SEARCHED:
                        return True
                    if fnmatchcase(component_key(entry.name), pattern):
                        return True
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                    elif entry.is_symlink():
                        # 'grep -R' and friends follow links: what a link leads to is searched as well.
                        target = os.path.realpath(entry.path)
                        name = os.path.basename(target)
                        if name and fnmatchcase(component_key(name), pattern):
                            return True
                        if os.path.isdir(target) and target not in visited:
                            visited.add(target)
                            pending.append(target)
        except OSError:
            return True  # a directory that cannot be listed may hold anything
    return False
