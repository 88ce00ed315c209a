"""Images attached in the TUI: a pasted or dropped file path (terminals paste a dragged file as its path)
or ``/image PATH`` becomes an image part of the next prompt, which then goes to the vision route."""

from __future__ import annotations

import shlex
from pathlib import Path
from urllib.parse import unquote, urlparse

_MAX_PASTED_PATHS = 10


def pasted_image_paths(text: str) -> list[Path] | None:
    """The image files a paste names, or None when the paste is ordinary text (which is then typed as is).

    A paste counts only when *every* word in it is an existing image file, judged by its first bytes, so a
    sentence that happens to mention a path is never swallowed."""
    # Imported here: the prompt widget loads before the runtime, and the first frame must not wait for it.
    from seepient.protocol import sniff_image_type

    text = text.strip()
    if not text:
        return None
    try:
        words = shlex.split(text)  # drag-and-drop quotes or backslash-escapes spaces in names
    except ValueError:
        return None
    if not words or len(words) > _MAX_PASTED_PATHS:
        return None
    paths = []
    for word in words:
        if word.startswith("file://"):
            word = unquote(urlparse(word).path)
        path = Path(word).expanduser()
        try:
            if not path.is_file():
                return None
            with path.open("rb") as handle:
                if sniff_image_type(handle.read(12)) is None:
                    return None
        except OSError:
            return None
        paths.append(path)
    return paths
