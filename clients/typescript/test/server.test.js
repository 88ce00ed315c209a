// The client against a real `seepient serve` with the replay model, over the default transport of Node 20
// (Server-Sent Events read from a streamed fetch).

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";

import {
    AuthError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitError,
    SeepientError,
    Seepient,
    Session,
    approveOnce,
    approveSession,
    reject,
} from "@seepient/client";

import { CuttingProxy, client, consecutive, env, replay, session, skipServer, unique, writeFile } from "./helpers.js";

const transport = process.env.SEEPIENT_TRANSPORT ?? "sse";

/** A test that fails rather than hangs when the server stops answering (approvals wait minutes by default). */
const it = (name, fn) => test(name, { timeout: 60_000 }, fn);

describe(`a real server over ${transport}`, { skip: skipServer }, () => {
    it("Node 20 without a global WebSocket defaults to Server-Sent Events", () => {
        const auto = new Seepient({ baseUrl: env.url, token: env.token });
        assert.equal(auto.transport, typeof globalThis.WebSocket === "function" ? "websocket" : "sse");
    });

    it("toolNames lists the server's tools", async () => {
        const names = await client({ transport }).toolNames();
        for (const name of ["read_file", "write_file", "edit_file", "shell"]) {
            assert.ok(names.includes(name), `${name} missing from ${names.join(", ")}`);
        }
    });

    it("chat resolves to the final reply with every event of the turn", async () => {
        const seepient = client({ transport });
        const remote = await session(seepient, [{ text: "Hello from the replay model." }]);
        const reply = await remote.chat("say hello");
        assert.equal(reply.text, "Hello from the replay model.");
        assert.equal(reply.reason, "final");
        assert.equal(reply.error, null);
        assert.equal(reply.events[0].type, "turn_started");
        assert.equal(reply.events[0].prompt, "say hello");
        assert.equal(reply.events.at(-1).type, "turn_completed");
        assert.ok(reply.events.every((event) => event.turn_id === reply.turnId && event.session_id === remote.id));
        assert.ok(consecutive(reply.events));
        assert.equal(remote.lastSeq, reply.events.at(-1).seq);
        const detail = await remote.detail();
        assert.deepEqual(
            detail.turns.map((turn) => [turn.prompt, turn.status, turn.reply]),
            [["say hello", "completed", "Hello from the replay model."]],
        );
    });

    it("stream yields typed events in order, text deltas adding up to the reply", async () => {
        const seepient = client({ transport });
        const name = unique("streamed");
        const remote = await session(
            seepient,
            [{ text: "Reading first.", tool_calls: [{ name: "glob", arguments: { pattern: "*.nothing" } }] }, { text: "one two three four" }],
            "auto",
        );
        const seen = [];
        let text = "";
        for await (const event of remote.stream(`list ${name}`)) {
            seen.push(event.type);
            if (event.type === "text_delta") {
                text += event.text;
            }
            if (event.type === "tool_result") {
                assert.equal(event.tool, "glob");
                assert.equal(event.status, "ok");
            }
            if (event.type === "turn_completed") {
                assert.equal(event.text, "one two three four");
                assert.equal(event.reason, "final");
            }
        }
        assert.equal(text, "Reading first.one two three four");
        assert.equal(seen[0], "turn_started");
        assert.ok(seen.indexOf("tool_call") < seen.indexOf("tool_result"));
        assert.equal(seen.at(-1), "turn_completed");
        assert.ok(!seen.includes("permission_request"), "auto mode does not ask for a read");
    });

    it("a permission request approved once: the file is written", async () => {
        const seepient = client({ transport });
        const name = unique("approved");
        const remote = await session(seepient, [writeFile(name, "approved\n"), { text: "Wrote it." }]);
        const asked = [];
        remote.onPermissionRequest((request, { event, session: of }) => {
            asked.push(request);
            assert.equal(event.type, "permission_request");
            assert.equal(of, remote);
            return approveOnce();
        });
        const reply = await remote.chat("write it");
        assert.equal(reply.text, "Wrote it.");
        assert.equal(asked.length, 1);
        const [request] = asked;
        assert.equal(request.action.tool, "write_file");
        assert.equal(request.action.payload.type, "file_change");
        assert.equal(request.action.payload.path, name);
        assert.match(request.action.digest, /^[0-9a-f]{64}$/);
        assert.ok(request.scopes.some((scope) => scope.kind === "exact"));
        const resolved = reply.events.find((event) => event.type === "permission_resolved");
        assert.equal(resolved.request_id, request.request_id);
        assert.equal(resolved.response.decision, "approve_once");
        assert.equal(resolved.response.digest, request.action.digest);
        assert.equal(reply.toolResults[0].status, "ok");
        assert.equal(readFileSync(path.join(env.workspace, name), "utf8"), "approved\n");
    });

    it("approved for the session with a directory scope, the next edit there is not asked", async () => {
        const seepient = client({ transport });
        const directory = unique("granted").replace(/\.txt$/, "");
        mkdirSync(path.join(env.workspace, directory));
        const remote = await session(seepient, [
            writeFile(`${directory}/a.txt`, "a"),
            writeFile(`${directory}/b.txt`, "b"),
            { text: "Both written." },
        ]);
        const decided = [];
        remote.onPermissionRequest(async (request, { signal }) => {
            assert.ok(request.scopes.some((scope) => scope.kind === "directory" && scope.value === directory));
            // A person takes a moment; a request the grant settles meanwhile is withdrawn from them.
            await new Promise((resolve) => setTimeout(resolve, 200));
            if (!signal.aborted) {
                decided.push(request.action.payload.path);
            }
            return approveSession("directory");
        });
        const reply = await remote.chat("write both");
        assert.equal(reply.text, "Both written.");
        assert.deepEqual(decided, [`${directory}/a.txt`]);
        const resolutions = reply.events.filter((event) => event.type === "permission_resolved").map((event) => event.response);
        assert.deepEqual(
            resolutions.map((response) => [response.decision, response.approved_by]),
            [["approve_session", "user:alice"], ["approve_once", "grant:session"]],
        );
        assert.deepEqual(reply.toolResults.map((result) => result.status), ["ok", "ok"]);
        assert.equal(readFileSync(path.join(env.workspace, directory, "b.txt"), "utf8"), "b");
    });

    it("a permission request rejected with feedback: nothing written, and the model sees the feedback", async () => {
        const seepient = client({ transport });
        const name = unique("rejected");
        const feedback = `do not create ${name}; put it in NOTES.md instead`;
        const remote = await session(seepient, [writeFile(name, "x"), { text: "Understood, skipped." }]);
        remote.onPermissionRequest(() => reject(feedback));
        const reply = await remote.chat("write it");
        assert.equal(reply.text, "Understood, skipped.");
        assert.equal(existsSync(path.join(env.workspace, name)), false);
        const [result] = reply.toolResults;
        assert.equal(result.status, "rejected");
        assert.ok(result.output.includes(feedback), result.output);
        assert.equal(reply.events.find((event) => event.type === "permission_resolved").response.feedback, feedback);
        // What the model was sent: the tool message in the session's history carries the feedback.
        const { messages } = await remote.detail();
        const toolMessages = messages.filter((message) => message.role === "tool");
        assert.ok(
            toolMessages.some((message) => JSON.stringify(message).includes(feedback)),
            JSON.stringify(messages),
        );
    });

    it("a handler answering false rejects, and the stream's own handler wins over the session's", async () => {
        const seepient = client({ transport });
        const name = unique("refused");
        const remote = await session(seepient, [writeFile(name, "x"), { text: "Fine." }]);
        remote.onPermissionRequest(() => assert.fail("the session handler must not be asked"));
        const reply = await remote.chat("write", { onPermissionRequest: () => false });
        assert.equal(reply.toolResults[0].status, "rejected");
        assert.equal(existsSync(path.join(env.workspace, name)), false);
    });

    it("interrupt stops a turn waiting for approval; the stream ends with turn_completed interrupted", async () => {
        const seepient = client({ transport });
        const name = unique("interrupted");
        const remote = await session(seepient, [writeFile(name, "x"), { text: "never" }]);
        const seen = [];
        for await (const event of remote.stream("write and wait")) {
            seen.push(event);
            if (event.type === "permission_request") {
                assert.equal(await remote.interrupt(), true);
            }
        }
        const last = seen.at(-1);
        assert.equal(last.type, "turn_completed");
        assert.equal(last.reason, "interrupted");
        assert.equal(existsSync(path.join(env.workspace, name)), false);
        assert.equal(await remote.interrupt(), false, "nothing is running any more");
        assert.equal((await remote.detail()).turns[0].status, "interrupted");
    });

    it("a second message while a turn runs is a ConflictError with the server's reason", async () => {
        const seepient = client({ transport });
        const remote = await session(seepient, [writeFile(unique("busy"), "x"), { text: "done" }]);
        const iterator = remote.stream("first");
        for await (const event of iterator) {
            if (event.type === "permission_request") {
                const error = await remote.chat("second").catch((caught) => caught);
                assert.ok(error instanceof ConflictError, String(error));
                assert.equal(error.status, 409);
                assert.match(error.message, /a turn is already running/);
                await remote.interrupt();
            }
        }
    });

    it("a dropped event stream is resumed after the last seq, without losing or repeating an event", async () => {
        const words = Array.from({ length: 300 }, (_, i) => `word${i}`).join(" ");
        const direct = client({ transport });
        const remote = await session(direct, [{ text: words }]);
        const proxy = await new CuttingProxy({ match: transport === "websocket" ? /\/ws\?after=/ : /\/events\?after=/, cutAfter: 6000 }).start();
        try {
            const viaProxy = new Seepient({ baseUrl: proxy.url, token: env.token, transport });
            const resumed = await viaProxy.sessions.get(remote.id);
            const reply = await resumed.chat("talk");
            assert.equal(proxy.cuts, 1, "the proxy cut the stream once");
            const streams = proxy.requests.filter((request) => /\/(events|ws)\?after=/.test(request));
            assert.ok(streams.length >= 2, `reconnected: ${streams.join(", ")}`);
            const afters = streams.map((request) => Number(new URL(request, env.url).searchParams.get("after")));
            assert.ok(afters[1] > afters[0], `the second stream resumed after the last seq: ${afters.join(", ")}`);
            assert.ok(consecutive(reply.events), "no event lost or repeated");
            assert.equal(new Set(reply.events.map((event) => event.seq)).size, reply.events.length);
            assert.equal(reply.events.filter((event) => event.type === "text_delta").map((event) => event.text).join(""), words);
            assert.equal(reply.text, words);
            // The same turn read directly, in one piece, is identical event for event.
            const whole = [];
            for await (const event of remote.events({ after: reply.events[0].seq - 1, follow: false })) {
                whole.push(event);
            }
            assert.deepEqual(whole, reply.events);
        } finally {
            await proxy.close();
        }
    });

    it("aborting the fetch mid-stream and asking again after the last seq misses nothing and repeats nothing", async () => {
        const words = Array.from({ length: 120 }, (_, i) => `w${i}`).join(" ");
        const seepient = client({ transport: "sse" });
        const remote = await session(seepient, [{ text: words }]);
        await remote.chat("talk");
        const everything = [];
        for await (const event of remote.events({ follow: false })) {
            everything.push(event);
        }
        const controller = new AbortController();
        const first = [];
        await assert.rejects(
            (async () => {
                for await (const event of remote.events({ after: 0, signal: controller.signal })) {
                    first.push(event);
                    if (first.length === 40) {
                        controller.abort(new Error("dropped by the test"));
                    }
                }
            })(),
            /dropped by the test/,
        );
        assert.equal(first.length, 40);
        const rest = [];
        for await (const event of remote.events({ after: first.at(-1).seq, follow: false })) {
            rest.push(event);
        }
        assert.deepEqual([...first, ...rest], everything);
    });

    it("no token, a wrong token: AuthError with the server's message", async () => {
        const forged = new Seepient({ baseUrl: env.url, token: "spt_0000000000000000_forged", transport });
        const error = await forged.toolNames().catch((caught) => caught);
        assert.ok(error instanceof AuthError, String(error));
        assert.ok(error instanceof SeepientError);
        assert.equal(error.status, 401);
        assert.match(error.message, /missing or invalid bearer token/);
        const raw = await fetch(`${env.url}/v1/sessions`);
        assert.equal(raw.status, 401);
    });

    it("another principal's session and a missing one: NotFoundError", async () => {
        const mine = await session(client({ transport }), [{ text: "hi" }]);
        const other = new Seepient({ baseUrl: env.url, token: env.otherToken, transport });
        for (const id of [mine.id, "ses_doesnotexist0000000"]) {
            const error = await other.sessions.get(id).catch((caught) => caught);
            assert.ok(error instanceof NotFoundError, String(error));
            assert.equal(error.status, 404);
            assert.equal(error.message, `no session ${id}`);
        }
        // Aimed at the session's id directly, the other principal is refused the same way and nothing runs.
        const stolen = new Session(other, { id: mine.id, workspace: "", model: "", mode: "", status: "", last_seq: 0, created_at: "", updated_at: "" });
        for (const attempt of [() => stolen.chat("hijack"), () => stolen.events({ follow: false }).next(), () => stolen.interrupt()]) {
            const error = await attempt().catch((caught) => caught);
            assert.ok(error instanceof NotFoundError, String(error));
        }
        assert.deepEqual((await mine.detail()).turns, []);
    });

    it("a workspace outside the granted root: ForbiddenError", async () => {
        const error = await client({ transport })
            .sessions.create({ workspace: env.outside, model: replay([{ text: "x" }]) })
            .catch((caught) => caught);
        assert.ok(error instanceof ForbiddenError, String(error));
        assert.equal(error.status, 403);
    });

    it("a body over the server's limit: PayloadTooLargeError", async () => {
        const remote = await session(client({ transport }), [{ text: "x" }]);
        const error = await remote.chat("x".repeat(1_100_000)).catch((caught) => caught);
        assert.ok(error instanceof PayloadTooLargeError, String(error));
        assert.equal(error.status, 413);
        assert.match(error.message, /larger than the limit/);
    });

    it("over the token's rate: RateLimitError with retryAfter", async () => {
        const limited = new Seepient({ baseUrl: env.url, token: env.limitedToken, transport });
        let refused = [];
        // Bursts of 120 against a bucket of 60 refilled at 20 per second: one of five is refused in part
        // however slow the machine.
        for (let burst = 0; burst < 5 && refused.length === 0; burst++) {
            const outcomes = await Promise.allSettled(Array.from({ length: 120 }, () => limited.sessions.list()));
            refused = outcomes.filter((outcome) => outcome.status === "rejected").map((outcome) => outcome.reason);
        }
        assert.ok(refused.length > 0, "bursts of 120 requests exceed the default burst of 60");
        for (const error of refused) {
            assert.ok(error instanceof RateLimitError, String(error));
            assert.equal(error.status, 429);
            assert.ok(error.retryAfter >= 1, `retryAfter ${error.retryAfter}`);
            assert.match(error.message, /rate limit/);
        }
    });
});
