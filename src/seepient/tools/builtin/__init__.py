"""The built-in tools: reading, writing and editing files, finding files and text, and running commands."""

from seepient.tools.builtin.apply_patch import ApplyPatchInput, ApplyPatchTool
from seepient.tools.builtin.edit import EditFileInput, EditFileTool, WriteFileInput, WriteFileTool
from seepient.tools.builtin.notebook import (
    NotebookEditInput,
    NotebookEditTool,
    NotebookReadInput,
    NotebookReadTool,
)
from seepient.tools.builtin.read import ReadFileInput, ReadFileTool
from seepient.tools.builtin.search import GlobInput, GlobTool, GrepInput, GrepTool
from seepient.tools.builtin.shell import ShellInput, ShellTool
from seepient.tools.builtin.todo import TodoWriteInput, TodoWriteTool

BUILTIN_TOOL_TYPES = (
    ReadFileTool,
    WriteFileTool,
    EditFileTool,
    GlobTool,
    GrepTool,
    ShellTool,
    TodoWriteTool,
    ApplyPatchTool,
    NotebookReadTool,
    NotebookEditTool,
)

__all__ = [
    "BUILTIN_TOOL_TYPES",
    "ApplyPatchInput",
    "ApplyPatchTool",
    "NotebookEditInput",
    "NotebookEditTool",
    "NotebookReadInput",
    "NotebookReadTool",
    "EditFileInput",
    "EditFileTool",
    "GlobInput",
    "GlobTool",
    "GrepInput",
    "GrepTool",
    "ReadFileInput",
    "ReadFileTool",
    "ShellInput",
    "ShellTool",
    "TodoWriteInput",
    "TodoWriteTool",
    "WriteFileInput",
    "WriteFileTool",
]
