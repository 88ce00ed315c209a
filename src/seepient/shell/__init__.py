"""Shell analysis, a leaf package: what a command line runs, which files each program opens, what is dangerous.

Tools (to describe a shell call), policy (to judge it) and approval scopes (to name what a grant covers) all
read it; it knows nothing of them. Public surface: ``analyse_command`` and the facts it returns, the argv
``Word`` and its ``Operand``/``Danger``, ``split_words`` for permission rules, ``is_shell_sink``.
"""

from seepient.shell.analysis import analyse_command, split_words
from seepient.shell.facts import CommandFacts, ShellAnalysis
from seepient.shell.interpretation import Danger, Operand, Word, base_name
from seepient.shell.sinks import is_shell_sink

__all__ = [
    "CommandFacts",
    "Danger",
    "Operand",
    "ShellAnalysis",
    "Word",
    "analyse_command",
    "base_name",
    "is_shell_sink",
    "split_words",
]
