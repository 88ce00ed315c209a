"""Runs inside the sandbox: listens on 127.0.0.1 in the sandbox's own network namespace, relays each
connection to the egress proxy's Unix socket, and runs the command; standard library only, for a fast start.

Usage: python -I -S -c "$(cat _sandbox_forwarder.py)" SOCKET PORT -- COMMAND [ARG...]
"""

import asyncio
import signal
import sys


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction of a connection until its end, then pass the end on (the egress proxy's relay too)."""
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        pass


async def _main(socket_path: str, port: int, argv: list[str]) -> int:
    async def relay(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_unix_connection(socket_path)
        except OSError:
            client_writer.close()
            return
        await asyncio.gather(pipe(client_reader, upstream_writer), pipe(upstream_reader, client_writer))
        for writer in (client_writer, upstream_writer):
            writer.close()

    server = await asyncio.start_server(relay, "127.0.0.1", port)
    try:
        process = await asyncio.create_subprocess_exec(*argv)
    except OSError as exc:
        sys.stderr.write(f"seepient: cannot run {argv[0]}: {exc.strerror}\n")
        return 127
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, process.send_signal, sig)
    code = await process.wait()
    server.close()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.stderr.write(__doc__ or "")
        sys.exit(2)
    sys.exit(asyncio.run(_main(sys.argv[1], int(sys.argv[2]), sys.argv[4:])))
