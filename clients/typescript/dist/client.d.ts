import type { ApprovalAnswer, AuditView, Grants, ApprovalAnswered, ApprovalRequest, Health, PermissionRequest, PostMessage, RuntimeEvent, SessionDetail, SessionView, ToolResult, ToolView, TurnAccepted, TurnCompleted, Usage } from "./types.js";
/** How a turn's events reach the client. `auto` uses a WebSocket where the platform has one, else SSE. */
export declare type Transport = "auto" | "sse" | "websocket";
/** A WebSocket constructor (the platform's, or one passed in such as the `ws` package's). */
export declare type WebSocketConstructor = new (url: string, protocols?: string | string[]) => WebSocket;
export interface ReconnectOptions {
    /** Attempts in a row without receiving an event before giving up (default 5). */
    attempts?: number;
    /** First delay between attempts in milliseconds, doubled each time (default 100). */
    baseDelayMs?: number;
    /** Longest delay between attempts in milliseconds (default 2000). */
    maxDelayMs?: number;
}
export interface SeepientOptions {
    /** The server, e.g. `http://127.0.0.1:7337`. */
    baseUrl: string;
    /** A bearer token from `seepient tokens create --principal NAME`. */
    token: string;
    /** How events are received (default `auto`). */
    transport?: Transport;
    /** The fetch to use (default the global one). */
    fetch?: typeof fetch;
    /** The WebSocket to use (default the global one, if any). */
    WebSocket?: WebSocketConstructor;
    /** Time limit of each REST request in milliseconds (default 30000). */
    timeoutMs?: number;
    reconnect?: ReconnectOptions;
}
/**
 * What a permission handler answers: `true` approves once, `false` rejects, or a full answer
 * (`approveSession(scope)`, `reject(feedback)`). `undefined` or `null` leaves the request pending for
 * another client (or the server's timeout, which rejects it).
 */
export declare type PermissionAnswer = boolean | ApprovalAnswer | null | undefined;
/** What a permission handler is told besides the request. */
export interface PermissionContext {
    /** The `permission_request` event that carried the request. */
    event: PermissionRequest;
    /**
     * Aborted when the request is settled without this handler (a standing session grant, the auto-mode
     * classifier, another client, the server's timeout) or the stream stops: close any prompt then; the
     * answer is no longer sent.
     */
    signal: AbortSignal;
    session: Session;
}
export declare type PermissionHandler = (request: ApprovalRequest, context: PermissionContext) => PermissionAnswer | Promise<PermissionAnswer>;
export interface TurnOptions {
    /** Answers this turn's permission requests instead of the session's handler. */
    onPermissionRequest?: PermissionHandler;
    /** Stops reading the stream (the turn keeps running on the server: `interrupt()` stops it). */
    signal?: AbortSignal;
}
export interface EventsOptions {
    /** Deliver events with a sequence number above this one (default 0: from the beginning). */
    after?: number;
    /** Keep the stream open for new events (default true). */
    follow?: boolean;
    signal?: AbortSignal;
}
/** One finished turn. */
export interface Reply {
    turnId: string;
    /** The model's final text. */
    text: string;
    /** Why the turn ended: `final` (the model answered), `step_limit`, `budget` (its token or wall-time budget ran out), `interrupted` or `error`. */
    reason: TurnCompleted["reason"];
    steps: number;
    usage: Usage;
    /** The message of the turn's last `error` event, when it ended with `error`. */
    error: string | null;
    /** Every event of the turn, from `turn_started` to `turn_completed`. */
    events: RuntimeEvent[];
    toolResults: ToolResult[];
}
/** Approve this request only. */
export declare function approveOnce(): ApprovalAnswer;
/** Approve this and similar actions for the rest of the session; `scope` is the `kind` of one of `request.scopes`. */
export declare function approveSession(scope?: string): ApprovalAnswer;
/** Reject the action; `feedback` is told to the model as the tool's result. */
export declare function reject(feedback?: string): ApprovalAnswer;
/** A Seepient server used with one bearer token. */
export declare class Seepient {
    #private;
    readonly baseUrl: string;
    readonly sessions: Sessions;
    readonly transport: Transport;
    constructor(options: SeepientOptions);
    /** The server's status and version (needs no token). */
    health(): Promise<Health>;
    /** The tools sessions on this server can use. */
    tools(): Promise<ToolView[]>;
    /** What this token's principal may open sessions with: its roots, models and consent modes. */
    me(): Promise<Grants>;
    /** Markdown as HTML the server rendered with raw HTML off and sanitised (up to 200 texts at once). */
    renderMarkdown(texts: string[]): Promise<string[]>;
    /** The names of the tools sessions on this server can use. */
    toolNames(): Promise<string[]>;
}
/** The sessions of this token's principal. */
export declare class Sessions {
    #private;
    constructor(client: Seepient);
    /** Open a session on `workspace` (a directory the server grants you) with `model` and consent `mode`. */
    create(options: {
        workspace: string;
        model: string;
        mode?: string | null;
    }): Promise<Session>;
    /** A session by id (`NotFoundError` if it does not exist or belongs to someone else). */
    get(id: string): Promise<Session>;
    list(): Promise<SessionView[]>;
}
/** A session on the server: run turns, read their events, answer approvals, interrupt. */
export declare class Session {
    #private;
    readonly id: string;
    readonly workspace: string;
    readonly model: string;
    readonly mode: string;
    /** The highest event sequence number this object has delivered; streams resume after it. */
    lastSeq: number;
    constructor(client: Seepient, view: SessionView);
    /**
     * Answer this session's permission requests with `handler` (it replaces any earlier one). Without a
     * handler, requests stay pending for another client or until the server's timeout rejects them.
     * Returns a function that removes the handler.
     */
    onPermissionRequest(handler: PermissionHandler): () => void;
    /** Run a turn and resolve to its reply once `turn_completed` arrives. */
    chat(prompt: string, options?: TurnOptions): Promise<Reply>;
    /**
     * Start a turn and yield its events, from `turn_started` to `turn_completed`, in order and once each.
     * Each permission request goes to the handler while the stream goes on, and its answer is sent back
     * unless the request was settled another way first (a grant, another client). A handler that throws
     * ends the stream with its error. A dropped connection is reopened after the last sequence number
     * received.
     */
    stream(prompt: string, options?: TurnOptions): AsyncGenerator<RuntimeEvent, void, undefined>;
    /**
     * The session's events after `after`, in order and once each, resumed after the last one delivered
     * whenever the connection drops (up to `reconnect.attempts` times in a row without progress).
     */
    events(options?: EventsOptions): AsyncGenerator<RuntimeEvent, void, undefined>;
    /**
     * Start a turn without reading its events: for a page that follows the session with `events()` and shows
     * every turn, whoever started it. Rejected with `ConflictError` while another turn runs.
     */
    send(message: PostMessage, options?: {
        signal?: AbortSignal;
    }): Promise<TurnAccepted>;
    /** Answer a pending approval request (the handler does this for you during `chat` and `stream`). */
    answer(requestId: string, answer: ApprovalAnswer): Promise<ApprovalAnswered>;
    /** Stop the running turn (it ends with `turn_completed` and reason `interrupted`); false when none ran. */
    interrupt(): Promise<boolean>;
    /** The session with its turns, messages and pending approvals. */
    detail(): Promise<SessionDetail>;
    /** The session's audit records and whether the hash chain they are in verifies. */
    audit(): Promise<AuditView>;
    delete(): Promise<void>;
}
