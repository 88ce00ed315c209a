"""What assigning a variable means to the walk: names a later command depends on (``PATH``, ``HOME``, arrays),
history settings that hide what runs, and commands a variable names for a program to run (``GIT_PAGER``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tree_sitter import Node

from seepient.shell.environment import loading_problem, loads_code, names_a_program, program_text
from seepient.shell.evaluation import Assignments, name_of
from seepient.shell.history import HISTORY_VARIABLES, history_danger, history_setting_hides
from seepient.shell.syntax_tree import node_text, word_chars
from seepient.shell.wrappers import SHELL_STATE_VARIABLES

if TYPE_CHECKING:
    from seepient.shell.walk import WalkState


class VariableChecks:
    """Mixed into the walker, which supplies ``state``, ``problem`` and ``nested_script``."""

    state: WalkState

    def problem(self, message: str) -> None:
        raise NotImplementedError

    def nested_script(self, text: str, *, launched: bool = False) -> None:
        raise NotImplementedError

    def check_variable(self, node: Node) -> None:
        name_node = node.child_by_field_name("name")
        value = node.child_by_field_name("value")
        text = ""
        if value is not None and value.type != "array":
            chars = word_chars(value, self.problem)
            text = None if chars is None else "".join(c for c, _ in chars)
        self.assigned(
            node_text(name_node) if name_node is not None else "",
            text,
            array=value is not None and value.type == "array",
            appended=any(child.type == "+=" for child in node.children),
        )

    def assigned(
        self,
        name: str,
        value: str | None,
        *,
        array: bool = False,
        unset: bool = False,
        appended: bool = False,
    ) -> None:
        """Check one variable the line assigns (or unsets); ``value`` is None when known only at run time."""
        base = name_of(name)
        if array or "[" in name:
            self.state.arrays.add(base)
        if base in SHELL_STATE_VARIABLES:
            self.problem(
                f"sets {base}, which changes which program later names run or how the shell reads them"
            )
        if base == "GLOBIGNORE":
            self.state.dotglob = True
        if base == "HOME":
            self.state.home_assigned = True
        if base in HISTORY_VARIABLES and history_setting_hides(base, value):
            self.state.dangers.append(history_danger(f"setting {base} stops the shell recording what runs"))
        if loads_code(base) and base not in SHELL_STATE_VARIABLES:
            self.problem(loading_problem(base))
        elif names_a_program(base) and not unset:
            # Set for one command or exported to later ones: either way a program runs what it holds.
            if value is None or appended:
                # 'X+=…' adds to a value set before ('GIT_PAGER=r; GIT_PAGER+="m -rf x"' makes 'rm -rf x').
                self.problem(f"sets {base} to a command computed at run time, which a program runs later")
                self.state.runs_unseen = True
            elif value.strip():
                self.nested_script(program_text(base, value), launched=True)

    def effects(self, found: Assignments, *, unset: bool = False) -> None:
        self.state.problems.extend(found.problems)
        self.state.arrays.update(name_of(name) for name in found.arrays)
        self.state.compound.extend(name_of(name) for name in found.compound)
        for name, value in found.names:
            self.state.sets_variables = True
            self.assigned(name, value, unset=unset)
