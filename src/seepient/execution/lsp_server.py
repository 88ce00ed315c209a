"""Language servers of one session: started lazily per language, jailed in bubblewrap with the workspace
read-only, no network and a scrubbed environment (a server reads model-written code and some servers run
it), spoken to through a pygls ``LanguageClient``, restarted when they die and shut down with the session."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.io_ import run_async
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path, to_fs_path

from seepient.execution.jail import Jail
from seepient.execution.lsp_config import LanguageServerConfig, server_for
from seepient.execution.process import start_group_leader
from seepient.protocol.lsp import LspAnswer, LspLocation, LspQuery, LspUnavailable
from seepient.protocol.refusals import SandboxUnavailable

_log = logging.getLogger(__name__)
_STDERR_TAIL_BYTES = 4000
_SHUTDOWN_S = 2.0
# A server that keeps dying is reported, not restarted forever.
MAX_RESTARTS = 3
FileReader = Callable[[str], Awaitable[bytes]]


class _Client(LanguageClient):
    """A pygls client attached to a process this module started (its stderr drained, its group killable)."""

    def __init__(self) -> None:
        super().__init__("seepient", "1")
        self.diagnostics: dict[str, list[types.Diagnostic]] = {}
        self.published: dict[str, int] = {}
        self.published_version: dict[str, int | None] = {}
        self.diagnostics_changed = asyncio.Condition()

    def attach(self, process: asyncio.subprocess.Process) -> None:
        # pygls's start_io creates the process itself with an undrained stderr pipe; a chatty server would
        # block on it, so the process is made here and handed over the way start_io would.
        assert process.stdin is not None and process.stdout is not None
        self.protocol.set_writer(process.stdin)  # type: ignore[arg-type]
        reader = asyncio.create_task(
            run_async(
                stop_event=self._stop_event,
                reader=process.stdout,
                protocol=self.protocol,
                logger=_log,
                error_handler=self.report_server_error,
            )
        )
        self._server = process
        self._async_tasks.extend([reader, asyncio.create_task(self._server_exit())])


@dataclass
class _Document:
    version: int
    text: str


@dataclass
class _Connection:
    config: LanguageServerConfig
    client: _Client
    process: asyncio.subprocess.Process
    stderr_tail: bytearray
    stderr_task: asyncio.Task[None]
    documents: dict[str, _Document] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self.client.stopped

    def stderr_text(self) -> str:
        return bytes(self.stderr_tail).decode("utf-8", errors="replace").strip()


def resolve_command(command: Sequence[str], environ: Mapping[str, str]) -> list[str] | None:
    """``command`` with its program made absolute, or None when it cannot be found."""
    program = command[0]
    if os.path.isabs(program):
        return list(command) if os.access(program, os.X_OK) else None
    found = shutil.which(program, path=environ.get("PATH", os.defpath))
    if found is None:
        beside = Path(sys.executable).parent / program
        found = str(beside) if os.access(beside, os.X_OK) else None
    return [found, *command[1:]] if found else None


def _private_roots(executable: str) -> list[Path]:
    """Where the server's program and interpreter live, if under a path the sandbox replaces with an empty
    tmpfs (/tmp, /run): those are shown read-only so a server installed there still starts."""
    candidates = [Path(os.path.realpath(executable))]
    with contextlib.suppress(OSError), open(candidates[0], "rb") as handle:
        first = handle.readline(512)
        if first.startswith(b"#!"):
            interpreter = first[2:].decode("utf-8", errors="replace").split()
            if interpreter:
                candidates.append(Path(interpreter[0]))
                candidates.append(Path(os.path.realpath(interpreter[0])))
    roots: list[Path] = []
    for candidate in candidates:
        prefix = candidate.parent.parent  # <prefix>/bin/program
        config = prefix / "pyvenv.cfg"
        homes = [prefix]
        with contextlib.suppress(OSError):
            for line in config.read_text(encoding="utf-8").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "home" and value.strip():
                    homes.append(Path(os.path.realpath(value.strip())).parent)
        for root in homes:
            if (
                any(root.is_relative_to(p) and root != Path(p) for p in ("/tmp", "/run"))
                and root not in roots
            ):
                roots.append(root)
    return roots


class LanguageServers:
    """The language servers of one workspace, by language, each started on first use."""

    def __init__(
        self,
        servers: Sequence[LanguageServerConfig],
        *,
        jail: Jail,
        read_file: FileReader,
        request_timeout_s: float = 30.0,
        diagnostics_wait_s: float = 3.0,
    ) -> None:
        # The session's jail: its sandbox, environment and the user's additions to what it shows and hides
        # apply to language servers as to every command.
        self._jail = jail
        self.workspace = jail.workspace
        self._servers = list(servers)
        self._read_file = read_file
        self.request_timeout_s = request_timeout_s
        self.diagnostics_wait_s = diagnostics_wait_s
        self._connections: dict[str, _Connection] = {}
        self._starting: dict[str, asyncio.Lock] = {}
        self._restarts: dict[str, int] = {}
        self._closed = False

    def server_for(self, path: str) -> LanguageServerConfig | None:
        return server_for(self._servers, path)

    # -- answering ------------------------------------------------------------------------------------

    async def query(self, query: LspQuery) -> LspAnswer:
        config = self.server_for(query.path)
        if config is None:
            configured = (
                ", ".join(f"{s.language} ({' '.join(s.extensions)})" for s in self._servers) or "none"
            )
            raise LspUnavailable(
                f"no language server is configured for {Path(query.path).suffix or 'files without an extension'} "
                f"files (configured: {configured}); add one under lsp.servers in the settings"
            )
        for attempt in (1, 2):
            connection = await self._connection(config)
            try:
                return await self._ask(connection, query)
            except LspUnavailable:
                raise
            except (RuntimeError, ConnectionError, BrokenPipeError) as exc:
                if connection.alive or attempt == 2:
                    raise LspUnavailable(f"the {config.language} language server failed: {exc}") from None
                _log.info("language server %s died during a request; restarting", config.language)
        raise AssertionError("unreachable")

    async def diagnostics_after_change(self, paths: Sequence[str]) -> LspAnswer | None:
        """Diagnostics of the changed files that have a server; None when none has one. A server problem is
        reported as the answer's text instead of raised: it must not turn a successful edit into an error."""
        served = [(path, config) for path in paths if (config := self.server_for(path)) is not None]
        if not served:
            return None
        languages = list(dict.fromkeys(config.language for _, config in served))
        # Together: a server that debounces its diagnostics (jedi waits a second) then costs one wait, not one
        # per file of a multi-file patch.
        answers = await asyncio.gather(
            *(self.query(LspQuery(operation="diagnostics", path=path)) for path, _ in served),
            return_exceptions=True,
        )
        found: list[LspLocation] = []
        notes: list[str] = []
        for answer in answers:
            if isinstance(answer, LspAnswer):
                found.extend(answer.locations)
            elif isinstance(answer, (LspUnavailable, SandboxUnavailable)):
                if str(answer) not in notes:
                    notes.append(str(answer))
            elif not isinstance(answer, FileNotFoundError):  # a file the change deleted has nothing to say
                raise answer
        return LspAnswer(
            operation="diagnostics",
            server=", ".join(languages),
            locations=tuple(found),
            text="\n".join(notes),
        )

    async def _ask(self, connection: _Connection, query: LspQuery) -> LspAnswer:
        client = connection.client
        language = connection.config.language
        # The lock keeps document versions in order; the question itself may overlap with others.
        async with connection.lock:
            uri, changed, version = await self._sync(connection, query.path)
        document = types.TextDocumentIdentifier(uri=uri)
        position = types.Position(line=query.line, character=query.character)
        timeout = self.request_timeout_s
        try:
            async with asyncio.timeout(timeout):
                if query.operation == "diagnostics":
                    diagnostics = await self._fresh_diagnostics(client, uri, changed, version)
                    return LspAnswer(
                        operation=query.operation,
                        server=language,
                        locations=tuple(_diagnostic(query.path, d) for d in diagnostics),
                    )
                if query.operation == "definition":
                    result: Any = await client.text_document_definition_async(
                        types.DefinitionParams(text_document=document, position=position)
                    )
                    return LspAnswer(operation=query.operation, server=language, locations=_locations(result))
                if query.operation == "references":
                    result = await client.text_document_references_async(
                        types.ReferenceParams(
                            text_document=document,
                            position=position,
                            context=types.ReferenceContext(include_declaration=True),
                        )
                    )
                    return LspAnswer(operation=query.operation, server=language, locations=_locations(result))
                if query.operation == "hover":
                    hover = await client.text_document_hover_async(
                        types.HoverParams(text_document=document, position=position)
                    )
                    return LspAnswer(operation=query.operation, server=language, text=_hover_text(hover))
                symbols = await client.text_document_document_symbol_async(
                    types.DocumentSymbolParams(text_document=document)
                )
                return LspAnswer(
                    operation=query.operation, server=language, locations=_symbols(query.path, symbols)
                )
        except TimeoutError:
            raise LspUnavailable(
                f"the {language} language server did not answer {query.operation} within {timeout:.0f} s"
            ) from None

    async def _sync(self, connection: _Connection, path: str) -> tuple[str, bool, int]:
        """Tell the server the file's current content: its URI, whether it changed (or was opened) just now,
        and the document version the server now has."""
        text = (await self._read_file(path)).decode("utf-8", errors="replace")
        uri = from_fs_path(path) or f"file://{path}"
        client = connection.client
        open_document = connection.documents.get(uri)
        if open_document is None:
            connection.documents[uri] = _Document(1, text)
            client.text_document_did_open(
                types.DidOpenTextDocumentParams(
                    text_document=types.TextDocumentItem(
                        uri=uri, language_id=connection.config.language, version=1, text=text
                    )
                )
            )
            return uri, True, 1
        if open_document.text == text:
            return uri, False, open_document.version
        open_document.version += 1
        open_document.text = text
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=open_document.version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri), text=text)
        )
        return uri, True, open_document.version

    async def _fresh_diagnostics(
        self, client: _Client, uri: str, changed: bool, version: int
    ) -> list[types.Diagnostic]:
        """Servers push diagnostics (``publishDiagnostics``) after a change: wait for a push about this
        version, up to ``diagnostics_wait_s``; an unchanged file answers with the last push at once. A push
        that names an older version (a late answer to an earlier change) does not count."""
        seen = client.published.get(uri, 0)

        def fresh() -> bool:
            stated = client.published_version.get(uri)
            return client.published.get(uri, 0) > seen and (stated is None or stated >= version)

        if changed or uri not in client.diagnostics:
            async with client.diagnostics_changed:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        client.diagnostics_changed.wait_for(fresh), self.diagnostics_wait_s
                    )
        return client.diagnostics.get(uri, [])

    # -- lifecycle ------------------------------------------------------------------------------------

    async def _connection(self, config: LanguageServerConfig) -> _Connection:
        lock = self._starting.setdefault(config.language, asyncio.Lock())
        async with lock:
            if self._closed:
                raise LspUnavailable("the session is closing; language servers are shut down")
            current = self._connections.get(config.language)
            if current is not None and current.alive:
                return current
            if current is not None:
                restarts = self._restarts.get(config.language, 0)
                died = f"the {config.language} language server exited (code {current.process.returncode})"
                detail = current.stderr_text()[-500:]
                await self._stop(current)
                del self._connections[config.language]
                if restarts >= MAX_RESTARTS:
                    raise LspUnavailable(
                        f"{died} and was already restarted {restarts} times; not starting it again this session"
                        + (f". Its last error output: {detail}" if detail else "")
                    )
                self._restarts[config.language] = restarts + 1
            connection = await self._start(config)
            self._connections[config.language] = connection
            return connection

    def _argv(self, config: LanguageServerConfig) -> tuple[list[str], dict[str, str]]:
        jail = self._jail
        command = resolve_command(config.command, jail.environ)
        if command is None:
            raise LspUnavailable(
                f"the {config.language} language server command {config.command[0]!r} was not found (looked on "
                f"PATH and next to {sys.executable}); install it, or change lsp.servers.{config.language}.command "
                "in the settings"
            )
        env = dict(jail.env)
        if jail.sandbox_mode == "off" or not config.sandbox:
            return command, env
        status = jail.bwrap.probe()
        if not status.available:
            raise SandboxUnavailable(status.message)
        # Inside, only the private /tmp is writable: caches go there.
        env = {**env, "XDG_CACHE_HOME": "/tmp/.cache", "TMPDIR": "/tmp"}
        argv = jail.bwrap.command_argv(
            command,
            workspace=self.workspace,
            cwd=self.workspace,
            network=False,
            view=jail.view(self.workspace),
            read_only_inside=(),
            env=env,
            workspace_read_only=True,
            read_only_binds=_private_roots(command[0]),
        )
        return argv, env

    async def _start(self, config: LanguageServerConfig) -> _Connection:
        argv, env = await asyncio.to_thread(self._argv, config)
        try:
            process = await start_group_leader(
                argv, env=env, cwd=self.workspace, stdin=asyncio.subprocess.PIPE
            )
        except OSError as exc:
            raise LspUnavailable(
                f"the {config.language} language server could not start ({exc}); check "
                f"lsp.servers.{config.language}.command in the settings"
            ) from None
        tail = bytearray()
        stderr_task = asyncio.create_task(_drain_tail(process.stderr, tail))
        client = _Client()
        client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)(_diagnostics_handler(client))
        client.attach(process)
        connection = _Connection(config, client, process, tail, stderr_task)
        root_uri = from_fs_path(str(self.workspace))
        try:
            async with asyncio.timeout(self.request_timeout_s):
                await client.initialize_async(
                    types.InitializeParams(
                        # No process id: inside the sandbox's PID namespace ours does not exist, and a server
                        # that watches its parent would take that for our death and exit.
                        process_id=None,
                        root_uri=root_uri,
                        root_path=str(self.workspace),
                        workspace_folders=[
                            types.WorkspaceFolder(uri=root_uri or "", name=self.workspace.name)
                        ],
                        initialization_options=dict(config.initialization_options or {}) or None,
                        capabilities=_capabilities(),
                    )
                )
            client.initialized(types.InitializedParams())
        except (TimeoutError, RuntimeError, ConnectionError, BrokenPipeError) as exc:
            await asyncio.sleep(0.05)
            detail = connection.stderr_text()[-800:]
            await self._stop(connection)
            reason = (
                "did not answer initialize in time" if isinstance(exc, TimeoutError) else f"failed ({exc})"
            )
            raise LspUnavailable(
                f"the {config.language} language server {reason}"
                + (f"; its error output: {detail}" if detail else "")
                + f"; check lsp.servers.{config.language} in the settings"
            ) from None
        return connection

    async def _stop(self, connection: _Connection) -> None:
        client, process = connection.client, connection.process
        if connection.alive:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(_SHUTDOWN_S):
                    await client.shutdown_async(None)
                    client.exit(None)
                    await process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if process.returncode is None:
            await process.wait()
        with contextlib.suppress(Exception):
            async with asyncio.timeout(_SHUTDOWN_S):
                await client.stop()
        connection.stderr_task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await connection.stderr_task

    def server_pids(self) -> dict[str, int]:
        """The host process id (bubblewrap's, or the server's when unsandboxed) per running language."""
        return {name: c.process.pid for name, c in self._connections.items() if c.alive}

    async def aclose(self) -> None:
        self._closed = True
        connections = list(self._connections.values())
        self._connections.clear()
        await asyncio.gather(*(self._stop(c) for c in connections), return_exceptions=True)


async def _drain_tail(stream: asyncio.StreamReader | None, tail: bytearray) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        tail += chunk
        del tail[: max(0, len(tail) - _STDERR_TAIL_BYTES)]


def _diagnostics_handler(client: _Client) -> Callable[[types.PublishDiagnosticsParams], Awaitable[None]]:
    async def on_publish(params: types.PublishDiagnosticsParams) -> None:
        async with client.diagnostics_changed:
            client.diagnostics[params.uri] = list(params.diagnostics)
            client.published[params.uri] = client.published.get(params.uri, 0) + 1
            client.published_version[params.uri] = params.version
            client.diagnostics_changed.notify_all()

    return on_publish


def _capabilities() -> types.ClientCapabilities:
    return types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            synchronization=types.TextDocumentSyncClientCapabilities(did_save=True),
            hover=types.HoverClientCapabilities(
                content_format=[types.MarkupKind.PlainText, types.MarkupKind.Markdown]
            ),
            definition=types.DefinitionClientCapabilities(link_support=True),
            references=types.ReferenceClientCapabilities(),
            document_symbol=types.DocumentSymbolClientCapabilities(hierarchical_document_symbol_support=True),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(version_support=True),
        ),
        general=types.GeneralClientCapabilities(position_encodings=[types.PositionEncodingKind.Utf16]),
    )


def _path_of(uri: str) -> str:
    return to_fs_path(uri) or uri


def _location(uri: str, span: types.Range, **extra: Any) -> LspLocation:
    return LspLocation(
        path=_path_of(uri),
        line=span.start.line,
        character=span.start.character,
        end_line=span.end.line,
        end_character=span.end.character,
        **extra,
    )


def _locations(result: Any) -> tuple[LspLocation, ...]:
    if result is None:
        return ()
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    found: list[LspLocation] = []
    for item in items:
        if isinstance(item, types.LocationLink):
            found.append(_location(item.target_uri, item.target_selection_range))
        elif isinstance(item, types.Location):
            found.append(_location(item.uri, item.range))
    return tuple(found)


def _symbols(path: str, result: Any) -> tuple[LspLocation, ...]:
    found: list[LspLocation] = []

    def walk(symbol: types.DocumentSymbol, depth: int) -> None:
        kind = types.SymbolKind(symbol.kind).name.lower()
        found.append(
            LspLocation(
                path=path,
                line=symbol.selection_range.start.line,
                character=symbol.selection_range.start.character,
                end_line=symbol.range.end.line,
                name=symbol.name,
                kind=kind,
                depth=depth,
            )
        )
        for child in symbol.children or ():
            walk(child, depth + 1)

    for item in result or ():
        if isinstance(item, types.DocumentSymbol):
            walk(item, 0)
        elif isinstance(item, types.SymbolInformation):
            kind = types.SymbolKind(item.kind).name.lower()
            found.append(_location(item.location.uri, item.location.range, name=item.name, kind=kind))
    return tuple(found)


def _diagnostic(path: str, diagnostic: types.Diagnostic) -> LspLocation:
    severity = types.DiagnosticSeverity(diagnostic.severity).name.lower() if diagnostic.severity else "error"
    return LspLocation(
        path=path,
        line=diagnostic.range.start.line,
        character=diagnostic.range.start.character,
        end_line=diagnostic.range.end.line,
        end_character=diagnostic.range.end.character,
        message=diagnostic.message,
        severity=severity,
        source=diagnostic.source or "",
    )


def _hover_text(hover: types.Hover | None) -> str:
    if hover is None:
        return ""
    contents: Any = hover.contents
    parts = list(contents) if isinstance(contents, (list, tuple)) else [contents]
    texts: list[str] = []
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, types.MarkupContent):
            texts.append(part.value)
        elif isinstance(part, types.MarkedStringWithLanguage):
            texts.append(part.value)
    return "\n\n".join(t.strip() for t in texts if t.strip())
