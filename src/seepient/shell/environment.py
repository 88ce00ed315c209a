"""Environment variables that make a program run or load another one: the program text some name
(``GIT_PAGER``, ``EDITOR``, ``LESSOPEN``), analysed as the command it is, and code others load at start
(``PYTHONSTARTUP``, ``NODE_OPTIONS``, ``GIT_CONFIG_*``), which cannot be analysed at all."""

from __future__ import annotations

from seepient.shell.options import name_set

# Each holds a command line (or a program's path) that git, less, man, ssh, sudo, rsync or the shell runs.
_PROGRAM_VARIABLES = name_set(
    "GIT_PAGER PAGER MANPAGER SYSTEMD_PAGER GH_PAGER GIT_EDITOR GIT_SEQUENCE_EDITOR EDITOR VISUAL FCEDIT "
    "SUDO_EDITOR GH_EDITOR GIT_SSH GIT_SSH_COMMAND GIT_EXTERNAL_DIFF GIT_PROXY_COMMAND GIT_ASKPASS "
    "SSH_ASKPASS SUDO_ASKPASS BROWSER LESSOPEN LESSCLOSE RSYNC_RSH RSYNC_CONNECT_PROG CVS_RSH"
)
# Each makes a program load code or settings from somewhere the line does not show.
_LOADING_VARIABLES = name_set(
    "PYTHONSTARTUP PYTHONPATH PYTHONHOME PYTHONUSERBASE PYTHONEXECUTABLE PERL5OPT PERL5LIB PERLLIB PERL5DB "
    "RUBYOPT RUBYLIB NODE_OPTIONS NODE_PATH LUA_INIT LUA_PATH LUA_CPATH GCONV_PATH JAVA_TOOL_OPTIONS "
    "_JAVA_OPTIONS JDK_JAVA_OPTIONS ZDOTDIR GIT_EXEC_PATH GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM "
    "GIT_CONFIG_PARAMETERS GIT_CONFIG_COUNT GIT_TEMPLATE_DIR"
)
_LOADING_PREFIXES = ("LD_", "DYLD_", "GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_", "LUA_INIT_")


def names_a_program(name: str) -> bool:
    """Whether the variable holds a command line some program runs (``GIT_PAGER='sh -c id' git log``)."""
    return name in _PROGRAM_VARIABLES


def program_text(name: str, value: str) -> str:
    """The command line a program-naming variable makes run: ``LESSOPEN='|cmd %s'`` runs ``cmd %s``."""
    if name in ("LESSOPEN", "LESSCLOSE"):
        return value.lstrip("|").removeprefix("-")
    return value


def loads_code(name: str) -> bool:
    """Whether the variable makes programs load code or settings the line does not show."""
    return name in _LOADING_VARIABLES or name.startswith(_LOADING_PREFIXES)


def loading_problem(name: str) -> str:
    return f"sets {name}, which makes programs load code or settings from elsewhere; it is not analysed"
