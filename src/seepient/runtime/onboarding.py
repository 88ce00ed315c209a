"""Onboarding: the prompt of the turn that studies a project and writes its ``AGENTS.md`` (``seepient init``
and the TUI's ``/init``). The write is an ordinary action: policy and approval decide, as for any other."""

from __future__ import annotations

from pathlib import Path

from seepient.context.rules import RULES_FILE

_STUDY = """\
Study this project and write {file} at the root of the workspace: the instructions a coding agent (you, in a \
later session) needs before working here.

Look first (read-only tools: glob, grep, read_file; the README, build files, CI configuration, the tests), then \
write the file with one write_file call. Keep it short (under 150 lines) and concrete:
- what the project is, in two or three sentences;
- how to install, build, run the tests (one test too) and lint, as exact commands;
- the layout: where the main parts live;
- conventions the code follows (style, naming, error handling, how tests are written);
- anything surprising or easy to get wrong.
Do not invent commands you did not find evidence for; say what you could not determine."""

_IMPROVE = """

{file} already exists: read it first, keep what is still right, and improve it rather than starting over."""


def init_prompt(workspace: Path) -> str:
    """What the model is asked to do; it says so when an ``AGENTS.md`` is already there to be improved."""
    prompt = _STUDY.format(file=RULES_FILE)
    if (workspace / RULES_FILE).is_file():
        prompt += _IMPROVE.format(file=RULES_FILE)
    return prompt
