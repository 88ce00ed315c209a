"""``scheduler.json``: the file ``certs init`` writes loads; bad files fail with the file and field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from seepient.scheduler import SchedulerConfigError, load_scheduler_config
from tests.scheduler.conftest import Deployed


def test_the_written_config_loads_with_its_keys(deployed: Deployed) -> None:
    config = deployed.config
    assert config.listen.host == "127.0.0.1" and config.listen.port == 8443
    assert config.mtls.allowed_client_identities == ("seepient-control-plane",)
    assert config.tenants["default"].workspace_root == deployed.root.resolve()
    (key_id,) = config.dispatch_keys
    assert config.dispatch_verify_key(key_id) is not None
    assert config.dispatch_verify_key("ed25519:unknown") is None
    assert config.worker_image == "seepient/worker:latest"


def test_relative_paths_are_read_relative_to_the_config_file(deployed: Deployed) -> None:
    document = json.loads((deployed.directory / "scheduler.json").read_text())
    document["resultSigningKeyPath"] = "result-signing.key"
    document["stateDir"] = "state"
    moved = deployed.directory / "relative.json"
    moved.write_text(json.dumps(document))
    config = load_scheduler_config(moved)
    assert config.result_signing_key_path == deployed.directory / "result-signing.key"
    assert config.state_dir == deployed.directory / "state"


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["limits"].pop("maxPids"), "limits.maxPids"),
        (lambda d: d.update(surprise=1), "surprise"),
        (lambda d: d.update(resultSigningKeyPath="/nonexistent/key"), "cannot read key file"),
        (lambda d: d["tenants"]["default"].update(workspaceRoot="/nonexistent/root"), "not a directory"),
        (lambda d: d["mtls"].update(allowedClientIdentities=[]), "allowedClientIdentities"),
    ],
)
def test_bad_configs_name_the_problem(deployed: Deployed, change, words: str) -> None:
    document = json.loads((deployed.directory / "scheduler.json").read_text())
    change(document)
    path = deployed.directory / "bad.json"
    path.write_text(json.dumps(document))
    with pytest.raises(SchedulerConfigError, match=words) as caught:
        load_scheduler_config(path)
    assert str(path) in str(caught.value)


def test_a_missing_or_broken_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(SchedulerConfigError, match="cannot read"):
        load_scheduler_config(tmp_path / "absent.json")
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(SchedulerConfigError, match="not valid JSON"):
        load_scheduler_config(tmp_path / "broken.json")
