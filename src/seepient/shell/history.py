"""Commands and settings that stop the shell recording what runs, which would hide a session's tracks."""

from __future__ import annotations

from collections.abc import Sequence

from seepient.shell.interpretation import Danger, Interpretation, Word

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


def history_wiping(name: str, args: Sequence[Word], interpretation: Interpretation) -> None:
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
