"""Benchmark for the SSRF-safe client: ``safe_fetch`` of a local page against a plain httpx2 request to the
same page, measured in the same run.

- reused clients (keep-alive on both sides): ``SafeFetcher.fetch`` against ``httpx2.AsyncClient.get``;
- one-shot calls (a new client, a new connection each time): ``safe_fetch`` against a new ``AsyncClient``.

Target: the reused-client ratio under 1.3×.
"""

from __future__ import annotations

import argparse
import asyncio
import socket

import httpx2

from bench._timing import median_ms, report, sample_async
from seepient.net import AddressPolicy, SafeFetcher, safe_fetch

PAGE = b"<!doctype html><html><body>" + b"<p>benchmark page</p>" * 200 + b"</body></html>"
TARGET_RATIO = 1.3


async def _serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    # Without TCP_NODELAY a reused connection stalls on Nagle meeting delayed ACKs (DESIGN §6).
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    head = f"HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {len(PAGE)}\r\n\r\n".encode()
    try:
        while True:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(head + PAGE)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
        pass
    finally:
        writer.close()


async def _main(runs: int) -> None:
    server = await asyncio.start_server(_serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    url = f"http://127.0.0.1:{port}/"
    # The only way a benchmark reaches loopback: an explicit allowlist, as a user would configure.
    policy = AddressPolicy.build(allow_ranges=["127.0.0.1/32"], allow_ports=[port])
    lines = []
    async with SafeFetcher(policy) as fetcher, httpx2.AsyncClient(trust_env=False) as plain:

        async def ours() -> None:
            assert (await fetcher.fetch(url)).content == PAGE

        async def raw() -> None:
            assert (await plain.get(url)).content == PAGE

        ours_s = await sample_async(ours, runs=runs, warmup=20)
        raw_s = await sample_async(raw, runs=runs, warmup=20)
        lines.append(
            report("safe fetch, reused client", ours_s, raw_s, "httpx2 get, reused", f"< {TARGET_RATIO}×")
        )
        ratio = median_ms(ours_s) / median_ms(raw_s)

    async def ours_once() -> None:
        assert (await safe_fetch(url, policy=policy)).content == PAGE

    # Both sides share one CA bundle load, as safe_fetch does, so the figure compares the requests.
    shared_ssl = httpx2.create_ssl_context(trust_env=False)

    async def raw_once() -> None:
        async with httpx2.AsyncClient(trust_env=False, verify=shared_ssl) as client:
            assert (await client.get(url)).content == PAGE

    once_runs = max(runs // 4, 20)
    ours_once_s = await sample_async(ours_once, runs=once_runs)
    raw_once_s = await sample_async(raw_once, runs=once_runs)
    lines.append(report("safe_fetch, one-shot", ours_once_s, raw_once_s, "httpx2 one-shot client", "(info)"))
    server.close()
    await server.wait_closed()
    print(f"Seepient net benchmarks ({runs} runs; medians; ratio = ours / raw baseline)")
    print("\n".join(lines))
    print(
        f"safe fetch overhead: {ratio:.2f}× against {TARGET_RATIO}×: {'ok' if ratio < TARGET_RATIO else 'OVER'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=400)
    args, _ = parser.parse_known_args()
    # The verdict is printed, not exited on: bench/run goes on to the other benchmarks whatever this measured.
    asyncio.run(_main(args.runs))


if __name__ == "__main__":
    main()
