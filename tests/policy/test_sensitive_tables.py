"""The sensitive-location tables match one expression per first path component; the answer must be the one a
single alternation of every location gives (the first location that matches), for the real tables and for
generated ones with wildcards in any component, the first included."""

from __future__ import annotations

import random
import re
from pathlib import Path

from seepient.policy import sensitive
from seepient.policy.sensitive import HOME_RELATIVE, SensitiveLocation, build_locations, path_keys


def _one_alternation(locations: list[SensitiveLocation]) -> re.Pattern[str]:
    """The reference: every location in one alternation, the first branch that fullmatches wins."""
    branches = []
    for index, location in enumerate(locations):
        body = "/".join(sensitive._component_pattern(part) for part in location.parts)
        branches.append(f"(?P<l{index}>/{body}{'(?:/.*)?' if location.subtree else ''})")
    return re.compile("(?:" + "|".join(branches) + ")", re.DOTALL)


def _keys_near(locations: list[SensitiveLocation], rnd: random.Random) -> list[str]:
    """Keys at, below, above and beside the locations (wildcards filled in), and unrelated ones."""
    keys = ["/", "/x", "/etc", "/tmp/ws", "/home/a/.ssh/id_rsa"]
    for location in locations:
        parts = [p.replace("*", rnd.choice(["", "a", "ab.c"])).replace("?", "q") for p in location.parts]
        keys.append("/" + "/".join(parts))
        keys.append("/" + "/".join([*parts, "child", "deeper"]))
        if parts:
            keys.append("/" + "/".join(parts[:-1]))
            keys.append("/" + "/".join([*parts[:-1], parts[-1] + "x"]))
    return keys


def _check(locations: list[SensitiveLocation], keys: list[str]) -> None:
    table, reference = sensitive._Table(locations), _one_alternation(locations)
    for key in keys:
        found = reference.fullmatch(key)
        expected = locations[int(found.lastgroup[1:])] if found is not None and found.lastgroup else None
        assert table.match(key) is expected, key


def test_the_real_tables_answer_as_one_alternation(tmp_path: Path) -> None:
    rnd = random.Random(7)
    found, protected = build_locations(
        home=tmp_path / "home", seepient_home=tmp_path / "home" / ".seepient", workspace=tmp_path / "ws"
    )
    tables = [list(found.locations), list(protected.locations), list(HOME_RELATIVE)]
    for locations in tables:
        _check(locations, _keys_near(locations, rnd))


def test_generated_tables_with_wildcards_anywhere_answer_as_one_alternation() -> None:
    rnd = random.Random(20261201)
    words = ["etc", "tmp", "a", "ab", "*", "a*", "?b", "*.key", ".ssh", "x"]
    for _ in range(300):
        locations = [
            SensitiveLocation(
                tuple(rnd.choice(words) for _ in range(rnd.randint(0, 3))),
                "reason",
                subtree=rnd.random() < 0.6,
            )
            for _ in range(rnd.randint(1, 12))
        ]
        _check(locations, _keys_near(locations, rnd))


def test_only_the_components_met_are_compiled(tmp_path: Path) -> None:
    found, _ = build_locations(
        home=tmp_path / "home", seepient_home=tmp_path / "home" / ".seepient", workspace=tmp_path / "ws"
    )
    table = sensitive._Table(list(found.locations))
    table.match("/" + "/".join(path_keys(str(tmp_path / "ws" / "src"))))
    assert set(table._patterns) <= {path_keys(str(tmp_path))[0], sensitive._WILD}
