"""``seepient worker build-image``: the worker image, built on a machine without registry access.

A Debian root file system (``debootstrap --variant=minbase --include=python3 bookworm``) with one
non-root user is imported as a base image, cached in the engine under a name derived from its recipe.
The worker layer on top holds only what the worker entrypoint imports: the few Seepient modules of its
import closure and the installed files of its dependencies (pydantic, rfc8785 and theirs), copied from
this interpreter's own environment. That is sound because bookworm's python3 is CPython 3.11 like the
environment Seepient is pinned to (checked: the build refuses another version). Both images carry the
SHA-256 of their inputs, so an unchanged build is a lookup.
"""

from __future__ import annotations

import compileall
import hashlib
import importlib.metadata
import json
import os
import py_compile
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seepient.protocol.errors import ExecutionError

DEFAULT_TAG = "seepient/worker:latest"
BASE_REPOSITORY = "seepient/worker-base"
INPUTS_LABEL = "seepient.worker.inputs"
WORKER_UID = 10001
WORKER_USER = f"{WORKER_UID}:{WORKER_UID}"
SUITE = "bookworm"
PYTHON_VERSION = (3, 11)
SITE_PACKAGES = "usr/local/lib/python3.11/dist-packages"
WORKER_ENTRYPOINT = ("python3", "-I", "-m", "seepient.scheduler.worker")

WORKER_DISTRIBUTIONS = (
    "pydantic",
    "pydantic_core",
    "typing_extensions",
    "annotated_types",
    "typing_inspection",
    "rfc8785",
)
"""What ``seepient.execution.commit`` needs at run time; a shell task needs only the standard library."""

WORKER_MODULES = (
    "__init__.py",
    "_lazy_exports.py",
    "_version.py",
    "protocol",
    "execution/__init__.py",
    "execution/capped_output.py",
    "execution/commit.py",
    "execution/nofollow.py",
    "scheduler/__init__.py",
    "scheduler/worker.py",
)
"""The worker's import closure inside the ``seepient`` package; nothing else of value enters the image."""

_BASE_RECIPE = {
    "suite": SUITE,
    "variant": "minbase",
    "include": ["python3"],
    "user": WORKER_UID,
    "recipe": 1,
}


class ImageBuildError(ExecutionError):
    """The image cannot be built here; the message says what is missing and how to fix it."""


@dataclass(frozen=True)
class BuiltImage:
    tag: str
    image_id: str
    inputs: str
    cached: bool


Progress = Callable[[str], None]


def build_worker_image(
    tag: str = DEFAULT_TAG,
    *,
    mirror: str | None = None,
    force: bool = False,
    progress: Progress = lambda _message: None,
) -> BuiltImage:
    """Build (or find, unchanged) the worker image and tag it ``tag``. Needs root, debootstrap and docker."""
    _require_tools()
    if sys.version_info[:2] != PYTHON_VERSION:
        raise ImageBuildError(
            f"the worker's dependencies are copied from this environment, which runs Python "
            f"{sys.version_info[0]}.{sys.version_info[1]}; {SUITE}'s python3 is "
            f"{PYTHON_VERSION[0]}.{PYTHON_VERSION[1]}. Run the build from a Python "
            f"{PYTHON_VERSION[0]}.{PYTHON_VERSION[1]} environment, or use docker/worker/Dockerfile"
        )
    with tempfile.TemporaryDirectory(prefix="seepient-worker-") as scratch:
        overlay = Path(scratch) / "overlay"
        _stage_overlay(overlay)
        base_tag = (
            f"{BASE_REPOSITORY}:{SUITE}-{_digest(json.dumps(_BASE_RECIPE, sort_keys=True).encode())[:16]}"
        )
        inputs = _inputs_digest(overlay, base_tag)
        versioned = f"{tag.rsplit(':', 1)[0] if _has_tag(tag) else tag}:{inputs[:16]}"
        existing = _image_id(versioned)
        if existing is not None and not force:
            _docker("tag", versioned, tag)
            progress(f"{tag}: unchanged inputs {inputs[:16]}, reusing {existing[:19]}")
            return BuiltImage(tag, existing, inputs, cached=True)
        if _image_id(base_tag) is None or force:
            progress(f"building the base {base_tag} with debootstrap (about a minute)")
            _build_base(base_tag, Path(scratch) / "rootfs", mirror=mirror, progress=progress)
        progress(f"adding the worker layer to {base_tag}")
        _compile(overlay)
        image_id = _add_worker_layer(base_tag, overlay, versioned, inputs)
        _docker("tag", versioned, tag)
        _prune_versions(versioned)
        progress(f"{tag}: built {image_id[:19]} (inputs {inputs[:16]})")
        return BuiltImage(tag, image_id, inputs, cached=False)


def worker_image_inputs() -> str:
    """The digest ``build_worker_image`` would label the image with now (for callers that check freshness)."""
    with tempfile.TemporaryDirectory(prefix="seepient-worker-") as scratch:
        overlay = Path(scratch) / "overlay"
        _stage_overlay(overlay)
        base_tag = (
            f"{BASE_REPOSITORY}:{SUITE}-{_digest(json.dumps(_BASE_RECIPE, sort_keys=True).encode())[:16]}"
        )
        return _inputs_digest(overlay, base_tag)


def _prune_versions(keep: str) -> None:
    """Untag earlier builds of the same repository (tags that are inputs digests) so they do not pile up."""
    repository = keep.rsplit(":", 1)[0]
    listing = subprocess.run(
        ["docker", "images", "--format", "{{.Repository}}:{{.Tag}}", repository],
        capture_output=True,
        text=True,
        check=False,
    )
    for reference in listing.stdout.split():
        version = reference.rsplit(":", 1)[-1]
        if reference != keep and len(version) == 16 and all(c in "0123456789abcdef" for c in version):
            # An image a container still uses is kept by the engine; that is fine.
            subprocess.run(["docker", "rmi", reference], capture_output=True, check=False)


def _has_tag(reference: str) -> bool:
    return ":" in reference.rsplit("/", 1)[-1]


def _require_tools() -> None:
    missing = [tool for tool in ("docker", "debootstrap", "tar") if shutil.which(tool) is None]
    if "debootstrap" in missing and os.path.exists("/usr/sbin/debootstrap"):
        missing.remove("debootstrap")
    if missing:
        raise ImageBuildError(
            f"{', '.join(missing)} not found; install them (Debian: apt-get install {' '.join(missing)}) "
            "or build from docker/worker/Dockerfile on a machine with a registry"
        )


def _docker(*args: str, stdin: int | None = None) -> str:
    try:
        done = subprocess.run(
            ["docker", *args], stdin=stdin, capture_output=True, text=True, check=False, timeout=600
        )
    except OSError as exc:
        raise ImageBuildError(f"cannot run docker: {exc}") from None
    if done.returncode != 0:
        raise ImageBuildError(f"docker {args[0]} failed: {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout.strip()


def _image_id(reference: str) -> str | None:
    done = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", reference],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def _stage_overlay(overlay: Path) -> None:
    """Copy the worker's sources into ``overlay`` as they will sit in the image (byte code comes later)."""
    site = overlay / SITE_PACKAGES
    package = Path(__file__).resolve().parent.parent  # the seepient package this module is part of
    for entry in WORKER_MODULES:
        source = package / entry
        target = site / "seepient" / entry
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    for name in WORKER_DISTRIBUTIONS:
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise ImageBuildError(
                f"the worker needs {name}, which this environment lacks; install Seepient's dependencies"
            ) from None
        for file in distribution.files or ():
            if file.parts[0] == ".." or "__pycache__" in file.parts or file.suffix == ".pyc":
                continue
            source = Path(str(file.locate()))
            if source.is_file():
                target = site / file
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)


def _compile(overlay: Path) -> None:
    # The root file system is read-only at run time, so byte code must be there from the start; hashed
    # .pyc files stay valid whatever the copied sources' timestamps become.
    compileall.compile_dir(
        str(overlay / SITE_PACKAGES), quiet=2, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH
    )


def _inputs_digest(overlay: Path, base_tag: str) -> str:
    digest = hashlib.sha256()
    digest.update(base_tag.encode() + b"\0")
    digest.update(json.dumps([WORKER_ENTRYPOINT, WORKER_USER]).encode() + b"\0")
    for path in sorted(overlay.rglob("*")):
        if path.is_file() and path.suffix != ".pyc":
            digest.update(str(path.relative_to(overlay)).encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def apt_mirror(
    sources: tuple[Path, ...] = (Path("/etc/apt/sources.list.d"), Path("/etc/apt/sources.list")),
) -> str | None:
    """The Debian mirror this machine's apt already uses, so the build reaches the same repository."""
    files: list[Path] = []
    for source in sources:
        if source.is_dir():
            files.extend(sorted(source.glob("*.sources")) + sorted(source.glob("*.list")))
        elif source.is_file():
            files.append(source)
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except OSError:
            continue
        for stanza in text.split("\n\n"):
            fields = {}
            for line in stanza.splitlines():
                key, _, value = line.partition(":")
                if not line.startswith("#") and value:
                    fields[key.strip()] = value.strip()
            if SUITE in fields.get("Suites", "").split() and "main" in fields.get("Components", ""):
                uri = fields.get("URIs", "").split()
                if uri and not uri[0].rstrip("/").endswith("-security"):
                    return uri[0]
        for line in text.splitlines():
            words = line.split()
            if len(words) >= 4 and words[0] == "deb" and words[2] == SUITE:
                return words[1]
    return None


def _build_base(base_tag: str, rootfs: Path, *, mirror: str | None, progress: Progress) -> None:
    if os.geteuid() != 0:
        raise ImageBuildError("debootstrap needs root: run `sudo seepient worker build-image`")
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    argv = [debootstrap, "--variant=minbase", "--include=python3", SUITE, str(rootfs)]
    chosen = mirror or apt_mirror()
    if chosen:
        argv.append(chosen)
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
        raise ImageBuildError(
            f"debootstrap failed (exit {done.returncode}); pass --mirror URL if this machine reaches "
            f"Debian's packages through another mirror:\n{tail}"
        )
    with open(rootfs / "etc/passwd", "a", encoding="utf-8") as passwd:
        passwd.write(f"seepient:x:{WORKER_UID}:{WORKER_UID}:Seepient worker:/tmp:/usr/sbin/nologin\n")
    with open(rootfs / "etc/group", "a", encoding="utf-8") as group:
        group.write(f"seepient:x:{WORKER_UID}:\n")
    for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
        for entry in (rootfs / cache).glob("*"):
            if entry.is_file():
                entry.unlink()
    progress(f"importing {rootfs} as {base_tag}")
    tar = subprocess.Popen(
        ["tar", "--numeric-owner", "-C", str(rootfs), "-cf", "-", "."], stdout=subprocess.PIPE
    )
    assert tar.stdout is not None
    try:
        _docker("import", "--change", "ENV LANG=C.UTF-8", "-", base_tag, stdin=tar.stdout.fileno())
    finally:
        tar.stdout.close()
        tar.wait()


def _add_worker_layer(base_tag: str, overlay: Path, versioned: str, inputs: str) -> str:
    container = _docker("create", "--entrypoint", "/bin/true", base_tag)
    try:
        _docker("cp", f"{overlay}/.", f"{container}:/")
        entrypoint = json.dumps(list(WORKER_ENTRYPOINT))
        _docker(
            "commit",
            "--change", f"USER {WORKER_USER}",
            "--change", f"ENTRYPOINT {entrypoint}",
            "--change", "CMD []",
            "--change", "WORKDIR /tmp",
            "--change", "ENV LANG=C.UTF-8 HOME=/tmp",
            "--change", f"LABEL {INPUTS_LABEL}={inputs}",
            container,
            versioned,
        )  # fmt: skip
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
    image_id = _image_id(versioned)
    if image_id is None:
        raise ImageBuildError(f"docker commit did not produce {versioned}")
    return image_id
