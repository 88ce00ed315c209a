"""Writing "approve always for this project" rules: exact file contents, other keys kept, bad files refused
untouched, and crash safety shown by SIGKILLing a real writer before each step of its write."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from seepient.approval.project_settings import ProjectSettingsError, add_allow_rule
from tests.conftest import REPO


@pytest.fixture
def settings(tmp_path: Path) -> Path:
    return tmp_path / "ws" / ".seepient" / "settings.json"


def test_creates_the_directory_and_file_when_missing(settings):
    assert add_allow_rule(settings, "Shell(git commit:*)") is True
    assert (
        settings.read_text()
        == '{\n  "permissions": {\n    "allow": [\n      "Shell(git commit:*)"\n    ]\n  }\n}\n'
    )
    # The user's own state: readable by the user alone, folders included.
    assert oct(settings.stat().st_mode & 0o777) == oct(0o600)
    assert oct(settings.parent.stat().st_mode & 0o777) == oct(0o700)


def test_appends_and_keeps_every_other_key_in_order(settings):
    settings.parent.mkdir(parents=True)
    original = {
        "models": {"default": "replay:x.yaml"},
        "permissions": {"deny": ["Read(.env)"], "allow": ["Edit(/docs/**)"], "mode": "auto"},
        "zzz": [1, 2.5, None, "ünï"],
    }
    settings.write_text(json.dumps(original))
    os.chmod(settings, 0o600)
    assert add_allow_rule(settings, "Shell(make:*)") is True
    written = json.loads(settings.read_text())
    assert list(written) == ["models", "permissions", "zzz"]
    assert written["permissions"] == {
        "deny": ["Read(.env)"],
        "allow": ["Edit(/docs/**)", "Shell(make:*)"],
        "mode": "auto",
    }
    assert written["models"] == original["models"] and written["zzz"] == original["zzz"]
    assert oct(settings.stat().st_mode & 0o777) == oct(0o600)


def test_a_rule_already_there_is_not_written_twice(settings):
    settings.parent.mkdir(parents=True)
    settings.write_text('{"permissions": {"allow": ["Shell(make:*)"]}}')
    before = settings.stat().st_ino
    assert add_allow_rule(settings, "Shell(make:*)") is False
    assert settings.read_text() == '{"permissions": {"allow": ["Shell(make:*)"]}}'
    assert settings.stat().st_ino == before


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"permissions": ', "invalid JSON"),
        ("[1, 2]", "JSON object"),
        ('{"permissions": ["Shell(x)"]}', "'permissions' must be an object"),
        ('{"permissions": {"allow": "Shell(x)"}}', "'permissions.allow' must be a list"),
    ],
)
def test_a_file_that_is_not_usable_settings_is_refused_and_left_alone(settings, content, problem):
    settings.parent.mkdir(parents=True)
    settings.write_text(content)
    with pytest.raises(ProjectSettingsError, match=problem) as caught:
        add_allow_rule(settings, "Shell(make:*)")
    assert str(settings) in str(caught.value)
    assert settings.read_text() == content
    assert sorted(os.listdir(settings.parent)) == ["settings.json"]


def test_an_invalid_rule_is_refused_before_anything_is_written(settings):
    with pytest.raises(ProjectSettingsError, match="':\\*' may only end"):
        add_allow_rule(settings, "Shell(a:* b)")
    assert not settings.parent.exists()


def test_symlinked_settings_are_refused_and_their_target_untouched(settings, tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    settings.parent.mkdir(parents=True)
    settings.symlink_to(target)
    with pytest.raises(ProjectSettingsError, match="not a regular file"):
        add_allow_rule(settings, "Shell(make:*)")
    assert target.read_text() == "{}" and settings.is_symlink()

    linked_dir = tmp_path / "ws2" / ".seepient"
    linked_dir.parent.mkdir()
    linked_dir.symlink_to(tmp_path)
    with pytest.raises(ProjectSettingsError, match="symbolic link"):
        add_allow_rule(linked_dir / "settings.json", "Shell(make:*)")
    assert not (tmp_path / "settings.json").exists()


def test_a_failed_rename_leaves_the_old_file_and_no_temporary(settings, monkeypatch):
    settings.parent.mkdir(parents=True)
    settings.write_text('{"a": 1}')

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(ProjectSettingsError, match="No space left"):
        add_allow_rule(settings, "Shell(make:*)")
    assert settings.read_text() == '{"a": 1}'
    assert sorted(os.listdir(settings.parent)) == ["settings.json"]


_KILLED_WRITER = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from seepient.approval.project_settings import add_allow_rule

    kill_before = int(sys.argv[2])
    calls = 0

    def step(real):
        def wrapped(*args, **kwargs):
            global calls
            calls += 1
            if calls == kill_before:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)
        return wrapped

    for name in ("fchmod", "write", "fsync", "replace"):
        setattr(os, name, step(getattr(os, name)))
    add_allow_rule(Path(sys.argv[1]), "Shell(make:*)")
    print(calls)
    """
)


def test_a_crash_before_any_step_leaves_the_old_settings_or_the_new_ones_whole(settings):
    # The write is fchmod, write, fsync (temp file), rename, fsync (directory): kill before each, then let
    # one run finish. After every kill the file is byte for byte the old settings or the complete new ones.
    settings.parent.mkdir(parents=True)
    old = '{"keep": {"me": true}, "permissions": {"allow": ["Read(docs/**)"]}}'
    outcomes = []
    step = 1
    while True:
        settings.write_text(old)
        proc = subprocess.run(
            [sys.executable, "-c", _KILLED_WRITER, str(settings), str(step)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )
        content = settings.read_text()
        if proc.returncode == 0:
            steps = int(proc.stdout)
            break
        assert proc.returncode == -signal.SIGKILL, proc.stderr
        if content == old:
            outcomes.append("old")
        else:
            assert json.loads(content) == {
                "keep": {"me": True},
                "permissions": {"allow": ["Read(docs/**)", "Shell(make:*)"]},
            }
            outcomes.append("new")
        step += 1
    assert steps == len(outcomes) == 5
    assert outcomes == ["old", "old", "old", "old", "new"]  # only the rename makes the new file visible
    leftovers = [name for name in os.listdir(settings.parent) if name != "settings.json"]
    assert all(name.startswith(".settings.json.") and name.endswith(".tmp") for name in leftovers)
    # A temporary left by a killed writer never gets in the way of the next one.
    assert add_allow_rule(settings, "Shell(make test:*)") is True


def test_two_processes_adding_rules_at_once_lose_none(settings):
    settings.parent.mkdir(parents=True)
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path
        from seepient.approval.project_settings import add_allow_rule
        for i in range(25):
            add_allow_rule(Path(sys.argv[1]), f"Shell(tool-{sys.argv[2]}-{i}:*)")
        """
    )
    writers = [
        subprocess.Popen([sys.executable, "-c", script, str(settings), name], cwd=REPO) for name in ("a", "b")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    allow = json.loads(settings.read_text())["permissions"]["allow"]
    assert sorted(allow) == sorted(f"Shell(tool-{n}-{i}:*)" for n in ("a", "b") for i in range(25))
