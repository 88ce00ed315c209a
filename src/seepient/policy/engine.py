"""The policy engine (lifecycle step 5): one verdict per prepared action.

Order, first decisive answer wins: deny rules → the action's own check → ask rules → allow rules →
consent mode. The check denies (path guard, self-protection, dangerous commands) or asks in a way no
rule and no mode may skip (a shell line that could not be analysed, a path known only at run time, a
recursive operation that would reach secrets, Seepient's state or files a deny rule protects, code
fetched from the network and run unseen); what else it finds (network access, destruction inside the
workspace, raised privileges) becomes a reason the consent mode weighs.

Rules come from every settings source (see ``rules``); when the managed settings allow only their own
allow rules, the consent mode's asks are named ``managed_only:MODE`` instead of ``mode:MODE``, so no
session grant, project grant or classifier may answer them: only a person, once.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

from seepient.config.settings import PermissionSettings, PermissionSources, SettingsError
from seepient.net.address_policy import AddressPolicy
from seepient.net.url import UrlError, parse_url
from seepient.policy.commands import Danger, Operand, Word, base_name
from seepient.policy.delegation import evaluate_agent, evaluate_worktree
from seepient.policy.memory import evaluate_knowledge, evaluate_memory, web_search_fetch
from seepient.policy.modes import ModeSubject, decide, resolve_mode
from seepient.policy.paths import (
    RULE_FOREIGN,
    RULE_INVALID,
    RULE_OUTSIDE,
    RULE_SELF,
    RULE_SENSITIVE,
    PathGuard,
    is_shell_sink,
    real_path,
    resolution_memo,
)
from seepient.policy.rules import Rule, RuleSet, normalise_host
from seepient.policy.sensitive import component_key
from seepient.policy.shell import CommandFacts, ShellAnalysis, analyse_command
from seepient.protocol import (
    ActionKind,
    AgentTask,
    Capability,
    Decision,
    FetchRequest,
    FileChange,
    FileChangeSet,
    PathDenied,
    PreparedActionDraft,
    ReadAction,
    ResolvedPath,
    SessionStateChange,
    ShellCommand,
    Verdict,
    WorktreeCommand,
)
from seepient.protocol.actions import KnowledgeQuery, McpCall, MemoryAction, ProcessControl, WebSearchRequest

RULE_UNPARSED = "shell:unparsed"
RULE_UNVERIFIABLE = "shell:unverifiable_path"
RULE_DANGEROUS = "shell:dangerous"
RULE_PRIVILEGED = "shell:privileged"
RULE_CONTAINS_SENSITIVE = "path_guard:contains_sensitive"
RULE_EMPTY = "shell:empty"
RULE_CONTAINS_DENIED = "path_rule:contains_denied"
RULE_INVALID_URL = "fetch:invalid_url"
RULE_FETCH_REFUSED = "fetch:address_policy"
MANAGED_ONLY_PREFIX = "managed_only:"
MAX_TRACKED_DIRECTORIES = 16
# How many entries below a recursive read are looked at for a file a deny rule names; past it, one is assumed.
MAX_ENTRIES_SEARCHED = 5000
_SPECIFICITY = {
    RULE_SELF: 0,
    RULE_SENSITIVE: 1,
    RULE_FOREIGN: 1.5,
    RULE_DANGEROUS: 2,
    RULE_PRIVILEGED: 2.5,
    RULE_OUTSIDE: 3,
    RULE_UNPARSED: 4,
    RULE_UNVERIFIABLE: 5,
    RULE_CONTAINS_SENSITIVE: 6,
    RULE_CONTAINS_DENIED: 7,
}
# Among asks, a line that could not be analysed is named before the danger found in what could be.
_ASK_SPECIFICITY = {**_SPECIFICITY, RULE_DANGEROUS: 4.5}
_MODES = ("always-ask", "ask-untrusted", "auto", "autonomous-trusted")
USER_LEVEL_SOURCES = frozenset({"user", "managed", "command-line", "settings"})
"""Rule sources whose allow rules may open a privileged command: the user's own settings, the managed file,
a ``--config`` file or flags, and rules handed over in code (the SDK, tests); never a project's settings, a
project rule approved at a prompt, or a session grant."""
_PRIVILEGED_HOW = (
    "privileged and kernel-level commands are refused in every mode; only an allow rule in the user, managed "
    "or --config settings (e.g. ~/.seepient/settings.json) that names the command can permit one — a "
    "project's rules, session grants and -y never do"
)
_NETWORK_URL_PROGRAMS = frozenset("curl wget http https xh aria2c lynx links w3m".split())
_HOST_WORD = re.compile(r"^[A-Za-z0-9.-]+\.[A-Za-z]{2,}(?::\d+)?(?:[/?#].*)?$")
_REMOTE_WORD = re.compile(r"^(?:[^@/\s]+@)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+\.[A-Za-z]{2,})(?::|$)")
_HOME_WORD = re.compile(r'^"?\$(?:HOME|\{HOME\})"?(?P<rest>/[^$`\\*?\[\]"\']*)?"?$')


class PolicyModeError(SettingsError):
    """The consent mode asked for is switched off by the managed settings."""


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
        for found, make, rank in (
            (self.denials, Verdict.deny, _SPECIFICITY),
            (self.hard_asks, Verdict.ask, _ASK_SPECIFICITY),
        ):
            if found:
                # Name the most specific finding: touching Seepient's state or a secret says more than
                # "outside the workspace", which says more than a malformed path.
                ordered = sorted(found, key=lambda item: rank.get(item[0], len(rank)))
                reasons = tuple(dict.fromkeys(reason for _, reason in ordered))
                return make(ordered[0][0], *reasons)
        return None


_USER_LEVEL_ORIGINS = frozenset({"user", "managed", "command-line", "settings"})


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
        sources: PermissionSources | None = None,
        net_policy: AddressPolicy | None = None,
        protected: Sequence[Path] = (),
    ) -> None:
        """``permissions`` as loaded by ``load_settings`` carries its sources (file and position of every
        rule); ``sources`` overrides them. ``net_policy`` is the fetch address policy of the ``net`` settings
        (default: no allowlist), so a fetch it would refuse is denied here already. A malformed rule raises
        ``PolicyRuleError`` and a mode the managed settings disable ``PolicyModeError``, both
        ``SettingsError``s that stop the run."""
        self.net_policy = net_policy or AddressPolicy()
        self.rules = RuleSet.from_sources(sources if sources is not None else permissions.rule_sources)
        self._guard = PathGuard(
            workspace,
            seepient_home=seepient_home,
            home=home,
            foreign_allowed=self.user_allows_write,
            extra_protected=protected,
        )
        self.mode = resolve_mode(mode)
        if self.mode in self.rules.disabled_modes:
            where = self.rules.managed_path or "the managed settings"
            left = [m for m in _MODES if m not in self.rules.disabled_modes]
            raise PolicyModeError(
                f"{where}: permissions.disabledModes: the managed settings switch the {self.mode} mode off; "
                f"choose another with --mode (one of: {', '.join(left)})"
            )

    @property
    def guard(self) -> PathGuard:
        return self._guard

    def user_allows_write(self, absolute: str) -> bool:
        """Whether an Edit or Write allow rule that names the path, from the user's own settings (user, managed,
        ``--config``, flags or an SDK caller; never a project's file, never a session grant), covers it. What
        other programs run from the workspace may be written only with such a rule."""
        for rule in self.rules.allow:
            if rule.origin not in _USER_LEVEL_ORIGINS or rule.tool not in ("Edit", "Write") or rule.bare:
                continue
            if rule.matches_path(absolute, workspace=self.workspace, home=self._guard.home, lenient=False):
                return True
        return False

    def user_allows_workspace_write(self, relative: str) -> bool:
        """``user_allows_write`` for a workspace-relative path (what the jail's control guard asks)."""
        return self.user_allows_write(f"{str(self.workspace).rstrip('/')}/{relative}")

    @property
    def workspace(self) -> Path:
        return self._guard.workspace

    def evaluate(self, action: PreparedActionDraft) -> Verdict:
        """The verdict on one prepared action; the file system is looked at once, through one memo."""
        with resolution_memo():
            return self._evaluate(action)

    def _evaluate(self, action: PreparedActionDraft) -> Verdict:
        if action.kind is ActionKind.MCP or action.tool.startswith("mcp__"):
            return self._evaluate_mcp(action)
        payload = action.payload
        if isinstance(payload, ReadAction):
            return self._evaluate_read(action, payload)
        if isinstance(payload, FileChange):
            return self._evaluate_change(action, payload)
        if isinstance(payload, FileChangeSet):
            return self._evaluate_change_set(action, payload)
        if isinstance(payload, ShellCommand):
            return self._evaluate_shell(action, payload)
        if isinstance(payload, FetchRequest):
            return self._evaluate_fetch(action, payload)
        if isinstance(payload, ProcessControl):
            return self._evaluate_process(action, payload)
        if isinstance(payload, MemoryAction):
            return evaluate_memory(self, action, payload)
        if isinstance(payload, KnowledgeQuery):
            return evaluate_knowledge(self, action, payload)
        if isinstance(payload, WebSearchRequest):
            # The backend is what gets contacted: Fetch rules for its host apply, as for web_fetch.
            return self._evaluate_fetch(action, web_search_fetch(payload))
        if action.kind is ActionKind.STATE or isinstance(payload, SessionStateChange):
            return self._evaluate_state(action)
        if isinstance(payload, WorktreeCommand):
            return evaluate_worktree(self, action, payload)
        if isinstance(payload, AgentTask):
            return evaluate_agent(self, action, payload)
        return Verdict.ask(f"mode:{self.mode}", f"policy has no check for {action.kind} actions yet")

    def _evaluate_state(self, action: PreparedActionDraft) -> Verdict:
        """A change to the session's own state (the todo list) touches nothing on the host, so no mode asks
        about it; a rule naming the tool still denies or asks, and the action is audited like any other."""
        payload = action.payload
        if action.kind is not ActionKind.STATE or not isinstance(payload, SessionStateChange):
            return Verdict.deny(
                "state:mismatch",
                f"{action.tool} declared a {action.kind} action with a {payload.type} payload",
            )
        for kind, make in (("deny", Verdict.deny), ("ask", Verdict.ask)):
            for rule in getattr(self.rules, kind):
                if rule.bare and rule.tool == action.tool:
                    return make(f"{kind}:{rule.text}", f"a {kind} rule ({rule.source}) covers {action.tool}")
        return Verdict.allow(
            "state:session",
            f"it changes only the session's own {payload.key}; nothing on the host is touched",
        )

    # -- rules ----------------------------------------------------------------------------------------

    def _applies(self, rule: Rule, action: PreparedActionDraft, families: Sequence[str]) -> bool:
        if rule.bare:
            return (
                rule.tool in families
                or rule.tool == action.tool
                or (rule.tool.startswith("mcp__") and action.tool.startswith(rule.tool + "__"))
            )
        return rule.tool in families

    def _decide(self, subject: ModeSubject, locked: Rule | None = None) -> Verdict:
        """The consent mode's answer; under a managed allow-rules lock its asks cannot be granted away."""
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

    def _locked(
        self, covers: Callable[[Rule], bool], action: PreparedActionDraft, families: Sequence[str]
    ) -> Rule | None:
        return next(
            (r for r in self.rules.locked_out if self._applies(r, action, families) and covers(r)), None
        )

    def _below(self, rule: Rule, directory: str, file_glob: str | None = None) -> bool:
        """Whether a recursive read of ``directory`` could open a file ``rule`` names.

        A pattern for one name at any depth (``.env``, ``*.pem``) is looked for on disk, a bounded walk
        that does not follow symbolic links (it counts them as found); any other pattern counts whenever
        its shape allows a match below."""
        home = self._guard.home
        if not rule.could_match_below(directory, workspace=self.workspace, home=home, file_glob=file_glob):
            return False
        pattern = (rule.pattern or "**").strip("/")
        if "/" in pattern or "**" in pattern:
            return True
        return _name_below(directory, component_key(pattern))

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
        asked_below: Rule | None = None
        if read.operation in ("glob", "grep"):
            for item in resolved:
                below = self._guard.sensitive_below(item.absolute)
                if below:
                    findings.ask(
                        RULE_CONTAINS_SENSITIVE, f"a recursive {read.operation} there would reach it: {below}"
                    )
        if read.operation == "grep":
            # grep opens every file below its root: files a deny rule protects must not be among them.
            file_glob = read.params.get("glob") if isinstance(read.params.get("glob"), str) else None
            for item in resolved:
                for rule in self._path_rules(self.rules.deny, action, families):
                    if self._below(rule, item.absolute, file_glob):
                        findings.ask(
                            RULE_CONTAINS_DENIED,
                            f"the grep would search files a deny rule ({rule.source}: {rule.text}) protects below "
                            f"{item.absolute}; narrow it with a path or a glob that leaves them out",
                        )
                        break
                for rule in self._path_rules(self.rules.ask, action, families):
                    if asked_below is None and self._below(rule, item.absolute, file_glob):
                        asked_below = rule
        decided = findings.verdict()
        if decided is not None:
            return decided
        absolutes = [r.absolute for r in resolved]
        hit = self._path_rule_hit(self.rules.ask, action, families, absolutes, lenient=True) or asked_below
        if hit is not None:
            return Verdict.ask(f"ask:{hit.text}", f"an ask rule ({hit.source}) covers this read")
        if self._all_covered(self.rules.allow, action, families, absolutes):
            rule = self._first_cover(self.rules.allow, action, families, absolutes)
            return Verdict.allow(f"allow:{rule.text}", f"an allow rule ({rule.source}) covers this read")
        # The user's own skills count as trusted reads, like the workspace (PathGuard.is_user_instruction).
        inside = all(r.relative is not None or self.guard.is_user_instruction(r.absolute) for r in resolved)
        locked = self._locked(
            lambda r: r.bare or all(self._matches(r, p, lenient=False) for p in absolutes), action, families
        )
        return self._decide(
            ModeSubject("read", inside, description=f"{read.operation} of {', '.join(read.paths)}"), locked
        )

    def _path_rules(
        self, rules: Iterable[Rule], action: PreparedActionDraft, families: Sequence[str]
    ) -> list[Rule]:
        return [r for r in rules if self._applies(r, action, families) and r.pattern is not None]

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
        families = ("Edit", "Write") if change.new_content is not None or change.delete else ("Edit",)
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
        verb = "deletes" if change.delete else "creates" if change.pre_image_sha256 is None else "changes"
        locked = self._locked(
            lambda r: r.bare or self._matches(r, resolved.absolute, lenient=False), action, families
        )
        return self._decide(
            ModeSubject("file_change", True, concerns=[f"it {verb} {resolved.relative}"]), locked
        )

    def _evaluate_change_set(self, action: PreparedActionDraft, change_set: FileChangeSet) -> Verdict:
        """Every path of the set is judged as its own change; the strictest verdict speaks for the set."""
        verdicts = [self._evaluate_change(action, change) for change in change_set.changes]
        for decision in (Decision.DENY, Decision.ASK, Decision.ALLOW):
            decided = [v for v in verdicts if v.decision is decision]
            if decided:
                reasons = dict.fromkeys(reason for v in decided for reason in v.reasons)
                return Verdict(decision=decision, rule=decided[0].rule, reasons=tuple(reasons))
        return Verdict.deny(RULE_INVALID, "the change set names no file")

    # -- background processes -------------------------------------------------------------------------

    def _evaluate_process(self, action: PreparedActionDraft, control: ProcessControl) -> Verdict:
        """Reading or killing a background process. The executor serves only processes this session
        started, so this touches nothing the session's own approved command did not create: reading its
        output is a read inside the workspace, killing it is treated like a known-safe command. Rules that
        name the tool (``shell_kill``) still apply."""
        for name, make in (("deny", Verdict.deny), ("ask", Verdict.ask), ("allow", Verdict.allow)):
            for rule in getattr(self.rules, name):
                if rule.bare and rule.tool == action.tool:
                    return make(f"{name}:{rule.text}", f"a {name} rule ({rule.source}) covers {action.tool}")
        if control.operation == "output":
            return self._decide(
                ModeSubject("read", True, description=f"reading background process {control.process_id}")
            )
        return self._decide(
            ModeSubject(
                "shell",
                True,
                known_safe=True,
                concerns=[f"it kills background process {control.process_id} and its children"],
            )
        )

    # -- fetches --------------------------------------------------------------------------------------

    def refused_host(self, host: str) -> str | None:
        """Why a Fetch deny rule refuses ``host``, or None: the egress proxy of sandboxed commands asks this
        for every connection, so a command cannot reach a host the file and fetch tools may not."""
        for rule in self.rules.deny:
            if rule.tool == "Fetch" and (rule.bare or rule.matches_host(host, lenient=True)):
                return f"a deny rule ({rule.source}: {rule.text}) covers {host}"
        return None

    def _evaluate_fetch(self, action: PreparedActionDraft, fetch: FetchRequest) -> Verdict:
        families = ("Fetch",)
        hosts = url_hosts(fetch.url)
        if not hosts:
            return Verdict.deny(
                RULE_INVALID_URL, f"{fetch.url!r} names no host policy can check; give an http(s) URL"
            )
        shown = ", ".join(hosts)
        rule = self._host_rule(self.rules.deny, action, hosts)
        if rule is not None:
            return Verdict.deny(
                f"deny:{rule.text}", f"a deny rule ({rule.source}) covers fetching {fetch.url} (host {shown})"
            )
        refused = self._fetch_refusal(fetch.url)
        if refused is not None:
            return refused
        rule = self._host_rule(self.rules.ask, action, hosts)
        if rule is not None:
            return Verdict.ask(
                f"ask:{rule.text}", f"an ask rule ({rule.source}) covers fetching {fetch.url} (host {shown})"
            )
        # Every reading of the URL must be allowed: a parser disagreement must not open a host.
        for rule in self.rules.allow:
            if self._applies(rule, action, families) and (
                rule.bare or all(rule.matches_host(h, lenient=False) for h in hosts)
            ):
                return Verdict.allow(
                    f"allow:{rule.text}", f"an allow rule ({rule.source}) covers fetching {fetch.url}"
                )
        locked = self._locked(
            lambda r: r.bare or all(r.matches_host(h, lenient=False) for h in hosts), action, families
        )
        return self._decide(
            ModeSubject("fetch", False, concerns=[f"it fetches {fetch.url} from the network"]), locked
        )

    def _host_rule(
        self, rules: Iterable[Rule], action: PreparedActionDraft, hosts: Sequence[str]
    ) -> Rule | None:
        return next(
            (
                rule
                for rule in rules
                if self._applies(rule, action, ("Fetch",))
                and (rule.bare or any(rule.matches_host(h, lenient=True) for h in hosts))
            ),
            None,
        )

    def _fetch_refusal(self, url: str) -> Verdict | None:
        """The fetch layer's own refusal, given before anyone is asked: a URL its strict parser rejects, a
        port, an address literal or a name that always resolves locally (no DNS here: a rebinding answer
        could differ from the one the pinned fetch gets). Other names are left to the pinned fetch."""
        try:
            parsed = parse_url(url)
        except UrlError as exc:
            return Verdict.deny(RULE_INVALID_URL, f"the fetch would refuse {url!r}: {exc}")
        problem = self.net_policy.static_reason(parsed.host, parsed.ip, parsed.port)
        if problem is None:
            return None
        return Verdict.deny(
            RULE_FETCH_REFUSED,
            f"the fetch address policy refuses {parsed.geturl()}: {problem}",
            "no rule, grant or mode can open it; internal services are reached only through net.allowHosts, "
            "net.allowRanges and net.allowPorts in the user, managed or --config settings",
        )

    # -- MCP tools ------------------------------------------------------------------------------------

    def _evaluate_mcp(self, action: PreparedActionDraft) -> Verdict:
        families = ("Mcp",)
        name = action.tool
        for kind, make in (("deny", Verdict.deny), ("ask", Verdict.ask)):
            for rule in getattr(self.rules, kind):
                if self._applies(rule, action, families) and (
                    rule.bare or rule.matches_mcp(name, lenient=True)
                ):
                    return make(
                        f"{kind}:{rule.text}", f"a {kind} rule ({rule.source}) covers the MCP tool {name}"
                    )
        for rule in self.rules.allow:
            if self._applies(rule, action, families) and (rule.bare or rule.matches_mcp(name, lenient=False)):
                return Verdict.allow(
                    f"allow:{rule.text}", f"an allow rule ({rule.source}) covers the MCP tool {name}"
                )
        locked = self._locked(lambda r: r.bare or r.matches_mcp(name, lenient=False), action, families)
        # What a server declares about its tool is the server's claim, not something Seepient checked (a
        # "read-only" tool may read any file the server can): it shapes the reasons a person reads, and the
        # consent mode decides as for any unchecked action; only autonomous-trusted proceeds without asking.
        call = action.payload if isinstance(action.payload, McpCall) else None
        concerns = [f"it calls the MCP tool {name}"]
        if call is not None and not call.read_only_hint:
            concerns.append(f"MCP server {call.server} does not declare {call.tool} read-only")
        elif call is not None and call.open_world_hint:
            concerns.append(f"MCP server {call.server} says {call.tool} reaches beyond its own data")
        return self._decide(ModeSubject("other", True, concerns=concerns, description=action.summary), locked)

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
        if self.rules.locked_out and all(review.cover(f, self.rules.locked_out) for f in analysis.facts):
            locked = review.cover(analysis.facts[0], self.rules.locked_out)
        return self._decide(subject, locked)


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
        for rules, slot in ((self.engine.rules.deny, "deny_rule"), (self.engine.rules.ask, "ask_rule")):
            if getattr(self, slot) is not None:
                continue
            for rule in rules:
                if not self.engine._applies(rule, self.action, ("Shell",)):
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
                (self.engine.rules.deny, "deny_rule"),
                (self.engine.rules.ask, "ask_rule"),
            )
            for rule in rule_list
            if rule.tool == "Fetch" and rule.domain is not None
        ]
        if not rules:
            return
        hosts, dynamic = _command_hosts(facts)
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
        return self.cover(facts, self.engine.rules.allow)

    def judge_privileged(self) -> None:
        """Deny each privileged command no user-level allow rule names (the class of ``policy/privileged.py``).

        The rule must name the stage the danger is about (``sudo rm x`` inside ``xargs sudo rm x``), so a rule
        for a wrapper around it, or for a shell whose script holds it, never opens it."""
        user_rules = [
            rule
            for rule in self.engine.rules.allow
            if rule.origin in USER_LEVEL_SOURCES and self.engine._applies(rule, self.action, ("Shell",))
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
        if self._writes_elsewhere(facts) or not facts.stages or not facts.stages[0]:
            return None
        for rule in rules:
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
            spellings = self.engine._spellings(candidate, base=str(cwd))
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
                home_form = _home_form(word.text)
                if home_form is not None:
                    # '$HOME/x' is almost surely '~/x': check that too, so 'rm -rf "$HOME"' is refused outright.
                    expanded = Operand(
                        Word(home_form),
                        write=operand.write,
                        role=operand.role,
                        recursive=operand.recursive,
                        directory=operand.directory,
                        moves=operand.moves,
                        names_only=operand.names_only,
                    )
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
        engine = self.engine
        for rule in engine._path_rules(engine.rules.deny, self.action, ("Read",)):
            if engine._below(rule, absolute):
                self.findings.ask(
                    RULE_CONTAINS_DENIED,
                    f"`{shown}` reads everything below {absolute}, which may include files a deny rule "
                    f"({rule.source}: {rule.text}) protects; name the files it needs instead",
                )
                break
        if self.ask_rule is None:
            for rule in engine._path_rules(engine.rules.ask, self.action, ("Read",)):
                if engine._below(rule, absolute):
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


def _home_form(text: str) -> str | None:
    """``$HOME``, ``"${HOME}"/x`` and the like written with ``~`` instead, or None for anything else."""
    match = _HOME_WORD.match(text)
    if match is None:
        return None
    return "~" + (match.group("rest") or "")


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


def url_hosts(url: str) -> list[str]:
    """The hosts a URL may reach, normalised: as Python splits it, and as a WHATWG parser does (which reads
    ``\\`` as ``/``), so ``https://good.com\\@evil.com`` yields both readings. Empty when there is no host or
    the scheme is not http(s)."""
    hosts: list[str] = []
    for text in (url.strip(), url.strip().replace("\\", "/")):
        try:
            parts = urllib.parse.urlsplit(text)
        except ValueError:
            continue
        if parts.scheme.lower() not in ("http", "https"):
            continue
        host = _authority_host(parts.netloc)
        normal = normalise_host(host) if host else None
        if normal is not None and normal not in hosts:
            hosts.append(normal)
    return hosts


def _authority_host(netloc: str) -> str:
    host = netloc.rpartition("@")[2]
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else ""
    return host.partition(":")[0]


def _command_hosts(facts: CommandFacts) -> tuple[list[str], bool]:
    """Hosts a network command names (URLs, ``curl example.com``, ``git@host:repo``), and whether it has
    an argument computed at run time that might name another."""
    argv = facts.effective
    program = base_name(argv[0]) if argv else ""
    hosts: list[str] = []
    dynamic = False
    for word in argv[1:]:
        if not word.static:
            dynamic = True
            continue
        text = word.text
        candidates: list[str] = []
        if "://" in text:
            candidates = url_hosts(text) or [
                h for h in [normalise_host(_authority_host(text.split("://", 1)[1].split("/", 1)[0]))] if h
            ]
        elif program in _NETWORK_URL_PROGRAMS and not text.startswith("-") and _HOST_WORD.match(text):
            candidates = url_hosts("http://" + text)
        else:
            match = _REMOTE_WORD.match(text)
            if match is not None and not text.startswith("-"):
                host = normalise_host(match.group(1))
                candidates = [host] if host else []
        hosts.extend(h for h in candidates if h not in hosts)
    return hosts, dynamic


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
