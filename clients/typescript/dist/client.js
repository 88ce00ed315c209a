// The client of a Seepient server: sessions and tools over REST, each turn's runtime events over
// Server-Sent Events (read from a streamed fetch) or a WebSocket, with approvals answered and a dropped
// stream resumed after the last sequence number it delivered.
import { ConnectionError, RateLimitError, SeepientError, errorFromResponse } from "./errors.js";
import { readServerSentEvents } from "./sse.js";
/** Approve this request only. */
export function approveOnce() {
    return { decision: "approve_once" };
}
/** Approve this and similar actions for the rest of the session; `scope` is the `kind` of one of `request.scopes`. */
export function approveSession(scope) {
    return scope === undefined ? { decision: "approve_session" } : { decision: "approve_session", scope };
}
/** Reject the action; `feedback` is told to the model as the tool's result. */
export function reject(feedback) {
    return feedback === undefined ? { decision: "reject" } : { decision: "reject", feedback };
}
const WS_SUBPROTOCOL = "seepient.v1";
/** A Seepient server used with one bearer token. */
export class Seepient {
    baseUrl;
    sessions;
    transport;
    /** @internal */
    _fetch;
    /** @internal */
    _WebSocket;
    /** @internal */
    _reconnect;
    #token;
    #timeoutMs;
    constructor(options) {
        if (!options || typeof options.baseUrl !== "string" || options.baseUrl === "") {
            throw new TypeError("new Seepient({baseUrl, token}): baseUrl is the server's URL, e.g. http://127.0.0.1:7337");
        }
        if (typeof options.token !== "string" || options.token === "") {
            throw new TypeError("new Seepient({baseUrl, token}): token is a bearer token from `seepient tokens create`");
        }
        const fetchImpl = options.fetch ?? globalThis.fetch;
        if (typeof fetchImpl !== "function") {
            throw new TypeError("this platform has no global fetch: pass one as new Seepient({fetch})");
        }
        this.baseUrl = options.baseUrl.replace(/\/+$/, "");
        this.#token = options.token;
        this.#timeoutMs = options.timeoutMs ?? 30000;
        this._fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
        this._WebSocket = options.WebSocket ?? (typeof globalThis.WebSocket === "function" ? globalThis.WebSocket : undefined);
        const transport = options.transport ?? "auto";
        if (transport === "websocket" && this._WebSocket === undefined) {
            throw new TypeError("transport 'websocket' needs a WebSocket: this platform has none (Node 20: --experimental-websocket), " +
                "so pass one as new Seepient({WebSocket}) or use transport 'sse'");
        }
        this.transport = transport === "auto" ? (this._WebSocket ? "websocket" : "sse") : transport;
        this._reconnect = {
            attempts: options.reconnect?.attempts ?? 5,
            baseDelayMs: options.reconnect?.baseDelayMs ?? 100,
            maxDelayMs: options.reconnect?.maxDelayMs ?? 2000,
        };
        this.sessions = new Sessions(this);
    }
    /** The server's status and version (needs no token). */
    health() {
        return this._request("GET", "/v1/health");
    }
    /** The tools sessions on this server can use. */
    tools() {
        return this._request("GET", "/v1/tools");
    }
    /** What this token's principal may open sessions with: its roots, models and consent modes. */
    me() {
        return this._request("GET", "/v1/me");
    }
    /** Markdown as HTML the server rendered with raw HTML off and sanitised (up to 200 texts at once). */
    async renderMarkdown(texts) {
        return (await this._request("POST", "/v1/render/markdown", { body: { texts } })).html;
    }
    /** The names of the tools sessions on this server can use. */
    async toolNames() {
        return (await this.tools()).map((tool) => tool.name);
    }
    /** @internal */
    _headers(extra) {
        return { Authorization: `Bearer ${this.#token}`, ...extra };
    }
    /** @internal */
    _webSocketProtocols() {
        // Browsers cannot set headers on a WebSocket: the token travels as a subprotocol the server never echoes.
        return [WS_SUBPROTOCOL, `bearer.${this.#token}`];
    }
    /** @internal */
    async _request(method, path, options = {}) {
        const limit = options.timeoutMs === undefined ? this.#timeoutMs : options.timeoutMs;
        const { signal, cancel } = linkedSignal(options.signal, limit);
        const url = this.baseUrl + path;
        try {
            let response;
            try {
                response = await this._fetch(url, {
                    method,
                    headers: this._headers(options.body === undefined
                        ? { Accept: "application/json" }
                        : { Accept: "application/json", "Content-Type": "application/json" }),
                    body: options.body === undefined ? null : JSON.stringify(options.body),
                    signal,
                });
            }
            catch (error) {
                throw networkError(error, options.signal, `${method} ${url}`, limit);
            }
            let text;
            try {
                text = await response.text();
            }
            catch (error) {
                throw networkError(error, options.signal, `${method} ${url}`, limit);
            }
            if (!response.ok) {
                throw errorFromResponse(response.status, text, response.headers);
            }
            return (text ? JSON.parse(text) : undefined);
        }
        finally {
            cancel();
        }
    }
}
/** The sessions of this token's principal. */
export class Sessions {
    #client;
    constructor(client) {
        this.#client = client;
    }
    /** Open a session on `workspace` (a directory the server grants you) with `model` and consent `mode`. */
    async create(options) {
        const view = await this.#client._request("POST", "/v1/sessions", {
            body: { workspace: options.workspace, model: options.model, mode: options.mode ?? null },
        });
        return new Session(this.#client, view);
    }
    /** A session by id (`NotFoundError` if it does not exist or belongs to someone else). */
    async get(id) {
        return new Session(this.#client, await this.#client._request("GET", `/v1/sessions/${encodeURIComponent(id)}`));
    }
    list() {
        return this.#client._request("GET", "/v1/sessions");
    }
}
/** A session on the server: run turns, read their events, answer approvals, interrupt. */
export class Session {
    id;
    workspace;
    model;
    mode;
    /** The highest event sequence number this object has delivered; streams resume after it. */
    lastSeq;
    #client;
    #path;
    #handler;
    constructor(client, view) {
        this.#client = client;
        this.id = view.id;
        this.workspace = view.workspace;
        this.model = view.model;
        this.mode = view.mode;
        this.lastSeq = view.last_seq ?? 0;
        this.#path = `/v1/sessions/${encodeURIComponent(view.id)}`;
    }
    /**
     * Answer this session's permission requests with `handler` (it replaces any earlier one). Without a
     * handler, requests stay pending for another client or until the server's timeout rejects them.
     * Returns a function that removes the handler.
     */
    onPermissionRequest(handler) {
        this.#handler = handler;
        return () => {
            if (this.#handler === handler) {
                this.#handler = undefined;
            }
        };
    }
    /** Run a turn and resolve to its reply once `turn_completed` arrives. */
    async chat(prompt, options = {}) {
        const events = [];
        for await (const event of this.stream(prompt, options)) {
            events.push(event);
        }
        const last = events[events.length - 1];
        if (last === undefined || last.type !== "turn_completed") {
            throw new ConnectionError("the turn's event stream ended without turn_completed");
        }
        const errors = events.filter((event) => event.type === "error");
        const lastError = errors[errors.length - 1];
        return {
            turnId: last.turn_id,
            text: last.text,
            reason: last.reason,
            steps: last.steps,
            usage: last.usage,
            error: last.reason === "error" && lastError?.type === "error" ? lastError.message : null,
            events,
            toolResults: events.filter((event) => event.type === "tool_result"),
        };
    }
    /**
     * Start a turn and yield its events, from `turn_started` to `turn_completed`, in order and once each.
     * Each permission request goes to the handler while the stream goes on, and its answer is sent back
     * unless the request was settled another way first (a grant, another client). A handler that throws
     * ends the stream with its error. A dropped connection is reopened after the last sequence number
     * received.
     */
    async *stream(prompt, options = {}) {
        const after = this.lastSeq;
        const accepted = await this.#client._request("POST", `${this.#path}/messages`, {
            body: { prompt },
            signal: options.signal,
        });
        const turnId = accepted.turn_id;
        // Reading stops on the caller's signal, or with the error of a failed handler.
        const reading = new AbortController();
        const stopReading = () => reading.abort(options.signal?.reason);
        options.signal?.addEventListener("abort", stopReading, { once: true });
        const deciding = new Map();
        let started = false;
        try {
            for await (const event of this.events({ after, follow: true, signal: reading.signal })) {
                const eventTurn = event.turn_id ?? null;
                if (!started) {
                    // Events replayed from before this turn (another client's turns) are not part of it.
                    if (event.type !== "turn_started" || eventTurn !== turnId) {
                        continue;
                    }
                    started = true;
                }
                if (eventTurn !== null && eventTurn !== turnId) {
                    continue;
                }
                if (event.type === "permission_resolved") {
                    deciding.get(event.request_id)?.abort(new Error(`approval request ${event.request_id} was settled`));
                    deciding.delete(event.request_id);
                }
                yield event;
                if (event.type === "permission_request") {
                    const handler = options.onPermissionRequest ?? this.#handler;
                    if (handler !== undefined) {
                        const settled = new AbortController();
                        deciding.set(event.request.request_id, settled);
                        this.#decide(handler, event, settled.signal).then(() => deciding.delete(event.request.request_id), (error) => reading.abort(error));
                    }
                }
                else if (event.type === "turn_completed") {
                    return;
                }
            }
        }
        finally {
            options.signal?.removeEventListener("abort", stopReading);
            for (const settled of deciding.values()) {
                settled.abort(new Error("the stream stopped"));
            }
        }
    }
    /**
     * The session's events after `after`, in order and once each, resumed after the last one delivered
     * whenever the connection drops (up to `reconnect.attempts` times in a row without progress).
     */
    async *events(options = {}) {
        let last = options.after ?? 0;
        const follow = options.follow ?? true;
        const useWebSocket = follow && this.#client.transport === "websocket";
        const { attempts, baseDelayMs, maxDelayMs } = this.#client._reconnect;
        let failures = 0;
        for (;;) {
            const connection = new AbortController();
            const stop = () => connection.abort();
            options.signal?.addEventListener("abort", stop, { once: true });
            let wait = 0;
            try {
                throwIfAborted(options.signal);
                const source = useWebSocket
                    ? this.#webSocketEvents(last, connection.signal)
                    : this.#sseEvents(last, follow, connection.signal);
                for await (const event of source) {
                    if (event.seq <= last) {
                        continue; // already delivered before the reconnection
                    }
                    last = event.seq;
                    this.lastSeq = Math.max(this.lastSeq, event.seq);
                    failures = 0;
                    yield event;
                    // Events already read are not delivered once the caller has stopped.
                    throwIfAborted(options.signal);
                }
                if (!follow) {
                    return;
                }
                // The server ended a followed stream (it restarts, or this reader fell too far behind): resume.
            }
            catch (error) {
                throwIfAborted(options.signal);
                if (error instanceof RateLimitError) {
                    wait = error.retryAfter * 1000;
                }
                else if (error instanceof SeepientError && !(error instanceof ConnectionError) && error.status < 500) {
                    throw error;
                }
                failures += 1;
                if (failures > attempts) {
                    throw new ConnectionError(`the event stream of session ${this.id} dropped ${failures} times in a row; the last error: ` +
                        `${error instanceof Error ? error.message : String(error)}`, { cause: error });
                }
            }
            finally {
                options.signal?.removeEventListener("abort", stop);
                connection.abort();
            }
            await sleep(Math.max(wait, Math.min(maxDelayMs, baseDelayMs * 2 ** Math.max(0, failures - 1))), options.signal);
        }
    }
    /**
     * Start a turn without reading its events: for a page that follows the session with `events()` and shows
     * every turn, whoever started it. Rejected with `ConflictError` while another turn runs.
     */
    send(message, options = {}) {
        return this.#client._request("POST", `${this.#path}/messages`, {
            body: message,
            signal: options.signal,
        });
    }
    /** Answer a pending approval request (the handler does this for you during `chat` and `stream`). */
    answer(requestId, answer) {
        return this.#client._request("POST", `${this.#path}/approvals/${encodeURIComponent(requestId)}`, {
            body: answer,
        });
    }
    /** Stop the running turn (it ends with `turn_completed` and reason `interrupted`); false when none ran. */
    async interrupt() {
        return (await this.#client._request("POST", `${this.#path}/interrupt`)).interrupted;
    }
    /** The session with its turns, messages and pending approvals. */
    detail() {
        return this.#client._request("GET", this.#path);
    }
    /** The session's audit records and whether the hash chain they are in verifies. */
    audit() {
        return this.#client._request("GET", `${this.#path}/audit`);
    }
    async delete() {
        await this.#client._request("DELETE", this.#path);
    }
    async #decide(handler, event, signal) {
        // One turn of the event loop first: a request a standing grant answers is resolved in the same batch
        // of events, and then no one needs to be asked.
        await new Promise((resolve) => setTimeout(resolve, 0));
        if (signal.aborted) {
            return;
        }
        const given = await handler(event.request, { event, signal, session: this });
        if (signal.aborted || given === undefined || given === null) {
            return;
        }
        const answer = typeof given === "boolean" ? (given ? approveOnce() : reject()) : given;
        try {
            await this.answer(event.request.request_id, answer);
        }
        catch (error) {
            // 404/409: it is no longer waiting (another client answered it, or the server's timeout did).
            if (!(error instanceof SeepientError) || (error.status !== 404 && error.status !== 409)) {
                throw error;
            }
        }
    }
    async *#sseEvents(after, follow, signal) {
        const url = `${this.#client.baseUrl}${this.#path}/events?after=${after}&follow=${follow}`;
        let response;
        try {
            response = await this.#client._fetch(url, {
                headers: this.#client._headers({ Accept: "text/event-stream" }),
                signal,
            });
        }
        catch (error) {
            throw networkError(error, undefined, `GET ${url}`, null);
        }
        if (!response.ok) {
            throw errorFromResponse(response.status, await response.text().catch(() => ""), response.headers);
        }
        if (response.body === null) {
            throw new SeepientError(0, "this platform's fetch does not stream response bodies: use transport 'websocket'");
        }
        for await (const message of readServerSentEvents(response.body)) {
            yield parseEvent(message.data);
        }
    }
    async *#webSocketEvents(after, signal) {
        const Socket = this.#client._WebSocket;
        const url = `${this.#client.baseUrl.replace(/^http/, "ws")}${this.#path}/ws?after=${after}`;
        const socket = new Socket(url, this.#client._webSocketProtocols());
        const frames = new Channel();
        let opened = false;
        socket.onopen = () => {
            opened = true;
        };
        socket.onmessage = (message) => frames.push(String(message.data));
        socket.onerror = () => undefined; // a close event follows and says more
        socket.onclose = (close) => frames.fail(new WebSocketClosed(opened, close.code, close.reason));
        const onAbort = () => socket.close(1000);
        signal.addEventListener("abort", onAbort, { once: true });
        try {
            for (;;) {
                let frame;
                try {
                    frame = await frames.next();
                }
                catch (error) {
                    if (error instanceof WebSocketClosed && !error.opened) {
                        // The handshake was refused (bad token, no such session) and the browser API does not
                        // say why; the same question over REST gets the typed answer.
                        await this.detail();
                    }
                    throw error;
                }
                const event = parseEvent(frame);
                if (event.type === "client_error") {
                    throw new SeepientError(400, event.message);
                }
                yield event;
            }
        }
        finally {
            signal.removeEventListener("abort", onAbort);
            if (socket.readyState === 0 || socket.readyState === 1) {
                socket.close(1000);
            }
        }
    }
}
class WebSocketClosed extends ConnectionError {
    opened;
    constructor(opened, code, reason) {
        super(opened
            ? `the WebSocket closed (code ${code}${reason ? `: ${reason}` : ""})`
            : `the server refused the WebSocket (code ${code}${reason ? `: ${reason}` : ""})`);
        this.opened = opened;
    }
}
/** Values pushed by callbacks, taken in order by one reader; a failure is thrown after what came before it. */
class Channel {
    #items = [];
    #failure = undefined;
    #failed = false;
    #wake;
    push(item) {
        this.#items.push(item);
        this.#wake?.();
    }
    fail(error) {
        if (!this.#failed) {
            this.#failed = true;
            this.#failure = error;
            this.#wake?.();
        }
    }
    async next() {
        while (this.#items.length === 0) {
            if (this.#failed) {
                throw this.#failure;
            }
            await new Promise((resolve) => {
                this.#wake = resolve;
            });
            this.#wake = undefined;
        }
        return this.#items.shift();
    }
}
function parseEvent(data) {
    let event;
    try {
        event = JSON.parse(data);
    }
    catch {
        throw new SeepientError(0, `the server sent an event that is not JSON: ${data.slice(0, 200)}`);
    }
    if (!event || typeof event !== "object" || typeof event.type !== "string") {
        throw new SeepientError(0, `the server sent an event without a type: ${data.slice(0, 200)}`);
    }
    // Events of a type newer than this client pass through as they came: switch on `type` with a default.
    return event;
}
function networkError(error, userSignal, what, timeoutMs) {
    if (userSignal?.aborted) {
        return userSignal.reason ?? error;
    }
    if (error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError") && timeoutMs !== null) {
        return new ConnectionError(`${what}: no answer within ${timeoutMs} ms`, { cause: error });
    }
    const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : "";
    return new ConnectionError(`${what} failed: ${error instanceof Error ? error.message : String(error)}${cause}`, {
        cause: error,
    });
}
function linkedSignal(outer, timeoutMs) {
    const controller = new AbortController();
    const abort = () => controller.abort(outer?.reason);
    if (outer?.aborted) {
        abort();
    }
    outer?.addEventListener("abort", abort, { once: true });
    const timer = timeoutMs === null ? undefined : setTimeout(() => controller.abort(), timeoutMs);
    return {
        signal: controller.signal,
        cancel: () => {
            if (timer !== undefined) {
                clearTimeout(timer);
            }
            outer?.removeEventListener("abort", abort);
        },
    };
}
function throwIfAborted(signal) {
    if (signal?.aborted) {
        throw signal.reason ?? new DOMException("the operation was aborted", "AbortError");
    }
}
function sleep(ms, signal) {
    return new Promise((resolve, reject) => {
        if (signal?.aborted) {
            reject(signal.reason);
            return;
        }
        const timer = setTimeout(() => {
            signal?.removeEventListener("abort", onAbort);
            resolve();
        }, ms);
        const onAbort = () => {
            clearTimeout(timer);
            reject(signal?.reason);
        };
        signal?.addEventListener("abort", onAbort, { once: true });
    });
}
