"""A ``seepient`` that has already imported itself and forks one real CLI run per request, for tests that
start a hundred runs (the SIGKILL loop): each child runs ``seepient.surfaces.cli.entry.main`` exactly as the
console script does, in its own session and process group, with its own argv, environment, folder and
output files; only the second of import time each fresh interpreter would spend is saved.

Protocol on stdin/stdout, one JSON object per line: ``{"argv", "cwd", "env", "stdout", "stderr"}`` answers
``{"pid", "t"}`` (the fork's wall-clock time); ``{"wait": pid}`` answers ``{"status": ...}`` once it ended.
Run it as ``python -m tests.e2e.cli_zygote`` from the repository.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback

# What `seepient run` imports on its way to the first turn, imported once here instead of in every child.
import seepient.approval.terminal  # noqa: F401
import seepient.runtime  # noqa: F401
import seepient.surfaces.cli.app  # noqa: F401
import seepient.surfaces.cli.render  # noqa: F401
from seepient.surfaces.cli.entry import main


def _redirect(fd: int, path: str, flags: int) -> None:
    target = os.open(path, flags, 0o600)
    os.dup2(target, fd)
    os.close(target)


def _child(request: dict) -> int:
    os.setsid()
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    _redirect(0, os.devnull, os.O_RDONLY)
    _redirect(1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    _redirect(2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    sys.argv = ["seepient", *request["argv"]]
    try:
        main()
    except SystemExit as exit_:
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:
        traceback.print_exc()
        return 70
    return 0


def _reply(answer: dict) -> None:
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()


def serve() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "wait" in request:
            _, status = os.waitpid(request["wait"], 0)
            _reply({"status": status})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                code = _child(request)
            finally:
                try:
                    sys.stdout.flush()
                    sys.stderr.flush()
                finally:
                    os._exit(code)
        _reply({"pid": pid, "t": time.time()})


if __name__ == "__main__":
    serve()
