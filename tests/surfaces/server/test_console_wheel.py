"""The wheel carries the console with the TypeScript SDK's compiled client copied in at build time, byte for
byte what ``clients/typescript/dist`` holds (which ``tests/e2e/test_typescript_sdk.py`` proves is tsc's build
of ``src/``), and an installed console serves that copy."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parents[3]
UV = Path(sys.executable).parent / "uv"


def test_the_wheel_holds_the_console_and_the_compiled_sdk(tmp_path: Path) -> None:
    built = subprocess.run(
        [str(UV), "build", "--wheel", "-q", "-o", str(tmp_path / "dist"), str(CHECKOUT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    unpacked = tmp_path / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    console = unpacked / "seepient" / "surfaces" / "server" / "console"
    for name in ("index.html", "app.js", "session.js", "console.css"):
        assert (console / name).is_file(), name
    compiled = sorted(p.name for p in (CHECKOUT / "clients" / "typescript" / "dist").glob("*.js"))
    assert compiled and sorted(p.name for p in (console / "sdk").glob("*.js")) == compiled
    for name in compiled:
        shipped = (console / "sdk" / name).read_bytes()
        assert shipped == (CHECKOUT / "clients" / "typescript" / "dist" / name).read_bytes(), name
    # Imported from the unpacked wheel, the console lists the copy inside the package, not the checkout's.
    listed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from seepient.surfaces.server.console_routes import _console_files as f; "
            "print(f()['sdk/client.js'])",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(unpacked)},
        cwd=tmp_path,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr
    assert Path(listed.stdout.strip()) == console / "sdk" / "client.js"
