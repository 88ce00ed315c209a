// The event-stream parser on its own: line endings, split chunks, comments, multi-line data, ids.

import assert from "node:assert/strict";
import { test } from "node:test";

import { readServerSentEvents } from "@seepient/client";

function body(...chunks) {
    const encoder = new TextEncoder();
    return new ReadableStream({
        start(controller) {
            for (const chunk of chunks) {
                controller.enqueue(typeof chunk === "string" ? encoder.encode(chunk) : chunk);
            }
            controller.close();
        },
    });
}

async function read(stream) {
    const events = [];
    for await (const event of readServerSentEvents(stream)) {
        events.push(event);
    }
    return events;
}

test("events split across chunks anywhere, even inside a UTF-8 character, come out whole", async () => {
    const text = 'id: 1\nevent: text_delta\ndata: {"text":"héllo ✓"}\n\nid: 2\nevent: turn_completed\ndata: {}\n\n';
    const bytes = new TextEncoder().encode(text);
    for (let cut = 1; cut < bytes.length; cut += 3) {
        const events = await read(body(bytes.slice(0, cut), bytes.slice(cut)));
        assert.deepEqual(events, [
            { event: "text_delta", data: '{"text":"héllo ✓"}', id: "1" },
            { event: "turn_completed", data: "{}", id: "2" },
        ]);
    }
});

test("CRLF, lone CR and LF all end lines, including a CRLF split between chunks", async () => {
    const events = await read(body("data: a\r", "\n\r\ndata: b\r\rdata: c\n\n"));
    assert.deepEqual(
        events.map((event) => event.data),
        ["a", "b", "c"],
    );
});

test("comments and unknown fields are ignored; several data lines join with newlines; the id persists", async () => {
    const events = await read(body(": keep-alive\n\nid: 7\nretry: 10\nfoo: bar\ndata: one\ndata:two\n\ndata: three\n\n"));
    assert.deepEqual(events, [
        { event: "message", data: "one\ntwo", id: "7" },
        { event: "message", data: "three", id: "7" },
    ]);
});

test("a leading byte order mark is dropped, and an unterminated last event is not dispatched", async () => {
    const events = await read(body("\uFEFFdata: first\n\ndata: cut off in the middle"));
    assert.deepEqual(
        events.map((event) => event.data),
        ["first"],
    );
});

test("stopping early cancels the body", async () => {
    let cancelled = false;
    const stream = new ReadableStream({
        pull(controller) {
            controller.enqueue(new TextEncoder().encode("data: x\n\n"));
        },
        cancel() {
            cancelled = true;
        },
    });
    for await (const event of readServerSentEvents(stream)) {
        assert.equal(event.data, "x");
        break;
    }
    assert.equal(cancelled, true);
});
