"""Attacks on the real scheduler over HTTPS: replay, expiry, tampering with a signed dispatch, another signing
key, another CA, another identity, no certificate, and a replay across a scheduler restart. Each must be
refused before any container starts."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import httpx2
import pytest

from seepient.crypto import (
    create_certificate_authority,
    generate_signing_key,
    issue_client_certificate,
    load_certificate_authority,
    sign_fields,
)
from seepient.crypto.files import write_public_file, write_secret_file
from seepient.crypto.signing import key_id_for
from tests.scheduler.worker_env import (
    WorkerDeployment,
    deployment_fixture,  # noqa: F401 - registers the module fixture
    labelled_containers,
    make_deployment,
    no_container_left_behind_fixture,  # noqa: F401 - registers the session fixture
    worker_image_fixture,  # noqa: F401 - registers the session fixture
)

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("no_container_left_behind")]


def _refusal(response: httpx2.Response) -> tuple[int, str]:
    return response.status_code, response.json().get("error", "")


def _tampered(document: str, change: callable) -> str:  # type: ignore[valid-type]
    data = json.loads(document)
    change(data)
    return json.dumps(data)


def test_a_valid_dispatch_runs_once_and_its_replay_is_refused(deployment: WorkerDeployment) -> None:
    body = deployment.dispatch("echo once").model_dump_json()
    first = deployment.post(body)
    assert first.status_code == 200, first.text
    assert first.json()["stdout"] == "once\n"
    assert _refusal(deployment.post(body)) == (409, "replayed")


def test_an_expired_dispatch_is_refused(deployment: WorkerDeployment) -> None:
    old = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=3)
    assert _refusal(deployment.post(deployment.dispatch(now=old).model_dump_json())) == (422, "expired")


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda d: d["lease"].update(workspace="/etc"), id="lease-path"),
        pytest.param(lambda d: d["lease"].update(tenant="other"), id="lease-tenant"),
        pytest.param(lambda d: d["limits"].update(memory_mb=128), id="limits"),
        pytest.param(lambda d: d["action"]["payload"].update(command="cat /etc/shadow"), id="command"),
        pytest.param(lambda d: d.update(expires_at="2099-01-01T00:00:00Z"), id="expiry"),
    ],
)
def test_any_change_after_signing_is_refused(deployment: WorkerDeployment, change) -> None:
    body = _tampered(deployment.dispatch().model_dump_json(), change)
    status, reason = _refusal(deployment.post(body))
    assert (status, reason) in {(403, "bad_signature"), (422, "digest_mismatch")}


def test_a_properly_signed_lease_outside_the_tenant_root_is_refused(deployment: WorkerDeployment) -> None:
    assert _refusal(deployment.post(deployment.dispatch(workspace="/etc").model_dump_json())) == (
        422,
        "lease_outside_root",
    )
    link = deployment.root / "escape"
    link.symlink_to("/etc")
    assert _refusal(deployment.post(deployment.dispatch(workspace=str(link)).model_dump_json()))[1] == (
        "lease_outside_root"
    )


def test_limits_above_the_scheduler_maxima_are_refused(deployment: WorkerDeployment) -> None:
    assert _refusal(deployment.post(deployment.dispatch(memory_mb=1_000_000).model_dump_json())) == (
        422,
        "limits_exceeded",
    )


def test_a_dispatch_signed_by_another_key_is_refused(deployment: WorkerDeployment) -> None:
    stranger = generate_signing_key()
    assert _refusal(deployment.post(deployment.dispatch(signing_key=stranger).model_dump_json())) == (
        403,
        "unknown_key",
    )
    # The same forgery claiming the configured key's id fails the signature check instead.
    document = json.loads(deployment.dispatch().model_dump_json())
    document["signature"] = sign_fields(document, stranger)
    assert _refusal(deployment.post(json.dumps(document))) == (403, "bad_signature")
    assert key_id_for(stranger.public_key()) != document["key_id"]


def _client_files(directory: Path, issued, name: str) -> tuple[str, str]:
    write_public_file(directory / f"{name}.pem", issued.certificate_pem(), overwrite=True)
    write_secret_file(directory / f"{name}-key.pem", issued.private_key_pem(), overwrite=True)
    return f"{name}.pem", f"{name}-key.pem"


def test_a_client_certificate_from_another_ca_cannot_connect(deployment: WorkerDeployment) -> None:
    other_ca = create_certificate_authority("Not our CA")
    cert, key = _client_files(
        deployment.directory, issue_client_certificate(other_ca, "seepient-control-plane"), "foreign"
    )
    with pytest.raises(httpx2.HTTPError):
        deployment.post(deployment.dispatch().model_dump_json(), context=deployment.ssl_context(cert, key))


def test_a_certificate_from_our_ca_with_another_identity_gets_403(deployment: WorkerDeployment) -> None:
    ca = load_certificate_authority(deployment.directory / "ca.pem", deployment.directory / "ca-key.pem")
    cert, key = _client_files(deployment.directory, issue_client_certificate(ca, "intruder"), "intruder")
    context = deployment.ssl_context(cert, key)
    for path in ("/v1/dispatch", "/v1/health"):
        response = deployment.post(deployment.dispatch().model_dump_json(), context=context, path=path)
        assert response.status_code == 403 and "intruder" in response.json()["message"]
    refused = [r for r in deployment.scheduler_audit() if r.get("event") == "peer_refused"]
    assert refused and "intruder" in refused[-1]["reason"]


def test_no_client_certificate_cannot_connect(deployment: WorkerDeployment) -> None:
    import ssl

    context = ssl.create_default_context(cafile=str(deployment.directory / "ca.pem"))
    with pytest.raises(httpx2.HTTPError):
        deployment.post(deployment.dispatch().model_dump_json(), context=context)


def test_refusals_start_no_container(deployment: WorkerDeployment) -> None:
    assert _refusal(deployment.post(b"{not json"))[0] == 400
    assert labelled_containers() == []


def test_a_scheduler_restart_still_refuses_an_old_nonce(tmp_path: Path, worker_image: str) -> None:
    deployed = make_deployment(tmp_path)
    dispatch = deployed.dispatch("echo before-restart").model_dump_json()
    deployed.start()
    try:
        assert deployed.post(dispatch).status_code == 200
    finally:
        deployed.stop()
    deployed.start()
    try:
        assert _refusal(deployed.post(dispatch)) == (409, "replayed")
    finally:
        deployed.stop()
