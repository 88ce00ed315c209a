"""``pip install`` and ``git clone`` over HTTPS from inside the real bubblewrap sandbox, through Seepient's
filtering proxy: they work for an allowlisted domain (a package index and a git repository served locally
over TLS) and fail, with the proxy's reason, for a domain that resolves to a private address."""

from __future__ import annotations

import base64
import hashlib
import http.server
import io
import os
import shlex
import shutil
import socket
import ssl
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from seepient.execution.local import LocalExecutor
from seepient.net import AddressPolicy
from seepient.protocol import Capability, ShellCommand, ShellOutcome
from tests.approved import run_shell
from tests.net.conftest import mapped_resolver
from tests.support.tls_server import self_signed_certificate

pytestmark = pytest.mark.skipif(
    (shutil.which("git") is None or shutil.which("openssl") is None) and os.environ.get("CI") != "true",
    reason="needs git and openssl (.ci/run installs openssl; git is on every machine CI uses)",
)

# The base interpreter (with its own pip): a checkout's virtualenv may live under /tmp, which the sandbox
# makes private.
PY = shlex.quote(os.path.realpath(sys.executable))
_PACKAGE = "seepdemo"


def _wheel(directory: Path) -> Path:
    """A minimal, valid pure-Python wheel: one module, its metadata, and a RECORD with real hashes."""
    name = f"{_PACKAGE}-1.0-py3-none-any.whl"
    files = {
        f"{_PACKAGE}.py": b"GREETING = 'installed through the proxy'\n",
        f"{_PACKAGE}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {_PACKAGE}\nVersion: 1.0\n".encode(),
        f"{_PACKAGE}-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: seepient-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = io.StringIO()
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{path},sha256={digest},{len(data)}\n")
    record.write(f"{_PACKAGE}-1.0.dist-info/RECORD,,\n")
    files[f"{_PACKAGE}-1.0.dist-info/RECORD"] = record.getvalue().encode()
    path = directory / name
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in files.items():
            archive.writestr(member, data)
    return path


def _site(root: Path) -> None:
    """A PEP 503 simple index with the wheel, and a git repository served by git's dumb HTTP protocol."""
    files = root / "files"
    files.mkdir(parents=True)
    wheel = _wheel(files)
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    index = root / "simple" / _PACKAGE
    index.mkdir(parents=True)
    (root / "simple" / "index.html").write_text(f'<a href="{_PACKAGE}/">{_PACKAGE}</a>\n')
    (index / "index.html").write_text(f'<a href="../../files/{wheel.name}#sha256={sha}">{wheel.name}</a>\n')

    source = root.parent / "source"
    source.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(source)], check=True)
    (source / "README").write_text("cloned through the proxy\n")
    subprocess.run([*git, "-C", str(source), "add", "README"], check=True)
    subprocess.run([*git, "-C", str(source), "commit", "-qm", "first"], check=True)
    subprocess.run([*git, "clone", "-q", "--bare", str(source), str(root / "repo.git")], check=True)
    subprocess.run(["git", "-C", str(root / "repo.git"), "update-server-info"], check=True)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # Without TCP_NODELAY a reused connection stalls ~40 ms per response (Nagle against delayed ACKs).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


@pytest.fixture
def https_site(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    root = tmp_path / "site"
    _site(root)
    cert, key = self_signed_certificate(tmp_path, "allowed.test")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    def handler(*args: object) -> _QuietHandler:
        return _QuietHandler(*args, directory=str(root))  # type: ignore[arg-type]

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # type: ignore[arg-type]
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], cert
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def executor(tmp_path: Path, https_site: tuple[int, Path]) -> LocalExecutor:
    port, cert = https_site
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # The CA must be readable inside the sandbox, whose /tmp is private: it goes into the workspace.
    (workspace / "ca.pem").write_bytes(cert.read_bytes())
    return LocalExecutor(
        workspace,
        seepient_home=tmp_path / "seepient-home",
        home=tmp_path / "home",
        network_egress="filtered",
        net_policy=AddressPolicy.build(allow_ranges=["127.0.0.1/32"], allow_ports=[port]),
        net_resolver=mapped_resolver({"allowed.test": ["127.0.0.1"], "internal.test": ["10.1.2.3"]}),
    )


async def _run(executor: LocalExecutor, command: str) -> ShellOutcome:
    return await run_shell(
        executor,
        ShellCommand(
            command=command,
            capabilities=(Capability.NETWORK,),
            cwd=str(executor.workspace),
            timeout_ms=120_000,
        ),
    )


def _pip(host: str, port: int, *flags: str) -> str:
    # requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE (set machine-wide on some hosts) override --cert, and
    # a machine-wide PIP_FIND_LINKS could satisfy the requirement without the index.
    unset = "-u REQUESTS_CA_BUNDLE -u CURL_CA_BUNDLE -u PIP_CERT -u PIP_FIND_LINKS -u PIP_INDEX_URL"
    return (
        f"env {unset} {PY} -m pip install {' '.join(flags)} --no-cache-dir --disable-pip-version-check --no-input --retries 0 --timeout 20 "
        f"--cert ca.pem --index-url https://{host}:{port}/simple/ --target deps {_PACKAGE}"
    )


async def test_pip_install_and_git_clone_work_for_an_allowlisted_domain(
    executor: LocalExecutor, https_site: tuple[int, Path]
) -> None:
    port, _ = https_site
    installed = await _run(executor, _pip("allowed.test", port))
    assert installed.exit_code == 0, installed.stdout + installed.stderr
    module = executor.workspace / "deps" / f"{_PACKAGE}.py"
    assert "installed through the proxy" in module.read_text()

    cloned = await _run(
        executor, f"GIT_SSL_CAINFO=ca.pem git clone -q https://allowed.test:{port}/repo.git clone"
    )
    assert cloned.exit_code == 0, cloned.stderr
    assert (executor.workspace / "clone" / "README").read_text() == "cloned through the proxy\n"


async def test_pip_and_git_fail_clearly_for_a_domain_on_a_private_address(
    executor: LocalExecutor, https_site: tuple[int, Path]
) -> None:
    port, _ = https_site
    installed = await _run(executor, _pip("internal.test", port))
    cloned = await _run(
        executor, f"GIT_SSL_CAINFO=ca.pem git clone -q https://internal.test:{port}/repo.git clone"
    )
    assert installed.exit_code != 0 and cloned.exit_code != 0
    assert not (executor.workspace / "deps").exists() or not any((executor.workspace / "deps").iterdir())
    assert not (executor.workspace / "clone" / "README").exists()
    # git shows the proxy's refusal of the CONNECT (pip keeps its connection errors to itself at this level).
    assert "403" in cloned.stderr, cloned.stderr
    assert "No matching distribution found" in installed.stderr
