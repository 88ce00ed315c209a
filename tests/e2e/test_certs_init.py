"""``seepient certs init`` through the real console script: the files, their modes, the config shapes,
and that the result is a working trust setup (the control-plane certificate verifies as an allowed peer)."""

from __future__ import annotations

import datetime as dt
import json
import os
import stat

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from seepient.scheduler import authorize_peer, load_scheduler_config
from tests.e2e.conftest import RunCli, Sandboxed

FILES = {
    "ca.pem": 0o644,
    "ca-key.pem": 0o600,
    "scheduler.pem": 0o644,
    "scheduler-key.pem": 0o600,
    "control-plane.pem": 0o644,
    "control-plane-key.pem": 0o600,
    "dispatch-signing.key": 0o600,
    "dispatch-signing.pub": 0o644,
    "result-signing.key": 0o600,
    "result-signing.pub": 0o644,
    "scheduler.json": 0o644,
    "control-plane.json": 0o644,
}


def test_certs_init_writes_a_ready_deployment(seepient: RunCli, world: Sandboxed) -> None:
    target = world.home / "deploy"
    result = seepient(
        "certs", "init", str(target), "--scheduler-host", "sched.internal", "--scheduler-host", "10.1.2.3"
    )
    assert result.returncode == 0, result.stderr
    assert {line.rsplit("/", 1)[-1] for line in result.stdout.splitlines()} == set(FILES)
    assert "scheduler.json" in result.stderr
    assert {path.name: stat.S_IMODE(path.stat().st_mode) for path in target.iterdir()} == FILES

    scheduler = json.loads((target / "scheduler.json").read_text())
    (key_id,) = scheduler["dispatchKeys"]
    assert scheduler == {
        "listen": {"host": "127.0.0.1", "port": 8443},
        "mtls": {
            "caCertPath": str(target / "ca.pem"),
            "certPath": str(target / "scheduler.pem"),
            "keyPath": str(target / "scheduler-key.pem"),
            "allowedClientIdentities": ["seepient-control-plane"],
        },
        "dispatchKeys": {key_id: str(target / "dispatch-signing.pub")},
        "resultSigningKeyPath": str(target / "result-signing.key"),
        "tenants": {"default": {"workspaceRoot": str(world.workspace.resolve())}},
        "limits": scheduler["limits"],
        "workerImage": "seepient/worker:latest",
        "stateDir": scheduler["stateDir"],
    }
    assert set(scheduler["limits"]) == {"maxCpus", "maxMemoryMb", "maxPids", "maxTimeoutMs", "maxOutputBytes"}
    assert key_id.startswith("ed25519:")

    control_plane = json.loads((target / "control-plane.json").read_text())
    assert control_plane == {
        "execution": {
            "backend": "docker-worker",
            "schedulerEndpoint": "https://sched.internal:8443",
            "mtls": {
                "caCertPath": str(target / "ca.pem"),
                "clientCertPath": str(target / "control-plane.pem"),
                "clientKeyPath": str(target / "control-plane-key.pem"),
            },
            "workerImage": "seepient/worker:latest",
            "defaultTimeoutMs": 30000,
            "dispatchSigningKeyPath": str(target / "dispatch-signing.key"),
            "resultVerifyKeyPath": str(target / "result-signing.pub"),
            "tenant": "default",
        }
    }

    server = x509.load_pem_x509_certificate((target / "scheduler.pem").read_bytes())
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(names.get_values_for_type(x509.DNSName)) == {"localhost", "sched.internal"}
    assert {str(ip) for ip in names.get_values_for_type(x509.IPAddress)} == {"127.0.0.1", "10.1.2.3"}

    config = load_scheduler_config(target / "scheduler.json")
    client = x509.load_pem_x509_certificate((target / "control-plane.pem").read_bytes())
    der = client.public_bytes(serialization.Encoding.DER)
    assert authorize_peer(der, config=config, now=dt.datetime.now(dt.UTC)) == "seepient-control-plane"


def test_certs_init_refuses_to_overwrite_without_force(seepient: RunCli, world: Sandboxed) -> None:
    target = world.home / "deploy"
    root = world.home / "root"
    root.mkdir()
    assert seepient("certs", "init", str(target), "--workspace-root", str(root)).returncode == 0
    before = (target / "ca-key.pem").read_bytes()
    again = seepient("certs", "init", str(target))
    assert again.returncode == 2
    assert "refusing to overwrite" in again.stderr and "--force" in again.stderr
    assert (target / "ca-key.pem").read_bytes() == before
    assert json.loads((target / "scheduler.json").read_text())["tenants"]["default"]["workspaceRoot"] == str(
        root
    )

    forced = seepient("certs", "init", str(target), "--force")
    assert forced.returncode == 0, forced.stderr
    assert (target / "ca-key.pem").read_bytes() != before
    assert stat.S_IMODE((target / "ca-key.pem").stat().st_mode) == 0o600


def test_certs_init_explains_bad_arguments(seepient: RunCli, world: Sandboxed) -> None:
    bad_host = seepient("certs", "init", str(world.home / "a"), "--scheduler-host", "bad host")
    assert bad_host.returncode == 2 and "bad host" in bad_host.stderr
    missing_root = seepient(
        "certs", "init", str(world.home / "b"), "--workspace-root", str(world.home / "nope")
    )
    assert missing_root.returncode == 2 and "workspace root" in missing_root.stderr
    assert not (world.home / "a").exists() and not (world.home / "b").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the warning is about running as root")
def test_as_root_certs_init_says_the_workspace_must_belong_to_an_unprivileged_account(
    seepient: RunCli, world: Sandboxed
) -> None:
    owned_by_root = world.home / "root-owned"
    owned_by_root.mkdir()
    result = seepient("certs", "init", str(world.home / "d1"), "--workspace-root", str(owned_by_root))
    assert result.returncode == 0, result.stderr
    assert "warning: running as root" in result.stderr and "unprivileged account" in result.stderr
    assert f"{owned_by_root} is owned by root" in result.stderr and "chown -R" in result.stderr

    tenant = world.home / "tenant-owned"
    tenant.mkdir()
    os.chown(tenant, 10001, 10001)
    fine = seepient("certs", "init", str(world.home / "d2"), "--workspace-root", str(tenant))
    assert fine.returncode == 0, fine.stderr
    assert "unprivileged account" in fine.stderr and "is owned by root" not in fine.stderr
