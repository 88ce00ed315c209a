"""The policy engine (lifecycle step 5): one verdict per prepared action.

Order, first decisive answer wins: deny rules → the action's own check → ask rules → allow rules →
consent mode. The check denies (path guard, self-protection, dangerous commands) or asks in a way no
rule and no mode may skip (a shell line that could not be analysed, a path known only at run time, a
recursive operation that would reach secrets or Seepient's state); what else it finds (network access,
destruction inside the workspace, raised privileges) becomes a reason the consent mode weighs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from seepient.config.settings import PermissionSettings
from seepient.policy.commands import Operand
from seepient.policy.modes import ModeSubject, decide, resolve_mode
from seepient.policy.paths import (
    RULE_INVALID,
    RULE_OUTSIDE,
    RULE_SELF,
    RULE_SENSITIVE,
    PathGuard,
    is_shell_sink,
    real_path,
)
from seepient.policy.rules import Rule, RuleSet
from seepient.policy.shell import CommandFacts, ShellAnalysis, analyse_command
from seepient.protocol import (
    Capability,
    FetchRequest,
    FileChange,
    PathDenied,
    PreparedActionDraft,
    ReadAction,
    ResolvedPath,
    ShellCommand,
    Verdict,
)

RULE_UNPARSED = "shell:unparsed"
RULE_UNVERIFIABLE = "shell:unverifiable_path"
RULE_DANGEROUS = "shell:dangerous"
RULE_CONTAINS_SENSITIVE = "path_guard:contains_sensitive"
RULE_EMPTY = "shell:empty"
MAX_TRACKED_DIRECTORIES = 16
_SPECIFICITY = {
    RULE_SELF: 0,
    RULE_SENSITIVE: 1,
    RULE_DANGEROUS: 2,
    RULE_OUTSIDE: 3,
    RULE_UNPARSED: 4,
    RULE_UNVERIFIABLE: 5,
}


@dataclass
class _Findings:
    """What the action's own check found: denials win, then asks no mode may skip; concerns go to the mode."""

    denials: list[tuple[str, str]] = field(default_factory=list)
    hard_asks: list[tuple[str, str]] = field(default_factory=list)
    concerns: list[str] = field(default_factory=list)

    def deny(self, rule: str, reason: str) -> None:
        self.denials.append((rule, reason))

    def ask(self, rule: str, reason: str) -> None:
        self.hard_asks.append((rule, reason))

    def concern(self, reason: str) -> None:
        if reason not in self.concerns:
            self.concerns.append(reason)

    def verdict(self) -> Verdict | None:
        for found, make in ((self.denials, Verdict.deny), (self.hard_asks, Verdict.ask)):
            if found:
                # Name the most specific finding: touching Seepient's state or a secret says more than
                # "outside the workspace", which says more than a malformed path.
                ordered = sorted(found, key=lambda item: _SPECIFICITY.get(item[0], len(_SPECIFICITY)))
                reasons = tuple(dict.fromkeys(reason for _, reason in ordered))
                return make(ordered[0][0], *reasons)
        return None


class PolicyEngine:
    """Evaluates prepared actions for one workspace, mode and set of permission rules."""

    def __init__(
        self,
        workspace: Path,
        *,
        seepient_home: Path,
        mode: str,
        permissions: PermissionSettings,
        home: Path | None = None,
    ) -> None:
        self._guard = PathGuard(workspace, seepient_home=seepient_home, home=home)
        self.mode = resolve_mode(mode)
        self.rules = RuleSet.from_lists(allow=permissions.allow, ask=permissions.ask, deny=permissions.deny)

    @property
    def guard(self) -> PathGuard:
        return self._guard

    @property
    def workspace(self) -> Path:
        return self._guard.workspace

    def evaluate(self, action: PreparedActionDraft) -> Verdict:
        payload = action.payload
        if isinstance(payload, ReadAction):
            return self._evaluate_read(action, payload)
        if isinstance(payload, FileChange):
            return self._evaluate_change(action, payload)
        if isinstance(payload, ShellCommand):
            return self._evaluate_shell(action, payload)
        if isinstance(payload, FetchRequest):
            return self._evaluate_fetch(action, payload)
        return Verdict.ask(f"mode:{self.mode}", f"policy has no check for {action.kind} actions yet")

    # -- rules ----------------------------------------------------------------------------------------

    def _applies(self, rule: Rule, action: PreparedActionDraft, families: Sequence[str]) -> bool:
        if rule.bare:
            return rule.tool in families or rule.tool == action.tool
        return rule.tool in families

    def _path_rule_hit(
        self,
        rules: Iterable[Rule],
        action: PreparedActionDraft,
        families: Sequence[str],
        spellings: Iterable[str],
        *,
        lenient: bool,
    ) -> Rule | None:
        spellings = list(spellings)
        for rule in rules:
            if not self._applies(rule, action, families):
                continue
            if rule.bare or any(self._matches(rule, s, lenient=lenient) for s in spellings):
                return rule
        return None

    def _matches(self, rule: Rule, absolute: str, *, lenient: bool) -> bool:
        return rule.matches_path(absolute, workspace=self.workspace, home=self._guard.home, lenient=lenient)

    def _spellings(self, path: str, *, base: str | None = None) -> list[str]:
        """A path as written and as it resolves, without refusing anything (deny rules see both)."""
        home = str(self._guard.home)
        expanded = home + path[1:] if path == "~" or path.startswith("~/") else path
        absolute = expanded if expanded.startswith("/") else f"{base or self.workspace}/{expanded}"
        lexical = os.path.normpath(absolute)
        lexical = "/" + lexical.lstrip("/")
        try:
            return list(dict.fromkeys([lexical, real_path(absolute)]))
        except ValueError:
            return [lexical]

    # -- reads ----------------------------------------------------------------------------------------

    def _evaluate_read(self, action: PreparedActionDraft, read: ReadAction) -> Verdict:
        families = ("Read",)
        if not read.paths:
            return Verdict.deny(RULE_INVALID, "the read names no path")
        spellings = [s for p in read.paths for s in self._spellings(p)]
        hit = self._path_rule_hit(self.rules.deny, action, families, spellings, lenient=True)
        if hit is not None:
            return Verdict.deny(
                f"deny:{hit.text}", f"a deny rule ({hit.source}) forbids reading {', '.join(read.paths)}"
            )
        findings = _Findings()
        resolved: list[ResolvedPath] = []
        for path in read.paths:
            try:
                resolved.append(self._guard.for_read(path))
            except PathDenied as denied:
                findings.deny(denied.rule, denied.reason)
        if read.operation in ("glob", "grep"):
            for item in resolved:
                below = self._guard.sensitive_below(item.absolute)
                if below:
                    findings.ask(
                        RULE_CONTAINS_SENSITIVE, f"a recursive {read.operation} there would reach it: {below}"
                    )
        decided = findings.verdict()
        if decided is not None:
            return decided
        absolutes = [r.absolute for r in resolved]
        hit = self._path_rule_hit(self.rules.ask, action, families, absolutes, lenient=True)
        if hit is not None:
            return Verdict.ask(f"ask:{hit.text}", f"an ask rule ({hit.source}) covers this read")
        if self._all_covered(self.rules.allow, action, families, absolutes):
            rule = self._first_cover(self.rules.allow, action, families, absolutes)
            return Verdict.allow(f"allow:{rule.text}", f"an allow rule ({rule.source}) covers this read")
        inside = all(r.relative is not None for r in resolved)
        return decide(
            self.mode, ModeSubject("read", inside, description=f"{read.operation} of {', '.join(read.paths)}")
        )

    def _all_covered(
        self,
        rules: Sequence[Rule],
        action: PreparedActionDraft,
        families: Sequence[str],
        paths: Sequence[str],
    ) -> bool:
        applicable = [r for r in rules if self._applies(r, action, families)]
        return (
            bool(applicable)
            and bool(paths)
            and all(any(r.bare or self._matches(r, p, lenient=False) for r in applicable) for p in paths)
        )

    def _first_cover(
        self,
        rules: Sequence[Rule],
        action: PreparedActionDraft,
        families: Sequence[str],
        paths: Sequence[str],
    ) -> Rule:
        return next(
            r
            for r in rules
            if self._applies(r, action, families)
            and (r.bare or any(self._matches(r, p, lenient=False) for p in paths))
        )

    # -- file changes ---------------------------------------------------------------------------------

    def _evaluate_change(self, action: PreparedActionDraft, change: FileChange) -> Verdict:
        families = ("Edit", "Write") if change.new_content is not None else ("Edit",)
        spellings = self._spellings(change.path)
        hit = self._path_rule_hit(self.rules.deny, action, families, spellings, lenient=True)
        if hit is not None:
            return Verdict.deny(
                f"deny:{hit.text}", f"a deny rule ({hit.source}) forbids changing {change.path}"
            )
        try:
            resolved = self._guard.for_write(change.path)
        except PathDenied as denied:
            return Verdict.deny(denied.rule, denied.reason)
        hit = self._path_rule_hit(self.rules.ask, action, families, [resolved.absolute], lenient=True)
        if hit is not None:
            return Verdict.ask(
                f"ask:{hit.text}", f"an ask rule ({hit.source}) covers changes to {change.path}"
            )
        if self._all_covered(self.rules.allow, action, families, [resolved.absolute]):
            rule = self._first_cover(self.rules.allow, action, families, [resolved.absolute])
            return Verdict.allow(
                f"allow:{rule.text}", f"an allow rule ({rule.source}) covers changes to {change.path}"
            )
        verb = "creates" if change.pre_image_sha256 is None else "changes"
        return decide(
            self.mode, ModeSubject("file_change", True, concerns=[f"it {verb} {resolved.relative}"])
        )

    # -- fetches --------------------------------------------------------------------------------------

    def _evaluate_fetch(self, action: PreparedActionDraft, fetch: FetchRequest) -> Verdict:
        families = ("Fetch",)
        for name, make in (("deny", Verdict.deny), ("ask", Verdict.ask), ("allow", Verdict.allow)):
            for rule in getattr(self.rules, name):
                if self._applies(rule, action, families):
                    return make(
                        f"{name}:{rule.text}", f"a {name} rule ({rule.source}) covers fetching {fetch.url}"
                    )
        return decide(
            self.mode, ModeSubject("fetch", False, concerns=[f"it fetches {fetch.url} from the network"])
        )

    # -- shell ----------------------------------------------------------------------------------------

    def _evaluate_shell(self, action: PreparedActionDraft, shell: ShellCommand) -> Verdict:
        try:
            cwd = Path(self._guard.for_read(shell.cwd or ".").absolute)
        except PathDenied as denied:
            return Verdict.deny(denied.rule, f"the working directory is refused: {denied.reason}")
        analysis = analyse_command(shell.command, cwd=cwd, workspace=self.workspace, home=self._guard.home)
        if analysis.parsed and not analysis.facts:
            return Verdict.deny(RULE_EMPTY, "the command runs nothing")
        review = _ShellReview(self, action, analysis, cwd)
        review.run()
        if review.deny_rule is not None:
            rule, reason = review.deny_rule
            return Verdict.deny(f"deny:{rule.text}", reason)
        decided = review.findings.verdict()
        if decided is not None:
            return decided
        if review.ask_rule is not None:
            rule, reason = review.ask_rule
            return Verdict.ask(f"ask:{rule.text}", reason)
        covering = [review.allow_cover(f) for f in analysis.facts]
        if all(covering):
            first = next(rule for rule in covering if rule is not None)
            names = ", ".join(dict.fromkeys(rule.text for rule in covering if rule is not None))
            return Verdict.allow(f"allow:{first.text}", f"allow rules cover every command: {names}")
        known_safe = (
            analysis.parsed
            and not analysis.sets_variables
            and all(f.safe or rule is not None for f, rule in zip(analysis.facts, covering, strict=True))
        )
        subject = ModeSubject(
            "shell",
            review.inside,
            known_safe=known_safe,
            concerns=review.findings.concerns,
            description=shell.command,
        )
        return decide(self.mode, subject)


class _ShellReview:
    """Walks the analysed commands in order, tracking every directory ``cd`` may have reached."""

    def __init__(
        self, engine: PolicyEngine, action: PreparedActionDraft, analysis: ShellAnalysis, cwd: Path
    ) -> None:
        self.engine = engine
        self.guard = engine.guard
        self.action = action
        self.analysis = analysis
        self.cwds: list[Path] = [cwd]
        self.cwd_unknown = False
        self.findings = _Findings()
        self.deny_rule: tuple[Rule, str] | None = None
        self.ask_rule: tuple[Rule, str] | None = None
        self.inside = self.guard.is_inside(str(cwd))

    # -- walk -----------------------------------------------------------------------------------------

    def run(self) -> None:
        if not self.analysis.parsed:
            for problem in self.analysis.problems:
                self.findings.ask(RULE_UNPARSED, f"the command cannot be fully analysed: {problem}")
        for danger in self.analysis.dangers:
            self._danger(danger.level, danger.reason)
        for facts in self.analysis.facts:
            self._shell_rules(facts)
            self._words(facts)
            self._operands(facts)
            for danger in facts.dangers:
                self._danger(danger.level, danger.reason)
            self._capabilities(facts)
            self._follow_cd(facts)

    def _danger(self, level: str, reason: str) -> None:
        if level == "deny":
            self.findings.deny(RULE_DANGEROUS, reason)
        else:
            self.findings.concern(reason)

    def _shell_rules(self, facts: CommandFacts) -> None:
        for rules, slot in ((self.engine.rules.deny, "deny_rule"), (self.engine.rules.ask, "ask_rule")):
            if getattr(self, slot) is not None:
                continue
            for rule in rules:
                if not self.engine._applies(rule, self.action, ("Shell",)):
                    continue
                if rule.bare or any(rule.matches_argv(stage, lenient=True) for stage in facts.stages):
                    verb = "forbids" if slot == "deny_rule" else "asks before"
                    shown = " ".join(facts.command.argv)
                    setattr(self, slot, (rule, f"a {slot[:-5]} rule ({rule.source}) {verb} `{shown}`"))
                    break

    def allow_cover(self, facts: CommandFacts) -> Rule | None:
        writes_elsewhere = any(
            op.write
            and op.role == "redirection target"
            and not (op.word.static and is_shell_sink(op.word.text))
            for op in facts.operands
        )
        if writes_elsewhere or not facts.stages or not facts.stages[0]:
            return None
        for rule in self.engine.rules.allow:
            if not self.engine._applies(rule, self.action, ("Shell",)):
                continue
            if rule.bare or rule.matches_argv(facts.stages[0], lenient=False):
                return rule
        return None

    # -- every word: sensitive paths are refused whatever the program ---------------------------------

    def _words(self, facts: CommandFacts) -> None:
        operands = {op.word.text for op in facts.operands if op.word.static}
        for word in facts.words:
            if not word.static or word.text in operands:
                continue
            for candidate in _path_candidates(word.text):
                for cwd in self.cwds:
                    self._check_read_candidate(candidate, word.glob, cwd, facts)

    def _check_read_candidate(self, candidate: str, glob: bool, cwd: Path, facts: CommandFacts) -> None:
        if not glob:
            self._read_rules(self.engine._spellings(candidate, base=str(cwd)), facts)
        try:
            if glob:
                results = self.guard.check_shell_glob(
                    candidate, cwd=cwd, write=False, dotglob=self.analysis.dotglob
                )
            else:
                results = (self.guard.check_shell_path(candidate, cwd=cwd, write=False),)
        except PathDenied as denied:
            if denied.rule in (RULE_SENSITIVE, RULE_SELF):
                self.findings.deny(
                    denied.rule, f"`{' '.join(facts.command.argv)}` names a refused path: {denied.reason}"
                )
            return
        for result in results:
            if not self.guard.is_inside(result.absolute) and not is_shell_sink(result.absolute):
                if facts.safe:
                    self.inside = False
            self._read_rules([result.absolute], facts)

    def _read_rules(self, spellings: list[str], facts: CommandFacts) -> None:
        if self.deny_rule is None:
            hit = self.engine._path_rule_hit(
                self.engine.rules.deny, self.action, ("Read",), spellings, lenient=True
            )
            if hit is not None and not hit.bare:
                self.deny_rule = (
                    hit,
                    f"a deny rule ({hit.source}) forbids reading {spellings[0]} (`{' '.join(facts.command.argv)}`)",
                )
        if self.ask_rule is None:
            hit = self.engine._path_rule_hit(
                self.engine.rules.ask, self.action, ("Read",), spellings, lenient=True
            )
            if hit is not None and not hit.bare:
                self.ask_rule = (hit, f"an ask rule ({hit.source}) covers reading {spellings[0]}")

    def _write_rules(self, spellings: list[str], facts: CommandFacts) -> None:
        if self.deny_rule is None:
            hit = self.engine._path_rule_hit(
                self.engine.rules.deny, self.action, ("Edit", "Write"), spellings, lenient=True
            )
            if hit is not None and not hit.bare:
                self.deny_rule = (
                    hit,
                    f"a deny rule ({hit.source}) forbids changing {spellings[0]} (`{' '.join(facts.command.argv)}`)",
                )
        if self.ask_rule is None:
            hit = self.engine._path_rule_hit(
                self.engine.rules.ask, self.action, ("Edit", "Write"), spellings, lenient=True
            )
            if hit is not None and not hit.bare:
                self.ask_rule = (hit, f"an ask rule ({hit.source}) covers changing {spellings[0]}")

    # -- operands: the files each program reads or writes --------------------------------------------

    def _operands(self, facts: CommandFacts) -> None:
        shown = " ".join(facts.command.argv) or " ".join(
            r.operator + r.target for r in facts.command.redirections
        )
        if facts.operands_from_stdin and facts.takes_paths:
            self.findings.ask(
                RULE_UNVERIFIABLE,
                f"`{shown}` gets its file names from standard input at run time, so the path guard cannot check them",
            )
        for operand in facts.operands:
            word = operand.word
            if word.pipe:
                continue  # '<(cmd)' becomes /dev/fd/N, a pipe to a command analysed on its own
            if not word.static:
                self.findings.ask(
                    RULE_UNVERIFIABLE,
                    f"the {operand.role} `{word.text}` is computed at run time, so the path guard cannot check it",
                )
                continue
            if self.cwd_unknown and not word.text.startswith(("/", "~")):
                self.findings.ask(
                    RULE_UNVERIFIABLE,
                    f"the {operand.role} `{word.text}` is relative to a directory computed at run time",
                )
            for cwd in self.cwds:
                self._operand(operand, cwd, facts, shown)

    def _operand(self, operand: Operand, cwd: Path, facts: CommandFacts, shown: str) -> None:
        word = operand.word
        rules = self._write_rules if operand.write else self._read_rules
        if not word.glob:
            # Deny rules come before the guard, so they see the path as written even when the guard refuses it.
            rules(self.engine._spellings(word.text, base=str(cwd)), facts)
        try:
            if word.glob:
                results = self.guard.check_shell_glob(
                    word.text, cwd=cwd, write=operand.write, dotglob=self.analysis.dotglob
                )
            else:
                results = (self.guard.check_shell_path(word.text, cwd=cwd, write=operand.write),)
        except PathDenied as denied:
            if denied.rule == RULE_INVALID and word.glob:
                self.findings.ask(RULE_UNVERIFIABLE, f"the {operand.role} `{word.text}`: {denied.reason}")
            else:
                self.findings.deny(denied.rule, f"`{shown}`: {operand.role} refused: {denied.reason}")
            return
        for result in results:
            rules([result.absolute], facts)
            if operand.write:
                self._write_effects(operand, result, shown)
            else:
                if operand.recursive:
                    below = self.guard.sensitive_below(result.absolute)
                    if below:
                        self.findings.ask(
                            RULE_CONTAINS_SENSITIVE,
                            f"`{shown}` reads recursively and would reach it: {below}",
                        )
                if (
                    facts.safe
                    and not self.guard.is_inside(result.absolute)
                    and not is_shell_sink(result.absolute)
                ):
                    self.inside = False

    def _write_effects(self, operand: Operand, result: ResolvedPath, shown: str) -> None:
        absolute = result.absolute
        if operand.recursive or operand.directory:
            below = self.guard.protected_below(absolute)
            if below:
                self.findings.ask(
                    RULE_SELF,
                    f"`{shown}` changes files below {absolute}, which would reach {below.split(' contains ', 1)[-1]}",
                )
        if operand.recursive and absolute == str(self.guard.workspace) and operand.role == "rm target":
            self.findings.deny(RULE_DANGEROUS, f"`{shown}` would delete the whole workspace")
        if is_shell_sink(absolute):
            return
        if not self.guard.is_inside(absolute):
            self.findings.concern(f"it writes outside the workspace, to {absolute} (shell scratch space)")

    # -- capabilities and cd --------------------------------------------------------------------------

    def _capabilities(self, facts: CommandFacts) -> None:
        name = facts.command.binary or "the command"
        for capability in sorted(facts.capabilities, key=list(Capability).index):
            if capability is Capability.NETWORK:
                self.findings.concern(f"{name} needs network access")
            elif capability is Capability.PROCESS_CONTROL:
                self.findings.concern(f"{name} signals or stops other processes")
            elif capability is Capability.PRIVILEGE and not facts.wrappers:
                self.findings.concern(f"{name} changes ownership, permissions or privileges")

    def _follow_cd(self, facts: CommandFacts) -> None:
        target = facts.cwd_change
        if target is None or target.text == "-":
            return
        if not target.static or target.glob:
            self.cwd_unknown = True
            return
        reached: list[Path] = []
        for cwd in self.cwds:
            try:
                reached.append(Path(self.guard.check_shell_path(target.text, cwd=cwd, write=False).absolute))
            except PathDenied:
                continue  # already refused as a word of the cd command
        for directory in reached:
            if directory not in self.cwds:
                self.cwds.append(directory)
                if not self.guard.is_inside(str(directory)):
                    self.inside = False
        if len(self.cwds) > MAX_TRACKED_DIRECTORIES:
            # Each cd multiplies the directories a later relative path may be relative to; past a
            # bound, stop tracking them and treat later relative paths as unknown.
            self.cwds = self.cwds[:MAX_TRACKED_DIRECTORIES]
            self.cwd_unknown = True


def _path_candidates(text: str) -> list[str]:
    """Strings inside one argv word that a program might open: the word, a value after '=', a curl-style '@file',
    and a path glued to a short option (``-f~/.ssh/id_rsa``)."""
    candidates: list[str] = []
    if text and not text.startswith("-"):
        candidates.append(text)
    if "=" in text:
        candidates.append(text.split("=", 1)[1])
    if text.startswith("-") and len(text) > 2:
        cut = min((i for i in (text.find("/"), text.find("~")) if i > 0), default=-1)
        if cut > 0:
            candidates.append(text[cut:])
    for candidate in list(candidates):
        if candidate.startswith("@"):
            candidates.append(candidate[1:])
    return [c for c in dict.fromkeys(candidates) if c and "\x00" not in c]
