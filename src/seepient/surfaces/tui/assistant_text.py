"""The model's streamed markdown in the transcript. Apart from the other widgets because textual's Markdown
brings the markdown parser (tens of ms to import): it loads behind the first frame, with the session."""

from __future__ import annotations

from textual.widgets import Markdown

from seepient.approval.visible import shown as visible


class AssistantText(Markdown):
    """The model's markdown as it streams. Deltas are batched (one append per 50 ms at most) and appended:
    only the last block is parsed again, so a long answer does not get slower to show as it grows."""

    DEFAULT_CSS = "AssistantText { margin: 0 0 0 2; padding: 0; }"
    _BATCH_SECONDS = 0.05

    def __init__(self, text: str = "") -> None:
        # Textual passes an escape sequence in the text on to the terminal (it drops only BEL, BS, VT, FF, CR),
        # where it could hide or garble what the person reads, an approval included: it is written out instead.
        super().__init__(visible(text))
        self.streamed = text
        self._unsent = ""
        self._scheduled = False
        self._appending = False

    def add(self, text: str) -> None:
        self.streamed += text
        self._unsent += visible(text)
        # While an append is running, its loop picks the new text up; otherwise one flush is scheduled.
        if not self._scheduled and not self._appending:
            self._scheduled = True
            self.set_timer(self._BATCH_SECONDS, self._flush)

    async def _flush(self) -> None:
        self._scheduled = False
        if self._appending:
            return
        self._appending = True
        try:
            # One append at a time: Markdown.append works out where to re-parse when it is called, so two
            # overlapping appends would both re-parse the same tail and show it twice.
            while self._unsent:
                fragment, self._unsent = self._unsent, ""
                await self.append(fragment)
        finally:
            self._appending = False

    def finish(self) -> None:
        if self._unsent and not self._scheduled and not self._appending:
            self._scheduled = True
            self.call_later(self._flush)
