"""One instance of something per process, made at its first use: a forked child, which has none of its parent's
threads, makes its own."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

_T = TypeVar("_T")


class PerProcess(Generic[_T]):
    """``get()`` returns this process's instance, made by ``make`` the first time it is asked for here."""

    def __init__(self, make: Callable[[], _T]) -> None:
        self._make = make
        self._made: tuple[int, _T] | None = None
        self._lock = threading.Lock()

    def get(self) -> _T:
        made = self._made
        if made is not None and made[0] == os.getpid():
            return made[1]
        with self._lock:
            made = self._made
            if made is None or made[0] != os.getpid():
                made = self._made = (os.getpid(), self._make())
            return made[1]
