"""Execution has one verb: every payload the protocol knows is handled by each backend's table or named as not
executed, and nothing but a cleared ``ApprovedAction`` reaches a handler. The attacks hand the local executor,
with real bubblewrap, a command that would leave a file behind in every form that is not an approved action."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, get_args

import pytest

from seepient.execution.docker_worker import DockerWorkerExecutor
from seepient.execution.local import LocalExecutor
from seepient.protocol import (
    ActionPayload,
    AgentTask,
    ApprovalDecision,
    ApprovalResponse,
    ApprovedAction,
    ReadAction,
    SessionStateChange,
    ShellCommand,
    UnsupportedAction,
    Verdict,
)
from seepient.protocol.actions import McpCall, McpServerStart
from seepient.protocol.executor import NOT_EXECUTED
from tests.approved import approve, approved
from tests.conftest import REPO

PAYLOADS = frozenset(get_args(get_args(ActionPayload)[0]))
BACKENDS = [LocalExecutor, DockerWorkerExecutor]

NOT_EXECUTED_SAMPLES = [
    ReadAction(operation="read_file", paths=("/etc/passwd",)),
    AgentTask(task="t", tools=("shell",), mode="ask", workspace="/w", depth=1, parent_session_id="ses_p"),
    McpCall(server="s", tool="t"),
    McpServerStart(server="s", transport="stdio", source="project", command="sh", args=("-c", "touch x")),
    SessionStateChange(key="todos", value=[]),
]


@pytest.mark.parametrize("backend", BACKENDS, ids=lambda b: b.__name__)
def test_every_payload_has_a_handler_or_is_named_as_not_executed(backend: Any) -> None:
    handled = set(backend.HANDLERS)
    assert handled | set(NOT_EXECUTED) == PAYLOADS, "a payload without a handler (or a stale one)"
    assert not handled & set(NOT_EXECUTED)


def test_the_worker_backend_decides_every_payload_the_local_backend_runs() -> None:
    """What runs locally is either sent, kept on the control plane or refused by name in worker mode."""
    assert set(DockerWorkerExecutor.HANDLERS) == set(LocalExecutor.HANDLERS)


def test_the_samples_cover_every_payload_no_executor_runs() -> None:
    assert {type(sample) for sample in NOT_EXECUTED_SAMPLES} == set(NOT_EXECUTED)


@pytest.mark.parametrize("payload", NOT_EXECUTED_SAMPLES, ids=lambda p: type(p).__name__)
async def test_a_payload_no_executor_runs_is_refused_saying_what_carries_it_out(
    executor: LocalExecutor, workspace: Path, payload: Any
) -> None:
    with pytest.raises(UnsupportedAction, match=NOT_EXECUTED[type(payload)]):
        await executor.execute(approved(payload))
    assert list(workspace.iterdir()) == []


def _touch(workspace: Path) -> ShellCommand:
    return ShellCommand(command="touch pwned", cwd=str(workspace), timeout_ms=10_000)


class _LooksApproved:
    """Duck-typed like an approved action, and claiming to be cleared."""

    def __init__(self, payload: ShellCommand) -> None:
        self.payload = payload
        self.tool = "shell"
        self.session_id = "ses_test"

    def why_not_cleared(self) -> None:
        return None


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda command: approved(command).draft, id="the-draft-itself"),
        pytest.param(lambda command: command, id="a-bare-payload"),
        pytest.param(lambda command: approved(command).model_dump(), id="a-serialised-approval"),
        pytest.param(lambda command: _LooksApproved(command), id="duck-typed"),
    ],
)
async def test_only_an_approved_action_runs(executor: LocalExecutor, workspace: Path, forge: Any) -> None:
    with pytest.raises(TypeError, match="approved actions only"):
        await executor.execute(forge(_touch(workspace)))
    assert not (workspace / "pwned").exists()


async def test_a_copy_forged_past_validation_does_not_run(executor: LocalExecutor, workspace: Path) -> None:
    """``model_copy`` and ``model_construct`` skip validation; the executor asks again before any handler."""
    harmless = approved(ShellCommand(command="true", cwd=str(workspace)))
    asked = ApprovedAction(
        draft=harmless.draft,
        verdict=Verdict.ask("mode:ask"),
        approval=ApprovalResponse(decision=ApprovalDecision.APPROVE_ONCE, digest=harmless.digest),
    )
    forgeries = [
        asked.model_copy(update={"draft": approved(_touch(workspace)).draft}),
        asked.model_copy(
            update={
                "draft": approved(_touch(workspace)).draft,
                "approval": ApprovalResponse(decision=ApprovalDecision.APPROVE_ONCE, digest=harmless.digest),
            }
        ),
        harmless.model_copy(
            update={"draft": approved(_touch(workspace)).draft, "verdict": Verdict.deny("deny")}
        ),
        ApprovedAction.model_construct(
            draft=approved(_touch(workspace)).draft, verdict=Verdict.ask("mode:ask")
        ),
        ApprovedAction.model_construct(
            draft=approved(_touch(workspace)).draft,
            verdict=Verdict.ask("mode:ask"),
            approval=ApprovalResponse(
                decision=ApprovalDecision.REJECT, digest=approved(_touch(workspace)).digest
            ),
        ),
    ]
    for forged in forgeries:
        with pytest.raises(PermissionError):
            await executor.execute(forged)
    assert not (workspace / "pwned").exists()
    # The same command, approved as itself, runs: the refusals above are about the form, not the command.
    assert (await executor.execute(approve(approved(_touch(workspace)).draft))).exit_code == 0
    assert (workspace / "pwned").exists()


def test_only_the_pipeline_makes_approved_actions() -> None:
    """The single hand-off: no other module of Seepient builds one (tests do, to drive executors directly)."""
    makers = []
    for path in sorted((REPO / "src" / "seepient").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            owner = func.value if isinstance(func, ast.Attribute) else None
            if name == "ApprovedAction" or (
                isinstance(owner, ast.Name) and owner.id == "ApprovedAction" and name.startswith("model_")
            ):
                makers.append(path.relative_to(REPO / "src").as_posix())
    assert makers == ["seepient/runtime/pipeline.py"]
