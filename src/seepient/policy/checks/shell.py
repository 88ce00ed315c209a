"""The check of shell command lines: the analysed commands walked in order (every directory ``cd`` may reach
tracked), Shell, Fetch and path rules on each, the path guard on every word and operand, dangerous and
privileged commands, then allow rules covering every command, then the consent mode.

This is the one module of the checks that reads the shell analysis (``analyse_command`` and the facts it
gives), so a change to the analysis's home touches only its imports.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from seepient.policy.checks.decider import USER_LEVEL_SOURCES, Decider
from seepient.policy.checks.findings import (
    RULE_CONTAINS_DENIED,
    RULE_CONTAINS_SENSITIVE,
    RULE_DANGEROUS,
    RULE_PRIVILEGED,
    RULE_UNPARSED,
    RULE_UNVERIFIABLE,
    Findings,
)
from seepient.policy.checks.hosts import command_hosts
from seepient.policy.modes import ModeSubject
from seepient.policy.paths import RULE_INVALID, RULE_SELF, RULE_SENSITIVE
from seepient.policy.rules import Rule
from seepient.protocol import Capability, PathDenied, PreparedActionDraft, ResolvedPath, ShellCommand, Verdict
from seepient.shell import (
    CommandFacts,
    Danger,
    Operand,
    ShellAnalysis,
    Word,
    analyse_command,
    base_name,
    is_shell_sink,
)

RULE_EMPTY = "shell:empty"
MAX_TRACKED_DIRECTORIES = 16
_PRIVILEGED_HOW = (
    "privileged and kernel-level commands are refused in every mode; only an allow rule in the user, managed "
    "or --config settings (e.g. ~/.seepient/settings.json) that names the command can permit one — a "
    "project's rules, session grants and -y never do"
)
_HOME_WORD = re.compile(r'^"?\$(?:HOME|\{HOME\})"?(?P<rest>/[^$`\\*?\[\]"\']*)?"?$')


def literal_words(argv: Sequence[str]) -> tuple[Word, ...]:
    """An argv run without a shell, as the words Shell rules match (each one literal and known)."""
    return tuple(Word(word) for word in argv)


def check_shell(decider: Decider, action: PreparedActionDraft, shell: ShellCommand) -> Verdict:
    """Deny rules → what the review found (refusals, then asks no mode skips) → ask rules → allow rules
    covering every command → the consent mode, told whether every command is known safe and stays inside."""
    try:
        cwd = Path(decider.guard.for_read(shell.cwd or ".").absolute)
    except PathDenied as denied:
        return Verdict.deny(denied.rule, f"the working directory is refused: {denied.reason}")
    analysis = analyse_command(shell.command, cwd=cwd, workspace=decider.workspace, home=decider.guard.home)
    if analysis.parsed and not analysis.facts:
        return Verdict.deny(RULE_EMPTY, "the command runs nothing")
    review = _ShellReview(decider, action, analysis, cwd)
    review.run()
    review.judge_privileged()
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
        names = ", ".join(
            dict.fromkeys(f"{rule.text} ({rule.source})" for rule in covering if rule is not None)
        )
        reasons = [f"allow rules cover every command: {names}"]
        if review.opened:
            # What let a privileged command through is what a person needs to see first.
            first = review.opened[0]
            reasons.insert(
                0,
                f"an allow rule of the {first.origin} settings ({first.source}) opens the privileged command",
            )
        return Verdict.allow(f"allow:{first.text}", *reasons)
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
    locked = None
    if decider.rules.locked_out and all(review.cover(f, decider.rules.locked_out) for f in analysis.facts):
        locked = review.cover(analysis.facts[0], decider.rules.locked_out)
    return decider.decide(subject, locked)


class _ShellReview:
    """Walks the analysed commands in order, tracking every directory ``cd`` may have reached."""

    def __init__(
        self, decider: Decider, action: PreparedActionDraft, analysis: ShellAnalysis, cwd: Path
    ) -> None:
        self.decider = decider
        self.guard = decider.guard
        self.action = action
        self.analysis = analysis
        self.cwds: list[Path] = [cwd]
        self.cwd_unknown = False
        self.findings = Findings()
        self.deny_rule: tuple[Rule, str] | None = None
        self.ask_rule: tuple[Rule, str] | None = None
        self.privileged: list[tuple[CommandFacts, Danger]] = []
        self.opened: list[Rule] = []
        self._checked: set[tuple[str, bool, str, bool]] = set()
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
            self._fetch_rules(facts)
            self._words(facts)
            self._operands(facts)
            for danger in facts.dangers:
                if danger.level == "privileged":
                    self.privileged.append((facts, danger))
                else:
                    self._danger(danger.level, danger.reason)
            self._capabilities(facts)
            self._follow_cd(facts)

    def _danger(self, level: str, reason: str) -> None:
        if level == "deny":
            self.findings.deny(RULE_DANGEROUS, reason)
        elif level == "confirm":
            self.findings.ask(RULE_DANGEROUS, reason)
        else:
            self.findings.concern(reason)

    def _shell_rules(self, facts: CommandFacts) -> None:
        for rules, slot in ((self.decider.rules.deny, "deny_rule"), (self.decider.rules.ask, "ask_rule")):
            if getattr(self, slot) is not None:
                continue
            for rule in rules:
                if not self.decider.applies(rule, self.action, ("Shell",)):
                    continue
                if rule.bare or any(rule.matches_argv(form, lenient=True) for form in facts.rule_forms):
                    verb = "forbids" if slot == "deny_rule" else "asks before"
                    shown = " ".join(facts.command.argv)
                    setattr(self, slot, (rule, f"a {slot[:-5]} rule ({rule.source}) {verb} `{shown}`"))
                    break

    def _fetch_rules(self, facts: CommandFacts) -> None:
        """Host rules (``Fetch(domain:…)``) also bind network commands: a deny rule for a host is not dodged
        by ``curl`` instead of the fetch tool. Allow rules never extend to the shell."""
        if Capability.NETWORK not in facts.capabilities:
            return
        rules = [
            (rule, slot)
            for rule_list, slot in (
                (self.decider.rules.deny, "deny_rule"),
                (self.decider.rules.ask, "ask_rule"),
            )
            for rule in rule_list
            if rule.tool == "Fetch" and rule.domain is not None
        ]
        if not rules:
            return
        argv = facts.effective
        hosts, dynamic = command_hosts(base_name(argv[0]) if argv else "", argv[1:])
        shown = " ".join(facts.command.argv)
        if dynamic:
            self.findings.ask(
                RULE_UNVERIFIABLE,
                f"`{shown}` reaches an address computed at run time, so the Fetch rules cannot be checked",
            )
        for rule, slot in rules:
            if getattr(self, slot) is not None:
                continue
            hit = next((h for h in hosts if rule.matches_host(h, lenient=True)), None)
            if hit is not None:
                verb = "forbids reaching" if slot == "deny_rule" else "asks before reaching"
                setattr(self, slot, (rule, f"a {slot[:-5]} rule ({rule.source}) {verb} {hit} (`{shown}`)"))

    def allow_cover(self, facts: CommandFacts) -> Rule | None:
        return self.cover(facts, self.decider.rules.allow)

    def judge_privileged(self) -> None:
        """Deny each privileged command no user-level allow rule names (the class of ``shell/privileged.py``).

        The rule must name the stage the danger is about (``sudo rm x`` inside ``xargs sudo rm x``), so a rule
        for a wrapper around it, or for a shell whose script holds it, never opens it."""
        user_rules = [
            rule
            for rule in self.decider.rules.allow
            if rule.origin in USER_LEVEL_SOURCES and self.decider.applies(rule, self.action, ("Shell",))
        ]
        for facts, danger in self.privileged:
            stage = danger.words or (facts.stages[0] if facts.stages else ())
            opener = (
                next((r for r in user_rules if r.bare or r.matches_argv(stage, lenient=False)), None)
                if stage and not self._writes_elsewhere(facts)
                else None
            )
            if opener is not None:
                self.opened.append(opener)
            else:
                shown = " ".join(w.text for w in stage) or " ".join(facts.command.argv)
                self.findings.deny(RULE_PRIVILEGED, f"`{shown}`: {danger.reason}")
                self.findings.deny(RULE_PRIVILEGED, _PRIVILEGED_HOW)

    @staticmethod
    def _writes_elsewhere(facts: CommandFacts) -> bool:
        return any(
            op.write
            and op.role == "redirection target"
            and not (op.word.static and is_shell_sink(op.word.text))
            for op in facts.operands
        )

    def cover(self, facts: CommandFacts, rules: Iterable[Rule]) -> Rule | None:
        """The allow rule that opens this command, when rules cover every level of it: a wrapper (``env``,
        ``nice``, ``timeout``…) and the program it runs each need one, so ``Shell(env:*)`` never opens
        ``env rm -rf build`` and ``Shell(make:*)`` does not open ``nice make``."""
        if self._writes_elsewhere(facts) or not facts.stages or not facts.stages[0]:
            return None
        usable = [rule for rule in rules if self.decider.applies(rule, self.action, ("Shell",))]
        opened: Rule | None = None
        for level, stage in enumerate(facts.stages):
            match = next((r for r in usable if r.bare or r.matches_argv(stage, lenient=False)), None)
            if match is None:
                return None
            opened = opened or match
            inner = facts.stages[level + 1] if level + 1 < len(facts.stages) else None
            if inner is not None and _names_the_wrapped_program(match, stage, inner):
                return opened  # the rule spells out the wrapped command itself: `Shell(sudo true)`
        return opened

    # -- every word: sensitive paths are refused whatever the program ---------------------------------

    def _words(self, facts: CommandFacts) -> None:
        operands = {op.word.text for op in facts.operands if op.word.static}
        for word in facts.words:
            if not word.static or word.text in operands:
                continue
            for candidate in _path_candidates(word.text):
                for cwd in self.cwds:
                    self._check_read_candidate(candidate, word.glob, cwd, facts)
        # Quoted paths inside inline program text (python -c, awk): read checks only, a best effort,
        # since a program can build any path at run time.
        for word in facts.embedded:
            for cwd in self.cwds:
                self._check_read_candidate(word.text, False, cwd, facts)

    def _check_read_candidate(self, candidate: str, glob: bool, cwd: Path, facts: CommandFacts) -> None:
        key = (candidate, glob, str(cwd), facts.safe)
        if key in self._checked:
            return  # the same word again (another command of the line, another wrapper stage)
        self._checked.add(key)
        spellings: list[str] = []
        if not glob:
            spellings = self.decider.spellings(candidate, base=str(cwd))
            self._read_rules(spellings, facts)
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
            if result.absolute not in spellings:
                self._read_rules([result.absolute], facts)

    def _read_rules(self, spellings: list[str], facts: CommandFacts) -> None:
        self._path_rules(spellings, facts, ("Read",), "reading")

    def _write_rules(self, spellings: list[str], facts: CommandFacts) -> None:
        self._path_rules(spellings, facts, ("Edit", "Write"), "changing")

    def _path_rules(
        self, spellings: list[str], facts: CommandFacts, families: Sequence[str], doing: str
    ) -> None:
        """Deny and ask path rules of ``families`` on a path a command opens: the first rule of each kind that
        applies is kept, unless it is bare (it names no path), and only while none of that kind was found."""
        decider = self.decider
        if self.deny_rule is None:
            hit = decider.path_rule_hit(decider.rules.deny, self.action, families, spellings, lenient=True)
            if hit is not None and not hit.bare:
                self.deny_rule = (
                    hit,
                    f"a deny rule ({hit.source}) forbids {doing} {spellings[0]} (`{' '.join(facts.command.argv)}`)",
                )
        if self.ask_rule is None:
            hit = decider.path_rule_hit(decider.rules.ask, self.action, families, spellings, lenient=True)
            if hit is not None and not hit.bare:
                self.ask_rule = (hit, f"an ask rule ({hit.source}) covers {doing} {spellings[0]}")

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
                home_form = _home_form(word.text)
                if home_form is not None:
                    # '$HOME/x' is almost surely '~/x': check that too, so 'rm -rf "$HOME"' is refused outright.
                    expanded = dataclasses.replace(operand, word=Word(home_form))
                    for cwd in self.cwds:
                        self._operand(expanded, cwd, facts, shown)
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
        write_rules = self._write_rules if operand.write else None
        read = not operand.write or operand.moves

        def rules(spellings: list[str], facts: CommandFacts) -> None:
            if write_rules is not None:
                write_rules(spellings, facts)
            if read:
                self._read_rules(spellings, facts)

        if not word.glob:
            # Deny rules come before the guard, so they see the path as written even when the guard refuses it.
            rules(self.decider.spellings(word.text, base=str(cwd)), facts)
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
            if read and operand.recursive and not operand.names_only:
                self._rules_below(result.absolute, shown)
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

    def _rules_below(self, absolute: str, shown: str) -> None:
        """A recursive read (or a move) of a directory reaches files no operand names: deny and ask rules
        on them still hold."""
        decider = self.decider
        for rule in decider.path_rules(decider.rules.deny, self.action, ("Read",)):
            if decider.below(rule, absolute):
                self.findings.ask(
                    RULE_CONTAINS_DENIED,
                    f"`{shown}` reads everything below {absolute}, which may include files a deny rule "
                    f"({rule.source}: {rule.text}) protects; name the files it needs instead",
                )
                break
        if self.ask_rule is None:
            for rule in decider.path_rules(decider.rules.ask, self.action, ("Read",)):
                if decider.below(rule, absolute):
                    self.ask_rule = (rule, f"an ask rule ({rule.source}) covers files below {absolute}")
                    break

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


def _names_the_wrapped_program(rule: Rule, outer: Sequence[Word], inner: Sequence[Word]) -> bool:
    """Whether ``rule``'s words reach past the wrapper's own into the program it runs (the inner argv is the
    tail of the outer one); a rule of the wrapper alone does not."""
    if rule.bare or rule.argv is None or not inner or len(inner) >= len(outer):
        return False
    if [w.text for w in outer[len(outer) - len(inner) :]] != [w.text for w in inner]:
        return False
    return len(rule.argv) > len(outer) - len(inner)


def _home_form(text: str) -> str | None:
    """``$HOME``, ``"${HOME}"/x`` and the like written with ``~`` instead, or None for anything else."""
    match = _HOME_WORD.match(text)
    if match is None:
        return None
    return "~" + (match.group("rest") or "")


@functools.lru_cache(maxsize=4096)
def _path_candidates(text: str) -> tuple[str, ...]:
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
    return tuple(c for c in dict.fromkeys(candidates) if c and "\x00" not in c)
