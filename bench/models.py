"""Benchmarks for model streaming, each figure beside a raw httpx2 baseline measured in the same run.

- per-token streaming cost through each adapter (and through the router) against reading the same SSE bytes
  from the same local server with httpx2's own SSE parser (target: under 1.5×);
- time to the first token added by Seepient over the local server's own first byte (target: under 5 ms).

The server runs in its own process (so its writes do not compete with the client for the GIL) with
TCP_NODELAY set, answering each request with the same synthesized stream of one wire format. Two layouts:
one write per event, as providers send them, and every event in one write (a buffering proxy), where the
parse cost dominates and the ratio is the strictest.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench._timing import median_ms
from seepient.config.settings import Settings
from seepient.models.anthropic import AnthropicModel
from seepient.models.gemini import GeminiModel
from seepient.models.openai_chat import OpenAIChatModel
from seepient.models.openai_responses import OpenAIResponsesModel
from seepient.models.router import ModelRouter
from seepient.protocol import Message, ModelRequest, TextChunk

REPO = Path(__file__).resolve().parents[1]
FORMATS = ("openai-chat", "openai-responses", "anthropic", "gemini")
ADAPTERS = {
    "openai-chat": OpenAIChatModel,
    "openai-responses": OpenAIResponsesModel,
    "anthropic": AnthropicModel,
    "gemini": GeminiModel,
}
REQUEST = ModelRequest(model="bench", messages=(Message.user("Say something long."),))
MODEL_ID = "bench-model"


# --- the server process -------------------------------------------------------------------------------------


def _reply(kind: str, tokens: int, coalesce: bool) -> Any:
    from tests.support.sse_server import Reply

    text = " ".join(f"tok{index}" for index in range(tokens))
    build = {
        "openai-chat": Reply.synthesized,
        "openai-responses": Reply.responses_synthesized,
        "anthropic": Reply.anthropic_synthesized,
        "gemini": Reply.gemini_synthesized,
    }[kind]
    reply = build(text)
    return reply.coalesced() if coalesce else reply


def serve(kind: str, tokens: int, coalesce: bool) -> None:
    """Run in the child: serve one stream forever, print the base URL, stop when stdin closes."""
    from tests.support.sse_server import SSEReplayServer

    server = SSEReplayServer().cycle(_reply(kind, tokens, coalesce))
    with server:
        print(server.base_url, flush=True)
        sys.stdin.read()


class _ServerProcess:
    def __init__(self, kind: str, tokens: int, coalesce: bool) -> None:
        argv = [sys.executable, "-m", "bench.models", "--serve", kind, "--tokens", str(tokens)]
        if coalesce:
            argv.append("--coalesce")
        self._process = subprocess.Popen(
            argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self._process.stdout is not None
        self.base_url = self._process.stdout.readline().strip()
        if not self.base_url:
            raise RuntimeError(f"the bench server for {kind} did not start")

    def stop(self) -> None:
        assert self._process.stdin is not None
        self._process.stdin.close()
        self._process.wait(timeout=10)


# --- the client side ------------------------------------------------------------------------------------------


def _raw_url(kind: str, base_url: str) -> str:
    return {
        "openai-chat": f"{base_url}/chat/completions",
        "openai-responses": f"{base_url}/responses",
        "anthropic": f"{base_url}/messages",
        "gemini": f"{base_url}/models/{MODEL_ID}:streamGenerateContent?alt=sse",
    }[kind]


def _adapter(kind: str, base_url: str) -> Any:
    return ADAPTERS[kind](MODEL_ID, base_url=base_url, api_key="bench-key")


def _router(kind: str, base_url: str) -> ModelRouter:
    settings = Settings.model_validate(
        {
            "models": {
                "providers": {"bench": {"type": kind, "baseUrl": base_url}},
                "default": f"bench:{MODEL_ID}",
            }
        }
    ).models
    return ModelRouter(settings, environ={}, rng=random.Random(0))


async def _drain_raw(client: Any, url: str, body: dict[str, Any], decode: bool) -> int:
    events = 0
    async with client.sse(url, method="POST", json=body) as source:
        async for event in source:
            if decode and event.data and event.data != "[DONE]":
                json.loads(event.data)
            events += 1
    return events


async def _drain(model: Any) -> int:
    tokens = 0
    async for event in model.stream(REQUEST):
        if isinstance(event, TextChunk):
            tokens += 1
    return tokens


async def _first_raw_byte(client: Any, url: str, body: dict[str, Any]) -> float:
    start = time.perf_counter()
    async with client.stream("POST", url, json=body, headers={"Accept": "text/event-stream"}) as response:
        chunks = response.aiter_raw()
        await anext(chunks)
        elapsed = time.perf_counter() - start
        async for _ in chunks:
            pass
    return elapsed


def _carries_text(kind: str, payload: Any) -> bool:
    """Whether one decoded event holds answer text, in each wire format's own shape."""
    if kind == "openai-chat":
        choices = payload.get("choices") or [{}]
        return bool((choices[0].get("delta") or {}).get("content"))
    if kind == "openai-responses":
        return payload.get("type") == "response.output_text.delta"
    if kind == "anthropic":
        return payload.get("type") == "content_block_delta" and payload["delta"].get("type") == "text_delta"
    parts = payload["candidates"][0]["content"]["parts"]
    return bool(parts and parts[0].get("text"))


async def _first_raw_token(client: Any, kind: str, url: str, body: dict[str, Any]) -> float:
    """The least a client can do to reach the first token: httpx2's SSE parser and json.loads."""
    start = time.perf_counter()
    elapsed = None
    async with client.sse(url, method="POST", json=body) as source:
        async for event in source:
            if elapsed is None and event.data != "[DONE]" and _carries_text(kind, json.loads(event.data)):
                elapsed = time.perf_counter() - start
    assert elapsed is not None
    return elapsed


async def _first_token(model: Any) -> float:
    start = time.perf_counter()
    elapsed = None
    async for event in model.stream(REQUEST):
        if elapsed is None and isinstance(event, TextChunk):
            elapsed = time.perf_counter() - start
    assert elapsed is not None
    return elapsed


async def _cpu_time(fn: Callable[[], Awaitable[object]]) -> float:
    start = time.process_time()
    await fn()
    return time.process_time() - start


async def _bench_format(kind: str, tokens: int, runs: int, coalesce: bool) -> dict[str, list[float]]:
    import httpx2

    server = _ServerProcess(kind, tokens, coalesce)
    adapter = _adapter(kind, server.base_url)
    router = _router(kind, server.base_url)
    routed = router.route()
    url = _raw_url(kind, server.base_url)
    body = adapter.request_body(REQUEST)
    try:
        async with httpx2.AsyncClient(trust_env=False) as client:
            counted = await _drain(adapter)
            if counted != tokens:
                raise RuntimeError(f"{kind}: expected {tokens} text chunks, the adapter gave {counted}")
            variants: dict[str, Callable[[], Awaitable[object]]] = {
                "raw_sse": lambda: _drain_raw(client, url, body, decode=False),
                "raw_json": lambda: _drain_raw(client, url, body, decode=True),
                "adapter": lambda: _drain(adapter),
                "routed": lambda: _drain(routed),
            }
            figures: dict[str, list[float]] = {name: [] for name in variants}
            for round_ in range(runs + 3):
                # Round-robin, so a busy moment of the machine weighs on every variant alike; the first
                # rounds warm up connections and caches.
                for name, fn in variants.items():
                    spent = await _cpu_time(fn)
                    if round_ >= 3:
                        figures[name].append(spent)
            if not coalesce:
                firsts: dict[str, Callable[[], Awaitable[float]]] = {
                    "first_byte": lambda: _first_raw_byte(client, url, body),
                    "first_raw_token": lambda: _first_raw_token(client, kind, url, body),
                    "first_adapter": lambda: _first_token(adapter),
                    "first_routed": lambda: _first_token(routed),
                }
                figures.update({name: [] for name in firsts})
                for round_ in range(3 * runs + 3):
                    for name, first in firsts.items():
                        elapsed = await first()
                        if round_ >= 3:
                            figures[name].append(elapsed)
            return figures
    finally:
        await adapter.aclose()
        await router.aclose()
        server.stop()


def _per_token_us(samples: list[float], tokens: int) -> float:
    return statistics.median(samples) / tokens * 1e6


def _added_ms(ours: list[float], raw: list[float]) -> float:
    """The median of paired differences: each round's first token against the same round's first byte."""
    return statistics.median(o - r for o, r in zip(ours, raw, strict=True)) * 1000


async def main_async(tokens: int, runs: int, formats: list[str]) -> list[str]:
    lines = [
        f"model streaming: {tokens} text tokens per stream, {runs} rounds, server in its own process with "
        "TCP_NODELAY",
        "",
        "per-token cost, client CPU time (target: adapter under 1.5× httpx2's own parse of the same SSE bytes)",
    ]
    ttft_lines = [
        "",
        "time to first token, median of paired rounds (target: under 5 ms added over the server's own first "
        "token event as httpx2 alone reads it)",
    ]
    for coalesce in (False, True):
        layout = "one write per event, as providers stream" if not coalesce else "all events in one write"
        lines.append(f"  [{layout}]")
        for kind in formats:
            figures = await _bench_format(kind, tokens, runs, coalesce)
            raw, raw_json = (
                _per_token_us(figures["raw_sse"], tokens),
                _per_token_us(figures["raw_json"], tokens),
            )
            ours, routed = _per_token_us(figures["adapter"], tokens), _per_token_us(figures["routed"], tokens)
            lines.append(
                f"  {kind:<17} httpx2 SSE {raw:6.2f} µs   SSE+json.loads {raw_json:6.2f} µs   "
                f"adapter {ours:6.2f} µs = {ours / raw:4.2f}× SSE, {ours / raw_json:4.2f}× SSE+json   "
                f"router {routed:6.2f} µs = {routed / raw:4.2f}× SSE"
            )
            if not coalesce:
                raw_token = figures["first_raw_token"]
                ttft_lines.append(
                    f"  {kind:<17} first byte {median_ms(figures['first_byte']):6.3f} ms   httpx2 first token "
                    f"{median_ms(raw_token):6.3f} ms   adapter {median_ms(figures['first_adapter']):6.3f} ms "
                    f"({_added_ms(figures['first_adapter'], raw_token):+6.3f} ms over httpx2, "
                    f"{_added_ms(figures['first_adapter'], figures['first_byte']):+6.3f} ms over the first byte)   "
                    f"router {median_ms(figures['first_routed']):6.3f} ms "
                    f"({_added_ms(figures['first_routed'], raw_token):+6.3f} ms over httpx2)"
                )
    return lines + ttft_lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tokens", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--format", action="append", choices=FORMATS, help="only these wire formats")
    parser.add_argument("--serve", choices=FORMATS, help=argparse.SUPPRESS)
    parser.add_argument("--coalesce", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve, args.tokens, args.coalesce)
        return
    for line in asyncio.run(main_async(args.tokens, args.runs, args.format or list(FORMATS))):
        print(line)


if __name__ == "__main__":
    main()
