"""The small known-safe read-only set: programs that only read, called with nothing that writes or runs code."""

from __future__ import annotations

from seepient.shell.find import FIND_EXEC, FIND_FILE_WRITES
from seepient.shell.git import git_is_read_only
from seepient.shell.interpretation import Interpretation, base_name
from seepient.shell.interpreters import SHELLS
from seepient.shell.sed import sed_is_read_only

_SAFE_PLAIN = frozenset(
    "ls cat head tail wc grep egrep fgrep pwd echo printf true false : test [ [[ which type whoami id uname "
    "basename dirname realpath readlink file stat du df cut tr nl tac rev column seq expr md5sum sha1sum "
    "sha256sum sha512sum cksum b2sum od hexdump strings diff cmp comm paste join fold numfmt cd nproc".split()
)
_SAFE_SYSTEM_DIRS = ("/bin/", "/usr/bin/", "/usr/local/bin/")


def is_known_safe(interpretation: Interpretation) -> bool:
    """True for a program from the small read-only set, called without wrappers and with nothing that writes."""
    if interpretation.wrappers or interpretation.assignments or interpretation.nested:
        return False
    if interpretation.scripts:
        # 'bash -c SCRIPT' only runs its script, whose commands are analysed and judged one by one.
        argv = interpretation.effective
        return (
            len(interpretation.scripts) == 1
            and interpretation.scripts[0].static
            and base_name(argv[0]) in SHELLS
            and "/" not in argv[0].text
            and not interpretation.operands
        )
    if any(op.write for op in interpretation.operands) or interpretation.operands_from_stdin:
        return False
    argv = interpretation.effective
    if not argv or not all(w.static for w in argv):
        return False
    program = argv[0].text
    if "/" in program:
        if not program.startswith(_SAFE_SYSTEM_DIRS):
            return False  # './ls' or 'bin/cat' may be anything the model wrote
        program = program.rsplit("/", 1)[-1]
    texts = [w.text for w in argv[1:]]
    if program in _SAFE_PLAIN:
        return True
    if program == "find":
        return not any(
            t in FIND_EXEC or t == "-delete" or t in FIND_FILE_WRITES or t == "-fprintf" for t in texts
        )
    if program == "rg":
        return not any(
            t in ("-z", "--search-zip", "--pre", "--hostname-bin")
            or t.startswith(("--pre=", "--hostname-bin="))
            for t in texts
        )
    if program == "sed":
        return sed_is_read_only(argv[1:])
    if program == "sort":
        return not any(
            t in ("-o", "--output", "--compress-program")
            or t.startswith(("--output=", "-o", "--compress-program"))
            for t in texts
        )
    if program in ("uniq", "xxd"):
        return len([t for t in texts if not t.startswith("-")]) <= 1 and not any(
            t in ("-r", "-revert") for t in texts
        )
    if program == "base64":
        return not any(t in ("-o", "--output") or t.startswith(("--output=", "-o")) for t in texts)
    if program == "date":
        return not any(t in ("-s", "--set") or t.startswith("--set") for t in texts)
    if program == "hostname":
        return not texts
    if program == "git":
        return git_is_read_only(texts)
    if program == "jq":
        return True
    if program == "command":
        # 'command -v NAME' and '-V' only say what a name would run; the wrapper analysis saw no program after it.
        options = [t for t in texts if t.startswith("-")]
        return (
            bool(options)
            and set(options) <= {"-p", "-v", "-V", "-pv", "-pV"}
            and any("v" in t or "V" in t for t in options)
        )
    if program == "tree":
        return not any(t == "-o" or t.startswith("-o") for t in texts)
    return False
