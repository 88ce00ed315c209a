// What the tests share: the server they were pointed at, replay scripts, and a proxy that drops connections.

import { randomUUID } from "node:crypto";
import { writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";

import { Seepient } from "@seepient/client";

const NEEDED = ["SEEPIENT_URL", "SEEPIENT_TOKEN", "SEEPIENT_OTHER_TOKEN", "SEEPIENT_LIMITED_TOKEN", "SEEPIENT_WORKSPACE", "SEEPIENT_SCRATCH", "SEEPIENT_OUTSIDE"];
const missing = NEEDED.filter((name) => !process.env[name]);

/** Why the server tests cannot run (missing environment), or false when they can. */
export const skipServer =
    missing.length > 0
        ? `needs a running seepient serve: set ${missing.join(", ")} (tests/e2e/test_typescript_sdk.py does)`
        : false;

export const env = {
    url: process.env.SEEPIENT_URL ?? "",
    token: process.env.SEEPIENT_TOKEN ?? "",
    otherToken: process.env.SEEPIENT_OTHER_TOKEN ?? "",
    limitedToken: process.env.SEEPIENT_LIMITED_TOKEN ?? "",
    workspace: process.env.SEEPIENT_WORKSPACE ?? "",
    scratch: process.env.SEEPIENT_SCRATCH ?? "",
    outside: process.env.SEEPIENT_OUTSIDE ?? "",
};

/** A replay script (JSON: a list of assistant turns) in the scratch directory; returns its model spec. */
export function replay(turns) {
    const file = path.join(env.scratch, `script-${randomUUID()}.json`);
    writeFileSync(file, JSON.stringify(turns));
    return `replay:${file}`;
}

export function writeFile(relative, content) {
    return { tool_calls: [{ name: "write_file", arguments: { path: relative, content } }] };
}

export function client(options = {}) {
    return new Seepient({ baseUrl: env.url, token: env.token, ...options });
}

export async function session(seepient, turns, mode = "always-ask") {
    return seepient.sessions.create({ workspace: env.workspace, model: replay(turns), mode });
}

/** A unique file name in the workspace, so tests sharing it never collide. */
export function unique(stem) {
    return `${stem}-${randomUUID().slice(0, 8)}.txt`;
}

/**
 * A TCP proxy to the server that cuts the first connection carrying a request whose line matches `match`
 * after `cutAfter` bytes of its answer, as a network failure would: the client sees its stream end in the
 * middle of an event and the server's side of the connection torn down.
 */
export class CuttingProxy {
    constructor({ match, cutAfter }) {
        this.match = match;
        this.cutAfter = cutAfter;
        this.cuts = 0;
        this.requests = [];
        this.sockets = new Set();
        this.server = net.createServer((downstream) => this.#handle(downstream));
    }

    async start() {
        await new Promise((resolve) => this.server.listen(0, "127.0.0.1", resolve));
        this.url = `http://127.0.0.1:${this.server.address().port}`;
        return this;
    }

    async close() {
        for (const socket of this.sockets) {
            socket.destroy();
        }
        await new Promise((resolve) => this.server.close(resolve));
    }

    #handle(downstream) {
        const target = new URL(env.url);
        const upstream = net.connect(Number(target.port), target.hostname);
        downstream.setNoDelay(true);
        upstream.setNoDelay(true);
        this.sockets.add(downstream);
        this.sockets.add(upstream);
        let armed = false;
        let counted = 0;
        let cutHere = false;
        downstream.on("data", (chunk) => {
            const text = chunk.toString("latin1");
            for (const line of text.match(/^(GET|POST|DELETE) \S+ HTTP\/1\.1$/gm) ?? []) {
                this.requests.push(line.split(" ")[1]);
                if (this.cuts === 0 && this.match.test(line)) {
                    armed = true;
                }
            }
            upstream.write(chunk);
        });
        upstream.on("data", (chunk) => {
            if (armed && this.cuts === 0 && counted + chunk.length > this.cutAfter) {
                // Deliver up to the cut, in the middle of an event, and let the client read it; then close:
                // the answer never completes.
                this.cuts += 1;
                cutHere = true;
                armed = false;
                upstream.destroy();
                downstream.write(chunk.subarray(0, this.cutAfter - counted));
                setTimeout(() => downstream.end(), 200);
                return;
            }
            if (armed) {
                counted += chunk.length;
            }
            downstream.write(chunk);
        });
        const end = () => {
            if (cutHere && !downstream.writableEnded) {
                return; // the cut closes the client's side itself, once it has read what came before
            }
            downstream.destroy();
            upstream.destroy();
            this.sockets.delete(downstream);
            this.sockets.delete(upstream);
        };
        downstream.on("close", end);
        upstream.on("close", end);
        downstream.on("error", () => undefined);
        upstream.on("error", () => undefined);
    }
}

/** The sequence numbers of `events` are consecutive: nothing was lost and nothing repeated. */
export function consecutive(events) {
    const seqs = events.map((event) => event.seq);
    return seqs.every((seq, i) => i === 0 || seq === seqs[i - 1] + 1);
}
