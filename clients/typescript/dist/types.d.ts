/** Every runtime event the server streams, discriminated by `type`. */
export declare type RuntimeEvent = TurnStarted | TextDelta | ReasoningDelta | ToolCallEvent | PermissionRequest | PermissionResolved | ToolResult | TurnCompleted | ErrorEvent | CompactionEvent | SubagentEvent | TodoUpdated;
/** The `type` of a runtime event. */
export declare type RuntimeEventType = RuntimeEvent["type"];
export interface TurnStarted {
    session_id: string;
    seq: number;
    ts: number;
    type: "turn_started";
    turn_id: string;
    prompt: string;
}
export interface TextDelta {
    session_id: string;
    seq: number;
    ts: number;
    type: "text_delta";
    turn_id: string;
    text: string;
}
/**
 * A piece of the model's reasoning (Anthropic thinking, a Responses reasoning summary), shown apart from
 * its answer; adapters that receive none emit none.
 */
export interface ReasoningDelta {
    session_id: string;
    seq: number;
    ts: number;
    type: "reasoning_delta";
    turn_id: string;
    text: string;
}
export interface ToolCallEvent {
    session_id: string;
    seq: number;
    ts: number;
    type: "tool_call";
    turn_id: string;
    call: ToolCall;
}
export interface PermissionRequest {
    session_id: string;
    seq: number;
    ts: number;
    type: "permission_request";
    turn_id: string;
    request: ApprovalRequest;
}
export interface PermissionResolved {
    session_id: string;
    seq: number;
    ts: number;
    type: "permission_resolved";
    turn_id: string;
    request_id: string;
    response: ApprovalResponse;
}
/** ``status`` is ``ok``, ``error`` (the tool failed), ``denied`` (policy) or ``rejected`` (a person). */
export interface ToolResult {
    session_id: string;
    seq: number;
    ts: number;
    type: "tool_result";
    turn_id: string;
    call_id: string;
    tool: string;
    status: "ok" | "error" | "denied" | "rejected";
    output: string;
    action_id: string | null;
    digest: string | null;
    data: {
        [key: string]: unknown;
    };
    summary: string | null;
}
/**
 * ``reason``: ``final`` (the model answered), ``step_limit``, ``budget`` (the turn's token or wall-time
 * budget ran out), ``interrupted`` or ``error``.
 */
export interface TurnCompleted {
    session_id: string;
    seq: number;
    ts: number;
    type: "turn_completed";
    turn_id: string;
    reason: "final" | "step_limit" | "budget" | "interrupted" | "error";
    text: string;
    usage: Usage;
    steps: number;
}
export interface ErrorEvent {
    session_id: string;
    seq: number;
    ts: number;
    type: "error";
    turn_id: string | null;
    code: string;
    message: string;
}
/**
 * The history was shortened to fit the model's window: old tool outputs pruned, older turns summarised.
 *
 * Token counts are estimates; ``summary_error`` is set when the summary call failed and a plain digest of
 * the older turns stood in for it.
 */
export interface CompactionEvent {
    session_id: string;
    seq: number;
    ts: number;
    type: "compaction";
    turn_id: string | null;
    reason: "threshold" | "forced";
    tokens_before: number;
    tokens_after: number;
    window_tokens: number;
    pruned_tool_outputs: number;
    summarised_messages: number;
    summary_model: string | null;
    summary_error: string | null;
}
/**
 * An event of a sub-agent's session, relayed to its parent's surfaces: ``agent_id`` is the child session,
 * ``call_id`` the parent's ``agent`` call that started it, ``event`` the child's own event as JSON (itself a
 * ``subagent_event`` when a grandchild spoke).
 */
export interface SubagentEvent {
    session_id: string;
    seq: number;
    ts: number;
    type: "subagent_event";
    agent_id: string;
    call_id: string;
    depth: number;
    event: {
        [key: string]: unknown;
    };
}
/** The model replaced its todo list; ``items`` is the whole new list, in its order. */
export interface TodoUpdated {
    session_id: string;
    seq: number;
    ts: number;
    type: "todo_updated";
    turn_id: string | null;
    items: TodoItem[];
}
export declare type ActionKind = "read" | "file_change" | "shell" | "fetch" | "mcp" | "agent" | "state" | "worktree" | "process";
/**
 * Start a sub-agent: a child session that works on ``task`` with ``tools`` (a subset of its parent's)
 * in consent ``mode`` (never looser than the parent's), in ``workspace`` (the parent's, or a worktree).
 */
export interface AgentTask {
    type: "agent";
    task: string;
    tools: string[];
    mode: string;
    workspace: string;
    worktree: string | null;
    depth: number;
    parent_session_id: string;
}
export declare type ApprovalDecision = "approve_once" | "approve_session" | "approve_project" | "reject" | "reject_session";
export interface ApprovalRequest {
    request_id: string;
    session_id: string;
    action: PreparedActionDraft;
    verdict: Verdict;
    scopes: ApprovalScope[];
    project_rule: string | null;
    agent: string | null;
}
/**
 * ``digest`` must equal the request's action digest, or the answer does not apply.
 *
 * ``approved_by`` says who answered (``user``, ``flag:-y``, ``grant:session``, ``classifier``, ``headless``).
 * ``scope`` names the ``kind`` of the offered ``ApprovalScope`` an ``approve_session`` (or ``reject_session``)
 * answer chose; a ``reject_session`` without one refuses this exact action.
 */
export interface ApprovalResponse {
    decision: ApprovalDecision;
    digest: string;
    feedback: string | null;
    scope: string | null;
    approved_by: string;
}
/**
 * What "approve for this session" would cover: ``exact`` (this digest), ``prefix`` (shell commands whose
 * every simple command starts with ``value``'s words) or ``directory`` (file changes under ``value``,
 * workspace-relative). ``label`` is the human wording shown with the choice.
 */
export interface ApprovalScope {
    kind: "exact" | "prefix" | "directory";
    value: string;
    label: string;
}
export declare type Capability = "network" | "write_workspace" | "write_outside" | "process_control" | "privilege" | "destructive";
export declare type Decision = "allow" | "ask" | "deny";
/** Replace the exact text ``search`` (which must occur exactly once unless ``replace_all``). */
export interface EditBlock {
    search: string;
    replace: string;
    replace_all: boolean;
}
export interface FetchRequest {
    type: "fetch";
    url: string;
    method: "GET" | "HEAD";
}
/**
 * A change to one file, bound to the content it was prepared against.
 *
 * ``path`` is workspace-relative; ``pre_image_sha256`` is the SHA-256 of the file's bytes when the
 * action was prepared, or null when the file must not exist. Exactly one of ``edits`` and
 * ``new_content`` is set, or neither when ``delete`` removes the file (which then must exist). ``diff``
 * is for display only and is not trusted by the committer.
 */
export interface FileChange {
    type: "file_change";
    path: string;
    pre_image_sha256: string | null;
    edits?: EditBlock[] | null;
    new_content?: string | null;
    diff?: string;
    delete?: boolean;
}
/**
 * Several file changes committed all or nothing (``apply_patch``): one ``FileChange`` per path, a
 * move being the deletion of the old path plus the creation (or overwrite) of the new one.
 */
export interface FileChangeSet {
    type: "file_change_set";
    changes: FileChange[];
}
/** A search of the workspace's knowledge index (built by ``seepient knowledge index``); read only. */
export interface KnowledgeQuery {
    type: "knowledge_search";
    query: string;
    limit: number;
}
/**
 * A call of one tool of a configured MCP server, with arguments already checked against its schema.
 *
 * ``read_only_hint`` and ``open_world_hint`` are what the server declared about the tool; policy weighs
 * them only in the consent mode, never against a rule.
 */
export interface McpCall {
    type: "mcp";
    server: string;
    tool: string;
    arguments: {
        [key: string]: unknown;
    };
    read_only_hint: boolean;
    open_world_hint: boolean;
}
/**
 * Starting a configured MCP server: the exact process (``command``, ``args``, ``cwd``, the *names* of
 * the variables added to its environment) or the ``url`` it is reached at; ``source`` is the settings
 * layer that configured it (``project`` ones need consent).
 */
export interface McpServerStart {
    type: "mcp_server_start";
    server: string;
    transport: "stdio" | "http";
    source: "user" | "project" | "command-line" | "managed" | "settings";
    command: string | null;
    args: string[];
    cwd: string | null;
    env_names: string[];
    url: string | null;
}
/**
 * One operation of the ``memory`` tool on the agent's own notes, kept under ``$SEEPIENT_HOME/memory``.
 *
 * ``path`` (and ``new_path`` for ``rename``) are relative to the folder of ``scope``; '' is the folder
 * itself (``view`` only). Executors map ``scope`` to the folder themselves, so a payload never names an
 * absolute location. ``change`` carries what a write commits (its ``path`` equals ``path``);
 * ``pre_image_sha256`` binds ``delete`` and ``rename`` to the file's content when they were prepared.
 */
export interface MemoryAction {
    type: "memory";
    command: "view" | "create" | "str_replace" | "insert" | "delete" | "rename";
    scope: "user" | "project" | "all";
    path: string;
    new_path: string | null;
    change: FileChange | null;
    pre_image_sha256: string | null;
    view_range: [number, number] | null;
}
/** What a tool call would do, fully described before anything happens. */
export interface PreparedActionDraft {
    id: string;
    session_id: string;
    call_id: string;
    tool: string;
    kind: ActionKind;
    payload: ReadAction | FileChange | FileChangeSet | ShellCommand | FetchRequest | ProcessControl | MemoryAction | KnowledgeQuery | WebSearchRequest | WorktreeCommand | AgentTask | McpCall | McpServerStart | SessionStateChange;
    read_only: boolean;
    summary: string;
    digest: string;
}
/** Reading the output of, or killing, a background process this session started (``bg_…`` id). */
export interface ProcessControl {
    type: "process_control";
    operation: "output" | "kill";
    process_id: string;
}
/**
 * A read-only look at the host: reading a file, listing by glob, searching by regex.
 *
 * ``paths`` are the resolved absolute paths the read touches (the root for glob and grep), so
 * policy can check each of them; ``params`` carries the operation's own arguments.
 */
export interface ReadAction {
    type: "read";
    operation: "read_file" | "glob" | "grep" | "lsp" | "notebook_read";
    paths: string[];
    params: {
        [key: string]: unknown;
    };
}
/** A shell redirection such as ``> out.txt`` or ``2>&1``; ``target`` is the word after the operator. */
export interface Redirection {
    operator: string;
    target: string;
    fd: number | null;
}
/** Replace one key of the session's own state (``todos``) with ``value``; the host is not touched. */
export interface SessionStateChange {
    type: "state";
    key: string;
    value: unknown;
}
/**
 * A shell command line with what analysis found in it.
 *
 * ``parsed`` is false when the analyser could not account for every part of the line; policy never
 * allows such a line without asking.
 */
export interface ShellCommand {
    type: "shell";
    command: string;
    commands?: SimpleCommand[];
    capabilities?: Capability[];
    parsed?: boolean;
    cwd: string;
    timeout_ms?: number;
    background?: boolean;
}
/** One simple command out of a command line: its argv, its binary and its redirections. */
export interface SimpleCommand {
    argv: string[];
    binary: string;
    redirections: Redirection[];
}
/** One entry of the todo list the model keeps (``todo_write``). */
export interface TodoItem {
    id: string;
    content: string;
    status: "pending" | "in_progress" | "completed";
}
/**
 * One tool call the model asked for. ``arguments`` is the decoded JSON object.
 *
 * ``arguments_error`` is set when the model sent text that is not a JSON object; the pipeline
 * returns it to the model as a validation error rather than guessing.
 */
export interface ToolCall {
    id: string;
    name: string;
    arguments: {
        [key: string]: unknown;
    };
    raw_arguments: string | null;
    arguments_error: string | null;
}
/**
 * Tokens of one model call, or of several summed. ``input_tokens`` counts every prompt token, including
 * the ``cached_input_tokens`` read from the provider's prompt cache and the ``cache_write_input_tokens``
 * written to it; ``output_tokens`` includes reasoning tokens. Input and output are ``None`` when the provider
 * did not report them (llama-cpp-python sends no usage at all, a script has none): unknown, never shown as 0,
 * and a sum with an unknown part is unknown (the cache counts are parts of the input, 0 when not reported). ``cost_usd`` is an estimate, set only when prices are configured for
 * the model that answered. ``Usage()`` is "nothing reported"; ``Usage.zero()`` is "no call made".
 */
export interface Usage {
    input_tokens: number | null;
    output_tokens: number | null;
    cached_input_tokens: number;
    cache_write_input_tokens: number;
    cost_usd: number | null;
}
/** ``rule`` names the rule or check that decided (``deny:Read(~/.ssh/**)``, ``path_guard``, ``mode:ask-untrusted``). */
export interface Verdict {
    decision: Decision;
    rule: string | null;
    reasons: string[];
}
/**
 * A web search through the configured backend. ``url`` is the endpoint that will be contacted (Fetch
 * rules apply to its host); ``api_key_env`` names the environment variable holding the key, never its value.
 */
export interface WebSearchRequest {
    type: "web_search";
    backend: "searxng" | "brave" | "tavily";
    url: string;
    query: string;
    limit: number;
    api_key_env: string | null;
}
/**
 * A git worktree operation, run as the exact ``argv`` (no shell) inside the sandbox at ``cwd``.
 *
 * ``path`` is the worktree's absolute directory (``<workspace>/.seepient/worktrees/<name>``) for create and
 * remove; ``branch`` the branch a new worktree checks out and ``base`` the commit it starts from.
 */
export interface WorktreeCommand {
    type: "worktree";
    operation: "create" | "list" | "remove";
    argv: string[];
    cwd: string;
    name: string | null;
    path: string | null;
    branch: string | null;
    base: string | null;
    force: boolean;
    timeout_ms: number;
}
export interface ApprovalAnswer {
    decision: "approve_once" | "approve_session" | "approve_project" | "reject" | "reject_session";
    /** for approve_session and reject_session: the offered scope kind */
    scope?: string | null;
    /** told to the model with a rejection */
    feedback?: string | null;
}
export interface ApprovalAnswered {
    request_id: string;
    decision: string;
}
/** The verdict on the whole hash chain the session's records are part of (``seepient audit verify``). */
export interface AuditVerification {
    ok: boolean;
    exists: boolean;
    records: number;
    head_seq: number;
    first_bad_seq: number | null;
    problem: string | null;
    signature: string;
    key_id: string | null;
    warnings: string[];
    interrupted: number;
}
export interface AuditView {
    session_id: string;
    /** this session's records (and its sub-agents'), oldest first */
    records: {
        [key: string]: unknown;
    }[];
    /** older records were left out; the newest are kept */
    truncated: boolean;
    verification: AuditVerification;
}
export interface CreateSession {
    /** absolute path under a root granted to you */
    workspace: string;
    /** a model spec the server offers, e.g. replay:/abs/script.yaml */
    model: string;
    /** consent mode, at most your cap */
    mode?: string | null;
}
/** What the caller may open sessions with: its roots, models and the consent modes up to its cap. */
export interface Grants {
    principal: string;
    roots: string[];
    models: string[];
    max_mode: string | null;
    /** the consent modes allowed, from the most cautious */
    modes: string[];
    allow_replay: boolean;
}
export interface HTTPValidationError {
    detail?: ValidationError[];
}
export interface Health {
    status?: "ok";
    version: string;
    /** sessions held in memory now (idle ones are unloaded) */
    sessions_loaded?: number;
}
/** An image for the turn, inline. Its type is judged from its bytes; a declared type must agree. */
export interface ImageInput {
    /** the image's bytes, base64-encoded (PNG, JPEG, GIF or WebP) */
    data: string;
    /** optional; must match the bytes */
    media_type?: string | null;
}
export interface Interrupted {
    interrupted: boolean;
}
export interface PostMessage {
    prompt: string;
    /** images for this turn; the turn then goes to the vision route */
    images?: ImageInput[];
    /** a planning turn on the plan route: only read-only tools run and the reply is the plan; a following ordinary message carries it out */
    plan?: boolean;
}
export interface RenderRequest {
    texts: string[];
}
export interface Rendered {
    /** each text as sanitised HTML, in the order given */
    html: string[];
}
export interface SessionDetail {
    id: string;
    workspace: string;
    model: string;
    mode: string;
    status: string;
    last_seq: number;
    created_at: string;
    updated_at: string;
    turns: TurnView[];
    messages: {
        [key: string]: unknown;
    }[];
    pending_approvals: ApprovalRequest[];
}
export interface SessionView {
    id: string;
    workspace: string;
    model: string;
    mode: string;
    status: string;
    last_seq: number;
    created_at: string;
    updated_at: string;
}
export interface ToolView {
    name: string;
    description: string;
    parameters: {
        [key: string]: unknown;
    };
}
export interface TurnAccepted {
    turn_id: string;
}
export interface TurnReply {
    turn_id: string;
    reason: string;
    text: string;
    steps: number;
    error?: string | null;
}
export interface TurnView {
    id: string;
    number: number;
    prompt: string;
    status: string;
    reply: string;
    reason: string | null;
}
export interface ValidationError {
    loc: (string | number)[];
    msg: string;
    type: string;
    input?: unknown;
    ctx?: {
        [key: string]: unknown;
    };
}
