"""An image file a person named (``--image PATH``, a path pasted into the TUI) read into an inline image part."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seepient.protocol import ImagePart


def read_image_file(path: Path) -> ImagePart:
    """The file as an inline image part, typed by its bytes; ``ValueError`` says why it cannot be one (each
    surface puts its own words before the reason)."""
    # Imported here: the TUI's prompt loads this before the runtime, and its first frame must not wait for it.
    from seepient.protocol import ImagePart

    try:
        data = path.expanduser().read_bytes()
    except OSError as exc:
        raise ValueError(f"cannot read it ({exc.strerror or exc})") from None
    return ImagePart.from_bytes(data)
