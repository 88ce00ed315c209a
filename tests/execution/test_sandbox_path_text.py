"""The jail's path checks compare paths as text (``host_view.text_within``, ``host_view._within``) for speed; they
must say exactly what ``Path.is_relative_to`` says for absolute paths, the two-slash POSIX root included."""

from __future__ import annotations

import random
from pathlib import Path

from seepient.execution.sandbox import bwrap, host_view

_NAMES = ("a", "ab", "a.b", "..", ".", "", "a b", "é", "b")


def _path(rnd: random.Random) -> str:
    return "/" + "/".join(rnd.choice(_NAMES) for _ in range(rnd.randint(0, 4)))


def test_text_checks_agree_with_pathlib() -> None:
    rnd = random.Random(20261201)
    for _ in range(50_000):
        path, root = Path(_path(rnd)), Path(_path(rnd))
        expected = path == root or path.is_relative_to(root)
        assert host_view._within(path, root) is expected, (path, root)
        assert bwrap._within(path, [root]) is expected, (path, root)
        assert host_view.text_within(str(path), [str(root)]) is expected, (path, root)


def test_a_sibling_with_a_common_prefix_is_not_inside() -> None:
    assert not host_view.text_within("/home/alice2", ["/home/alice"])
    assert host_view.text_within("/home/alice/x", ["/home/alice"])
    assert host_view.text_within("/anything", ["/"])
    assert not host_view._within(Path("/tmpfoo"), Path("/tmp"))
