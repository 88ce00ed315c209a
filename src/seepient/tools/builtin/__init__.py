"""The built-in tools: reading, writing and editing files, finding files and text, and running commands."""

from seepient.tools.builtin.edit import EditFileInput, EditFileTool, WriteFileInput, WriteFileTool
from seepient.tools.builtin.read import ReadFileInput, ReadFileTool
from seepient.tools.builtin.search import GlobInput, GlobTool, GrepInput, GrepTool
from seepient.tools.builtin.shell import ShellInput, ShellTool

BUILTIN_TOOL_TYPES = (ReadFileTool, WriteFileTool, EditFileTool, GlobTool, GrepTool, ShellTool)

__all__ = [
    "BUILTIN_TOOL_TYPES",
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
    "WriteFileInput",
    "WriteFileTool",
]
