"""Text as a person must see it in a terminal before answering for it: nothing in it can hide, move or rewrite
what is shown. Light on purpose: every surface that draws an action imports it, the full-screen UI before its
first frame."""

from __future__ import annotations

import re


def _escaped(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_HIDDEN = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)


def shown(text: str) -> str:
    """``text`` as a person must see it in a terminal: control characters (escape sequences, carriage returns,
    backspaces) and invisible or reordering format characters (bidi overrides, zero-width spaces) written as
    ``\\x1b`` or ``\\u202e``. Raw, ``rm -rf ~ #<CR><ESC>[2K  command: ls`` would show only the part after
    the line was cleared, and a person would approve what they did not see."""
    return _HIDDEN.sub(lambda found: _escaped(found.group()), text)
