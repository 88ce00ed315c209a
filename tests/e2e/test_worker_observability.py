"""The real scheduler observed: the trace crosses the dispatch (a real ``seepient run`` in worker mode and the
scheduler both export to one local collector, and the scheduler's spans sit under the control plane's dispatch
span, linked by the W3C ``traceparent`` header alone; a forged header grants nothing), its ``/metrics`` page
counts dispatches and refusals, and its JSON log lines carry the trace ids."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.conftest import BIN
from tests.scheduler.worker_env import (
    WorkerDeployment,
    free_port,
    make_deployment,
    no_container_left_behind_fixture,  # noqa: F401 - registers the session fixture
    worker_image_fixture,  # noqa: F401 - registers the session fixture
)
from tests.support.otlp_receiver import OtlpReceiver, children
from tests.support.scripts import write_script

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_container_left_behind")]


@pytest.fixture(scope="module")
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as started:
        yield started


@pytest.fixture(scope="module")
def traced_deployment(
    tmp_path_factory: pytest.TempPathFactory, worker_image: str, receiver: OtlpReceiver
) -> Iterator[WorkerDeployment]:
    deployed = make_deployment(tmp_path_factory.mktemp("traced"))
    config_path = deployed.directory / "scheduler.json"
    config = json.loads(config_path.read_text())
    config["metricsListen"] = {"host": "127.0.0.1", "port": free_port(besides={config["listen"]["port"]})}
    config["logFormat"] = "json"
    config_path.write_text(json.dumps(config))
    deployed.start(env={"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"})
    yield deployed
    deployed.stop()


def test_the_schedulers_spans_continue_the_turns_trace(
    traced_deployment: WorkerDeployment, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    script = write_script(
        tmp_path / "script.yaml",
        [{"tool_calls": [{"name": "shell", "arguments": {"command": "echo traced"}}]}, {"text": "Done."}],
    )
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "SEEPIENT_HOME": str(tmp_path / "seepient-home"),
        "LANG": "C.UTF-8",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
    }
    dispatches_before = sum(1 for s in receiver.spans() if s.name == "seepient.scheduler.dispatch")
    proc = subprocess.run(
        [
            str(BIN / "seepient"),
            *("run", "go", "-y", "--model", f"replay:{script}"),
            *("--workspace", str(traced_deployment.workspace)),
            *("--config", str(traced_deployment.directory / "control-plane.json")),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    # The scheduler's dispatch span holds its container span and ends after it, so it may reach the receiver
    # in a later export batch: waiting for the container alone raced it.
    spans = receiver.wait_for("seepient.scheduler.dispatch", count=dispatches_before + 1)
    turn = next(s for s in spans if s.name == "seepient.turn")
    sent = next(s for s in spans if s.name == "seepient.worker.dispatch")
    execution = next(s for s in spans if s.name == "seepient.execution")
    assert execution.attributes["seepient.execution.backend"] == "worker"
    assert sent.parent_id == execution.span_id and sent.trace_id == turn.trace_id
    served = next(s for s in spans if s.name == "seepient.scheduler.dispatch")
    assert served.service == "seepient-scheduler" and served.service != turn.service
    assert served.trace_id == turn.trace_id and served.parent_id == sent.span_id
    assert served.attributes["seepient.worker.dispatch_id"] == sent.attributes["seepient.worker.dispatch_id"]
    container = children(spans, served)
    assert [s.name for s in container] == ["seepient.scheduler.container"]
    assert container[0].attributes["seepient.execution.exit_code"] == 0

    lines = [json.loads(line) for line in traced_deployment.stderr_path.read_text().splitlines()]
    accepted = next(line for line in lines if line["event"] == "dispatch_accepted")
    assert accepted["dispatch_id"] == sent.attributes["seepient.worker.dispatch_id"]
    assert accepted["trace_id"] == turn.trace_id and accepted["span_id"] == served.span_id
    assert any(line["event"] == "listening" for line in lines)


def test_a_forged_traceparent_is_only_a_label(traced_deployment: WorkerDeployment) -> None:
    # A dispatch refused without the header is refused with any header; one accepted runs the same either way.

    forged = "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"
    dispatch = traced_deployment.dispatch("echo labelled")
    body = dispatch.model_dump_json()
    with httpx2.Client(verify=traced_deployment.ssl_context(), trust_env=False, timeout=60) as client:
        headers = {"content-type": "application/json", "traceparent": forged}
        first = client.post(traced_deployment.endpoint + "/v1/dispatch", content=body, headers=headers)
        assert first.status_code == 200, first.text
        assert json.loads(first.content)["stdout"] == "labelled\n"
        replay = client.post(traced_deployment.endpoint + "/v1/dispatch", content=body, headers=headers)
        assert replay.status_code == 409
        garbage = {"content-type": "application/json", "traceparent": "not-a-trace"}
        unsigned = json.loads(body) | {"signature": "AAAA"}
        refused = client.post(
            traced_deployment.endpoint + "/v1/dispatch", content=json.dumps(unsigned), headers=garbage
        )
        assert refused.status_code in (403, 422)


def _scrape(deployment: WorkerDeployment) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:

    port = json.loads((deployment.directory / "scheduler.json").read_text())["metricsListen"]["port"]
    response = httpx2.get(f"http://127.0.0.1:{port}/metrics", trust_env=False, timeout=10)
    assert response.status_code == 200
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    }


def test_the_metrics_page_counts_dispatches_and_refusals(traced_deployment: WorkerDeployment) -> None:
    ran = ("seepient_dispatch_seconds_count", (("outcome", "ran"), ("side", "scheduler")))
    replayed = ("seepient_dispatch_refusals_total", (("reason", "replayed"), ("side", "scheduler")))
    before = _scrape(traced_deployment)
    body = traced_deployment.dispatch("echo counted").model_dump_json()
    assert traced_deployment.post(body).status_code == 200
    assert traced_deployment.post(body).status_code == 409
    after = _scrape(traced_deployment)
    assert after[ran] - before.get(ran, 0) == 1
    assert after[replayed] - before.get(replayed, 0) == 1
    # The same page on the mTLS listener, for an allowed identity.
    with httpx2.Client(verify=traced_deployment.ssl_context(), trust_env=False, timeout=20) as client:
        page = client.get(traced_deployment.endpoint + "/metrics")
    assert page.status_code == 200 and "seepient_dispatch_seconds" in page.text
