"""The scrubbed environment: only harmless variables pass, secrets never do even when a name looks allowed."""

from __future__ import annotations

import pytest

from seepient.execution.environment import DEFAULT_PATH, is_denied_name, scrubbed_environment

PARENT = {
    "PATH": "/usr/bin:/bin",
    "LANG": "en_US.UTF-8",
    "LC_ALL": "C.UTF-8",
    "LC_CTYPE": "C.UTF-8",
    "TERM": "xterm-256color",
    "TZ": "UTC",
    "USER": "dev",
    "LOGNAME": "dev",
    "SHELL": "/bin/bash",
    "COLUMNS": "120",
    "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
    "HOME": "/home/dev",
    "OPENAI_API_KEY": "sk-1",
    "ANTHROPIC_API_KEY": "sk-2",
    "GITHUB_TOKEN": "ghp-3",
    "GH_TOKEN": "ghp-4",
    "MY_SECRET": "s",
    "DB_PASSWORD": "p",
    "SEEPIENT_X": "x",
    "SEEPIENT_HOME": "/home/dev/.seepient",
    "AWS_ACCESS_KEY_ID": "AKIA",
    "AWS_PROFILE": "prod",
    "SSH_AUTH_SOCK": "/run/user/1000/ssh.sock",
    "GOOGLE_APPLICATION_CREDENTIALS": "/home/dev/gcp.json",
    "DOCKER_HOST": "unix:///run/docker.sock",
    "LD_PRELOAD": "/evil.so",
    "PYTHONPATH": "/somewhere",
    "LC_ACCESS_TOKEN": "allow-listed prefix but a secret name",
    "XDG_RUNTIME_DIR": "/run/user/1000",
    "DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1000/bus",
    "HTTPS_PROXY": "http://user:password@proxy:3128",
}


def test_only_allow_listed_variables_pass_and_home_is_replaced() -> None:
    env = scrubbed_environment(PARENT, home="/sandbox/home")
    assert env == {
        "PATH": "/usr/bin:/bin",
        "LANG": "en_US.UTF-8",
        "LC_ALL": "C.UTF-8",
        "LC_CTYPE": "C.UTF-8",
        "TERM": "xterm-256color",
        "TZ": "UTC",
        "USER": "dev",
        "LOGNAME": "dev",
        "SHELL": "/bin/bash",
        "COLUMNS": "120",
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "HOME": "/sandbox/home",
    }


def test_a_usable_path_is_provided_when_the_parent_has_none() -> None:
    assert scrubbed_environment({}, home="/h") == {"PATH": DEFAULT_PATH, "HOME": "/h"}


@pytest.mark.parametrize(
    "name",
    [
        "OPENAI_API_KEY", "openai_api_key", "GITHUB_TOKEN", "CI_JOB_TOKEN", "MY_SECRET", "SECRET", "CLIENT_SECRET_ID",
        "DB_PASSWORD", "PGPASSWORD", "SIGNING_KEY", "AZURE_CLIENT_CREDENTIALS", "SEEPIENT_ANYTHING", "AWS_REGION",
        "SSH_AUTH_SOCK", "GITHUB_ACTIONS", "LC_ACCESS_TOKEN", "LD_LIBRARY_PATH",
    ],
)  # fmt: skip
def test_deny_patterns_catch_secret_names(name: str) -> None:
    assert is_denied_name(name)


@pytest.mark.parametrize("name", ["PATH", "LANG", "LC_ALL", "TERM", "TZ", "USER", "HOME", "COLUMNS", "SHELL"])
def test_deny_patterns_leave_ordinary_names_alone(name: str) -> None:
    assert not is_denied_name(name)


def test_no_secret_value_survives() -> None:
    env = scrubbed_environment(PARENT, home="/h")
    secret_values = {"sk-1", "sk-2", "ghp-3", "ghp-4", "s", "p", "x", "AKIA", "prod", "/evil.so"}
    assert not secret_values & set(env.values())
