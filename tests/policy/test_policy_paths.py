"""The path guard as an attacker meets it: traversal, symlinks, sensitive files, self-protection, tricks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seepient.policy import PathGuard
from seepient.policy.paths import RULE_INVALID, RULE_OUTSIDE, RULE_SELF, RULE_SENSITIVE
from seepient.protocol import Decision, PathAccess, PathDenied

INSIDE, OUTSIDE = "inside", "outside"


def outcome(call, path: str) -> str:
    try:
        resolved = call(path)
    except PathDenied as denied:
        assert denied.path == path and denied.reason
        return denied.rule
    return INSIDE if resolved.relative is not None else OUTSIDE


# (path, for_read, for_write); '{home}', '{ws}', '{sh}' are filled in from the layout.
CASES = [
    ("README.md", INSIDE, INSIDE),
    ("src/../README.md", INSIDE, INSIDE),
    ("src/new/deeper/file.py", INSIDE, INSIDE),
    ("{ws}/src/app.py", INSIDE, INSIDE),
    ("./", INSIDE, INSIDE),
    ("../outside/notes.txt", OUTSIDE, RULE_OUTSIDE),
    ("src/../../outside/notes.txt", OUTSIDE, RULE_OUTSIDE),
    ("../../../../../../../../etc/passwd", OUTSIDE, RULE_SENSITIVE),
    ("/etc/passwd", OUTSIDE, RULE_SENSITIVE),
    ("/etc/hosts", OUTSIDE, RULE_SENSITIVE),
    ("/etc/shadow", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/etc/gshadow", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/etc/sudoers", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/etc/sudoers.d/90-cloud", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/etc/ssh/ssh_host_ed25519_key", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/etc/ssh/sshd_config", OUTSIDE, RULE_SENSITIVE),
    ("/usr/include/stdio.h", OUTSIDE, RULE_OUTSIDE),
    ("/tmp/scratch.txt", OUTSIDE, RULE_OUTSIDE),
    ("~/.ssh/id_rsa", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.ssh", RULE_SENSITIVE, RULE_SENSITIVE),
    ("{home}/.ssh/authorized_keys", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.aws/credentials", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.gnupg/private-keys-v1.d/x.key", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.kube/config", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.docker/config.json", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.config/gcloud/credentials.db", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.azure/accessTokens.json", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.netrc", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.git-credentials", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.pgpass", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.bashrc", OUTSIDE, RULE_OUTSIDE),
    ("~/.config/other/x", OUTSIDE, RULE_OUTSIDE),
    ("/root/.ssh/id_ed25519", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/home/alice/.ssh/id_rsa", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/home/alice/.aws/config", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/self/environ", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/self/mem", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/self/cmdline", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/thread-self/environ", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/1/environ", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/1/root/etc/shadow", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/{pid}/environ", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/cpuinfo", OUTSIDE, RULE_OUTSIDE),
    ("/var/run/docker.sock", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/run/docker.sock", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/dev/sda", RULE_SENSITIVE, RULE_SENSITIVE),
    ("{sh}/settings.json", RULE_SENSITIVE, RULE_SELF),
    ("~/.seepient/audit.log", RULE_SENSITIVE, RULE_SELF),
    (".seepient/settings.json", INSIDE, RULE_SELF),
    (".seepient/grants.json", INSIDE, RULE_SELF),
    (".seepient/hooks/pre-tool.sh", INSIDE, RULE_SELF),
    (".seepient", INSIDE, RULE_SELF),
    ("src/../.seepient/settings.json", INSIDE, RULE_SELF),
    ("nested/project/.seepient/settings.json", INSIDE, RULE_SELF),
    (".git/hooks/pre-commit", INSIDE, RULE_SENSITIVE),
    (".git/config", INSIDE, RULE_SENSITIVE),
    (".git/HEAD", INSIDE, INSIDE),
    # Case and Unicode tricks: refused everywhere (see seepient.policy.sensitive for why).
    ("~/.SSH/id_rsa", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.Aws/credentials", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.ｓｓｈ/id_rsa", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.s\u200bsh/id_rsa", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.ssh\ufeff/id_rsa", RULE_SENSITIVE, RULE_SENSITIVE),
    ("~/.ssh./id_rsa", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/ETC/SHADOW", RULE_SENSITIVE, RULE_SENSITIVE),
    ("/proc/SELF/environ", RULE_SENSITIVE, RULE_SENSITIVE),
    (".SEEPIENT/settings.json", INSIDE, RULE_SELF),
    (".Seepient\u200d/settings.json", INSIDE, RULE_SELF),
    (".seepient /settings.json", INSIDE, RULE_SELF),
    (".ｓｅｅｐｉｅｎｔ/settings.json", INSIDE, RULE_SELF),
    # Encodings are not decoded by the file system, so they are plain names inside the workspace.
    ("..%2f..%2fetc%2fpasswd", INSIDE, INSIDE),
    ("..\\..\\windows\\win.ini", INSIDE, INSIDE),
    ("....//....//etc/passwd", INSIDE, INSIDE),
    # Invalid input.
    ("", RULE_INVALID, RULE_INVALID),
    ("   ", RULE_INVALID, RULE_INVALID),
    ("a\x00b", RULE_INVALID, RULE_INVALID),
    ("README.md\x00.png", RULE_INVALID, RULE_INVALID),
    ("line\nbreak", RULE_INVALID, RULE_INVALID),
    ("a/" * 2100, RULE_INVALID, RULE_INVALID),
    ("x" * 256, RULE_INVALID, RULE_INVALID),
    ("~no-such-user-here/x", RULE_INVALID, RULE_INVALID),
]


@pytest.mark.parametrize(("raw", "for_read", "for_write"), CASES, ids=[repr(c[0])[:40] for c in CASES])
def test_guard_table(layout, raw: str, for_read: str, for_write: str) -> None:
    guard = layout.guard()
    path = raw.format(home=layout.home, ws=layout.workspace, sh=layout.seepient_home, pid=os.getpid())
    if raw.startswith("~/.seepient"):
        path = str(layout.seepient_home) + raw[len("~/.seepient") :]
    assert outcome(guard.for_read, path) == for_read
    assert outcome(guard.for_write, path) == for_write


def test_resolved_path_fields(layout) -> None:
    guard = layout.guard()
    resolved = guard.for_write("src/../src/./app.py")
    assert resolved.requested == "src/../src/./app.py"
    assert resolved.absolute == str(layout.workspace / "src" / "app.py")
    assert resolved.relative == "src/app.py"
    assert guard.for_read(".").relative == "."
    assert guard.for_read(str(layout.workspace)).relative == "."
    outside = guard.for_read("../outside/notes.txt")
    assert outside.relative is None and outside.absolute == str(layout.root / "outside" / "notes.txt")


def test_guard_satisfies_the_path_access_protocol(layout) -> None:
    access: PathAccess = layout.guard()
    assert access.for_read("README.md").relative == "README.md"


def test_workspace_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not an existing directory"):
        PathGuard(tmp_path / "missing", seepient_home=tmp_path / "sh", home=tmp_path)


def test_a_prefix_sibling_is_not_inside(layout) -> None:
    sibling = layout.root / "ws2"
    sibling.mkdir()
    guard = layout.guard()
    assert outcome(guard.for_write, str(sibling / "x")) == RULE_OUTSIDE
    assert outcome(guard.for_write, "../ws2/x") == RULE_OUTSIDE


# -- symlinks ----------------------------------------------------------------------------------------


def test_symlink_inside_pointing_outside(layout) -> None:
    (layout.workspace / "etc-link").symlink_to("/etc")
    (layout.workspace / "notes-link").symlink_to(layout.root / "outside" / "notes.txt")
    guard = layout.guard()
    assert guard.for_read("notes-link").absolute == str(layout.root / "outside" / "notes.txt")
    assert outcome(guard.for_write, "notes-link") == RULE_OUTSIDE
    assert outcome(guard.for_read, "etc-link/shadow") == RULE_SENSITIVE
    assert outcome(guard.for_write, "etc-link/hosts") == RULE_SENSITIVE


def test_symlink_to_a_secret(layout) -> None:
    (layout.workspace / "key").symlink_to(layout.home / ".ssh" / "id_rsa")
    (layout.workspace / "environ").symlink_to("/proc/self/environ")
    (layout.workspace / "sock").symlink_to("/var/run/docker.sock")
    guard = layout.guard()
    for name in ("key", "environ", "sock"):
        assert outcome(guard.for_read, name) == RULE_SENSITIVE
        assert outcome(guard.for_write, name) == RULE_SENSITIVE


def test_symlinked_parent_directory(layout) -> None:
    (layout.workspace / "out").symlink_to(layout.root / "outside")
    guard = layout.guard()
    assert outcome(guard.for_write, "out/notes.txt") == RULE_OUTSIDE
    # A file that does not exist yet resolves through its deepest existing ancestor, the symlink.
    assert outcome(guard.for_write, "out/new/deeper/file.txt") == RULE_OUTSIDE
    assert guard.for_read("out/new.txt").absolute == str(layout.root / "outside" / "new.txt")


def test_symlink_chain_and_dotdot_after_a_link(layout) -> None:
    (layout.root / "outside" / "deep").mkdir()
    (layout.workspace / "a").symlink_to("b")
    (layout.workspace / "b").symlink_to(layout.root / "outside" / "deep")
    guard = layout.guard()
    assert outcome(guard.for_write, "a/x") == RULE_OUTSIDE
    # '..' climbs from where the link leads, as the kernel does, not from the link's own directory.
    assert guard.for_read("a/../notes.txt").absolute == str(layout.root / "outside" / "notes.txt")
    assert outcome(guard.for_write, "a/../../ws/README.md") == INSIDE


def test_dangling_symlink_is_followed(layout) -> None:
    (layout.workspace / "dangling").symlink_to(layout.root / "outside" / "not-yet")
    (layout.workspace / "dangling-rc").symlink_to(layout.home / ".ssh" / "authorized_keys2")
    guard = layout.guard()
    assert outcome(guard.for_write, "dangling") == RULE_OUTSIDE
    assert outcome(guard.for_write, "dangling-rc") == RULE_SENSITIVE


def test_symlink_into_protected_state(layout) -> None:
    (layout.workspace / "cfg").symlink_to(layout.workspace / ".seepient")
    (layout.workspace / "home-cfg").symlink_to(layout.seepient_home)
    guard = layout.guard()
    assert outcome(guard.for_read, "cfg/settings.json") == INSIDE
    assert outcome(guard.for_write, "cfg/settings.json") == RULE_SELF
    assert outcome(guard.for_read, "home-cfg/settings.json") == RULE_SENSITIVE
    assert outcome(guard.for_write, "home-cfg/settings.json") == RULE_SELF


def test_protected_directory_that_is_itself_a_symlink(layout) -> None:
    (layout.workspace / "conf").mkdir()
    (layout.workspace / ".seepient" / "settings.json").unlink()
    for child in (layout.workspace / ".seepient").iterdir():
        child.rmdir()
    (layout.workspace / ".seepient").rmdir()
    (layout.workspace / ".seepient").symlink_to(layout.workspace / "conf")
    guard = layout.guard()
    # Writing the real directory behind .seepient still changes the project's settings.
    assert outcome(guard.for_write, "conf/settings.json") == RULE_SELF


def test_symlink_inside_the_workspace_stays_inside(layout) -> None:
    (layout.workspace / "lib").symlink_to(layout.workspace / "src")
    resolved = layout.guard().for_write("lib/app.py")
    assert resolved.relative == "src/app.py"


def test_symlink_loop_is_refused(layout) -> None:
    (layout.workspace / "loop1").symlink_to("loop2")
    (layout.workspace / "loop2").symlink_to("loop1")
    guard = layout.guard()
    assert outcome(guard.for_read, "loop1/x") == RULE_INVALID


def test_workspace_reached_through_a_symlink(layout) -> None:
    alias = layout.root / "alias"
    alias.symlink_to(layout.workspace)
    guard = PathGuard(alias, seepient_home=layout.seepient_home, home=layout.home)
    assert guard.workspace == layout.workspace
    assert guard.for_write(str(alias / "README.md")).relative == "README.md"
    assert outcome(guard.for_write, str(alias / ".seepient" / "settings.json")) == RULE_SELF


def test_cross_script_look_alike_cannot_reach_the_real_directory(layout) -> None:
    # A Cyrillic 'ѕ' is a different name on every common file system: it is not refused, and it does
    # not resolve to the real ~/.ssh either.
    resolved = layout.guard().for_read("~/.ѕsh/id_rsa")
    assert resolved.absolute == str(layout.home / ".ѕsh" / "id_rsa")
    assert not Path(resolved.absolute).exists()


# -- shell operands ----------------------------------------------------------------------------------


def test_shell_paths_allow_sinks_and_opt_in_scratch(layout) -> None:
    ws = layout.workspace
    with pytest.raises(PathDenied) as denied:
        layout.guard().check_shell_path("/tmp/build.log", cwd=ws, write=True)
    assert denied.value.rule == RULE_OUTSIDE
    guard = PathGuard(ws, seepient_home=layout.seepient_home, home=layout.home, shell_scratch=[Path("/tmp")])
    assert guard.check_shell_path("/dev/null", cwd=ws, write=True).absolute == "/dev/null"
    assert guard.check_shell_path("/dev/stdout", cwd=ws, write=True).absolute == "/dev/stdout"
    assert guard.check_shell_path("/dev/stdin", cwd=ws, write=False).absolute == "/dev/stdin"
    assert guard.check_shell_path("/dev/fd/3", cwd=ws, write=True).absolute == "/dev/fd/3"
    with pytest.raises(PathDenied):
        guard.check_shell_path(
            "/dev/fd/3/environ", cwd=ws, write=False
        )  # not a descriptor: /proc/self/fd/3/...
    assert guard.check_shell_path("/tmp/build.log", cwd=ws, write=True).relative is None
    with pytest.raises(PathDenied) as denied:
        guard.check_shell_path("..", cwd=ws, write=True)  # a directory holding the workspace is never scratch
    assert denied.value.rule == RULE_OUTSIDE
    assert guard.check_shell_path("out.txt", cwd=ws / "src", write=True).relative == "src/out.txt"
    with pytest.raises(PathDenied) as denied:
        guard.check_shell_path("~/.bashrc", cwd=ws, write=True)  # this home lives under /tmp: not scratch
    assert denied.value.rule == RULE_OUTSIDE
    with pytest.raises(PathDenied) as denied:
        guard.check_shell_path("/dev/sda", cwd=ws, write=True)
    assert denied.value.rule == RULE_SENSITIVE
    with pytest.raises(PathDenied) as denied:
        guard.check_shell_path(str(layout.seepient_home / "x"), cwd=ws, write=True)
    assert denied.value.rule == RULE_SELF
    with pytest.raises(PathDenied) as denied:
        guard.check_shell_path("../.ssh/id_rsa", cwd=layout.home / ".aws", write=False)
    assert denied.value.rule == RULE_SENSITIVE


@pytest.mark.parametrize(
    ("pattern", "write", "dotglob", "expected"),
    [
        ("~/.s*/id_rsa", False, False, RULE_SENSITIVE),
        ("~/.ss?/*", False, False, RULE_SENSITIVE),
        ("~/.[s]sh/id_rsa", False, False, RULE_SENSITIVE),
        ("/proc/*/environ", False, False, RULE_SENSITIVE),
        ("/proc/*/task/1/envir?n", False, False, RULE_SENSITIVE),
        ("/etc/sha*", False, False, RULE_SENSITIVE),
        ("~/*", False, False, "ok"),
        ("~/.*", False, False, RULE_SENSITIVE),
        ("*.md", True, False, "ok"),
        ("*", True, False, "ok"),
        ("*", True, True, RULE_SELF),
        (".*", True, False, RULE_SELF),
        (".s*/*", True, False, RULE_SELF),
        ("src/*", True, False, "ok"),
        ("../*", True, False, RULE_OUTSIDE),
        ("*/../x", True, False, RULE_INVALID),
    ],
)
def test_shell_globs(layout, pattern: str, write: bool, dotglob: bool, expected: str) -> None:
    guard = layout.guard()
    try:
        results = guard.check_shell_glob(pattern, cwd=layout.workspace, write=write, dotglob=dotglob)
    except PathDenied as denied:
        assert denied.rule == expected
        return
    assert expected == "ok"
    assert results


def test_glob_through_a_symlink_to_a_secret_is_caught_on_disk(layout) -> None:
    (layout.workspace / "keys").symlink_to(layout.home / ".ssh")
    with pytest.raises(PathDenied) as denied:
        layout.guard().check_shell_glob("k*/id_rsa", cwd=layout.workspace, write=False)
    assert denied.value.rule == RULE_SENSITIVE


def test_recursive_reach(layout) -> None:
    guard = layout.guard()
    assert guard.sensitive_below(str(layout.home)) is not None
    assert guard.sensitive_below("/") is not None
    assert guard.sensitive_below(str(layout.workspace)) is None
    assert guard.protected_below(str(layout.workspace)) is not None
    assert guard.protected_below(str(layout.workspace / "src")) is None


def test_user_skills_are_readable_but_the_rest_of_seepient_home_is_not(tmp_path):
    from seepient.policy.paths import PathGuard
    from seepient.protocol import PathDenied

    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "seepient-home"
    skill = home / "skills" / "deploy"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: deploy\ndescription: d\n---\n")
    (home / "AGENTS.md").write_text("rules")
    (home / "audit.log").write_text("secret-ish")
    (skill / "leak").symlink_to(home / "audit.log")
    guard = PathGuard(workspace, seepient_home=home, home=tmp_path)
    assert guard.for_read(str(skill / "SKILL.md")).absolute == str(skill / "SKILL.md")
    assert guard.for_read(str(home / "AGENTS.md"))
    for refused in (home / "audit.log", skill / "leak", home / "skills" / ".." / "audit.log"):
        with pytest.raises(PathDenied):
            guard.for_read(str(refused))
    with pytest.raises(PathDenied):
        guard.for_write(str(skill / "SKILL.md"))


# -- what the jail hides, read on the host (red team, after issue 16) ------------------------------------------
# The jail replaces /run with an empty tmpfs and gets its own minimal /dev, so a jailed interpreter never saw
# these; but read_file and grep read on the host, and the path guard only knew the table's entries. In
# autonomous-trusted mode they read a Kubernetes service-account token, cloud-init user data, the user's
# session sockets' folder, or another terminal's input (the approval answer a person was typing) unasked.

HOST_ONLY_SECRETS = [
    "/run/secrets/kubernetes.io/serviceaccount/token",
    "/var/run/secrets/kubernetes.io/serviceaccount/token",
    "/run/secrets/db_password",
    "/run/user/1000/keyring/control",
    "/var/lib/cloud/instance/user-data.txt",
    "/run/cloud-init/instance-data-sensitive.json",
    "/dev/tty",
    "/dev/tty1",
    "/dev/ttyS0",
    "/dev/pts/0",
    "/dev/console",
    "/dev/vcs1",
    "/dev/vcsa",
    "/dev/input/event0",
]


@pytest.mark.parametrize("path", HOST_ONLY_SECRETS)
@pytest.mark.parametrize("mode", ["ask-untrusted", "autonomous-trusted"])
def test_what_the_jail_hides_is_refused_to_the_host_side_readers(
    layout, actions, mode: str, path: str
) -> None:
    engine = layout.engine(mode, allow=["Read(//**)"])
    for operation in ("read_file", "grep"):
        verdict = engine.evaluate(actions.read(path, operation=operation))
        assert (verdict.decision, verdict.rule) == (Decision.DENY, "path_guard:sensitive"), (path, verdict)


def test_a_shell_line_may_still_write_to_and_read_from_its_own_terminal(layout, actions) -> None:
    engine = layout.engine("always-ask", allow=["Shell(echo:*)", "Shell(read:*)"])
    for line in ("echo progress > /dev/tty", "read answer < /dev/tty"):
        assert engine.evaluate(actions.shell(line)).decision is Decision.ALLOW, line
