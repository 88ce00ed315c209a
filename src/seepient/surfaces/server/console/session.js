// The session page: the live transcript (streamed text, tool calls with their status and output), the
// prompt box with image attach, interrupt, and the approvals waiting. It follows the session's event
// stream from the last sequence number it showed, so a dropped connection resumes without duplicates and
// a reload replays the session from the start.

import { approvalPanel } from "./approval.js";
import { clear, h, when } from "./dom.js";
import { MarkdownRenderer } from "./markdown.js";

const IMAGE_TYPES = "image/png,image/jpeg,image/gif,image/webp";
const ASK_AFTER_MS = 200;

export class SessionPage {
    #client;
    #session;
    #root;
    #announce;
    #markdown;
    #stop = new AbortController();
    #lastSeq = 0;
    #running = false;
    #segment = null; // the assistant text being streamed: { element, text }
    #calls = new Map(); // call id → its card
    #pending = new Map(); // request id → { request, panel (once shown), timer }
    #turnBox = null;
    #els = {};
    #images = [];

    constructor(client, session, root, announce) {
        this.#client = client;
        this.#session = session;
        this.#root = root;
        this.#announce = announce;
        this.#markdown = new MarkdownRenderer(client);
    }

    show() {
        const s = this.#session;
        const transcript = h("div", { class: "transcript", id: "transcript", role: "log", "aria-label": "Transcript", "aria-live": "off" });
        const approvals = h("div", { class: "approvals", id: "approvals", "aria-label": "Approvals waiting" });
        const connection = h("p", { class: "connection", id: "connection", role: "status" }, "Connecting…");
        const prompt = h("textarea", { id: "prompt", rows: "3", required: true, "aria-describedby": "prompt-hint" });
        const attach = h("input", { id: "attach", type: "file", accept: IMAGE_TYPES, multiple: true });
        const attached = h("ul", { class: "attached", id: "attached", "aria-label": "Attached images" });
        const send = h("button", { type: "submit", class: "control primary", id: "send" }, "Send");
        const interrupt = h("button", { type: "button", class: "control", id: "interrupt", disabled: true, onclick: () => this.#interrupt() }, "Interrupt");
        const formStatus = h("p", { class: "form-status", id: "form-status", role: "status" });
        attach.addEventListener("change", () => this.#attach(attach));
        const form = h(
            "form",
            { class: "prompt-form", "aria-label": "Send a prompt", onsubmit: (event) => this.#send(event) },
            h("label", { for: "prompt" }, "Prompt"),
            prompt,
            h("p", { class: "hint", id: "prompt-hint" }, "Ctrl+Enter sends."),
            h("div", { class: "choice-row" }, h("label", { for: "attach" }, "Attach images"), attach),
            attached,
            h("div", { class: "choice-row" }, send, interrupt),
            formStatus,
        );
        prompt.addEventListener("keydown", (event) => {
            if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
                event.preventDefault();
                form.requestSubmit();
            }
        });
        this.#els = { transcript, approvals, connection, prompt, attach, attached, send, interrupt, formStatus };
        clear(this.#root).append(
            h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/" }, "Sessions"), " / ", h("span", {}, s.id)),
            h("h1", {}, "Session ", h("code", {}, s.id)),
            h(
                "dl",
                { class: "facts session-facts" },
                h("dt", {}, "Workspace"),
                h("dd", {}, h("code", {}, s.workspace)),
                h("dt", {}, "Model"),
                h("dd", {}, h("code", {}, s.model)),
                h("dt", {}, "Mode"),
                h("dd", {}, s.mode),
            ),
            h("p", {}, h("a", { href: `#/sessions/${encodeURIComponent(s.id)}/audit` }, "Audit records")),
            connection,
            approvals,
            transcript,
            form,
        );
        this.#follow();
    }

    close() {
        this.#stop.abort();
        for (const entry of this.#pending.values()) {
            clearTimeout(entry.timer);
        }
    }

    /** How many requests are shown waiting for an answer, for the page title. */
    pendingCount() {
        return [...this.#pending.values()].filter((entry) => entry.panel !== null).length;
    }

    onPendingChange = () => undefined;

    async #follow() {
        const signal = this.#stop.signal;
        while (!signal.aborted) {
            try {
                this.#els.connection.textContent = "Live.";
                for await (const event of this.#session.events({ after: this.#lastSeq, follow: true, signal })) {
                    this.#show(event);
                }
            } catch (error) {
                if (signal.aborted) {
                    return;
                }
                this.#els.connection.textContent = `Connection lost (${error.message}); reconnecting…`;
                await new Promise((resolve) => setTimeout(resolve, 1000));
            }
        }
    }

    #show(event) {
        if (event.seq <= this.#lastSeq) {
            return; // already shown before a reconnection
        }
        this.#lastSeq = event.seq;
        switch (event.type) {
            case "turn_started":
                this.#endSegment();
                this.#turnBox = h("section", { class: "turn", "aria-label": `Turn ${event.turn_id}` });
                this.#turnBox.append(h("div", { class: "message user" }, h("p", { class: "who" }, "You"), h("p", { class: "user-text" }, event.prompt)));
                this.#els.transcript.append(this.#turnBox);
                this.#setRunning(true);
                break;
            case "text_delta":
                this.#text(event.text);
                break;
            case "tool_call":
                this.#endSegment();
                this.#toolCall(event.call);
                break;
            case "permission_request":
                this.#permission(event.request);
                break;
            case "permission_resolved":
                this.#resolved(event.request_id, event.response);
                break;
            case "tool_result":
                this.#toolResult(event);
                break;
            case "turn_completed":
                this.#endSegment();
                this.#box().append(h("p", { class: `turn-end reason-${event.reason}` }, this.#endText(event)));
                for (const requestId of [...this.#pending.keys()]) {
                    this.#resolved(requestId, null);
                }
                this.#setRunning(false);
                break;
            case "error":
                this.#endSegment();
                this.#box().append(h("p", { class: "error", role: "alert" }, `Error (${event.code}): ${event.message}`));
                break;
            default:
                this.#box().append(h("p", { class: "note" }, `${event.type.replaceAll("_", " ")}`));
        }
    }

    #box() {
        if (this.#turnBox === null) {
            this.#turnBox = h("section", { class: "turn" });
            this.#els.transcript.append(this.#turnBox);
        }
        return this.#turnBox;
    }

    #endText(event) {
        const words = { final: "Turn finished", step_limit: "Turn stopped at the step limit", interrupted: "Turn interrupted", error: "Turn ended with an error" };
        return `${words[event.reason] ?? event.reason} · ${event.steps} step${event.steps === 1 ? "" : "s"} · ${when(event.ts)}`;
    }

    #text(text) {
        if (this.#segment === null) {
            const body = h("div", { class: "model-text streaming" });
            this.#box().append(h("div", { class: "message assistant" }, h("p", { class: "who" }, "Model"), body));
            this.#segment = { element: body, text: "", drawing: false };
        }
        this.#segment.text += text;
        // One redraw per frame however many deltas arrive (a reload replays a long answer word by word).
        if (!this.#segment.drawing) {
            const segment = this.#segment;
            segment.drawing = true;
            requestAnimationFrame(() => {
                segment.drawing = false;
                if (segment.element.classList.contains("streaming")) {
                    segment.element.textContent = segment.text;
                }
            });
        }
    }

    #endSegment() {
        if (this.#segment !== null) {
            this.#segment.element.classList.remove("streaming");
            this.#markdown.render(this.#segment.element, this.#segment.text);
            this.#segment = null;
        }
    }

    #toolCall(call) {
        const status = h("span", { class: "tool-status status-running" }, "running");
        const card = h(
            "details",
            { class: "tool", dataset: { callId: call.id } },
            h("summary", {}, h("span", { class: "badge" }, call.name), " ", status),
            h("pre", { class: "tool-arguments", "aria-label": "Arguments" }, JSON.stringify(call.arguments, null, 2)),
        );
        this.#calls.set(call.id, { card, status });
        this.#box().append(card);
    }

    #toolResult(event) {
        let entry = this.#calls.get(event.call_id);
        if (entry === undefined) {
            this.#toolCall({ id: event.call_id, name: event.tool, arguments: {} });
            entry = this.#calls.get(event.call_id);
        }
        entry.status.textContent = event.status;
        entry.status.className = `tool-status status-${event.status}`;
        entry.card.append(h("pre", { class: "tool-output", "aria-label": "Output" }, event.output));
        if (event.status !== "ok") {
            entry.card.open = true;
        }
    }

    #permission(request) {
        // The server reports every ask, also those a session grant or a project rule settles at once: a
        // request is shown (and notified) only if it still waits a moment later, so nothing flashes by.
        const entry = { request, panel: null, timer: undefined };
        entry.timer = setTimeout(() => this.#ask(entry), ASK_AFTER_MS);
        this.#pending.set(request.request_id, entry);
    }

    #ask(entry) {
        const request = entry.request;
        const card = this.#calls.get(request.action.call_id);
        if (card !== undefined) {
            card.status.textContent = "waiting for approval";
            card.status.className = "tool-status status-waiting";
        }
        entry.panel = approvalPanel(request, (body) => this.#session.answer(request.request_id, body));
        this.#els.approvals.append(entry.panel);
        this.#announce(`Approval needed: ${request.action.summary}`);
        const typing = document.activeElement instanceof HTMLTextAreaElement || document.activeElement instanceof HTMLInputElement;
        if (!typing) {
            entry.panel.querySelector("h2").focus();
        }
        this.onPendingChange(request);
    }

    #resolved(requestId, response) {
        const pending = this.#pending.get(requestId);
        if (pending === undefined) {
            return;
        }
        clearTimeout(pending.timer);
        this.#pending.delete(requestId);
        const card = this.#calls.get(pending.request.action.call_id);
        if (card !== undefined && response !== null) {
            card.status.textContent = response.decision.startsWith("approve") ? `approved (${response.approved_by}), running` : "rejected";
        }
        if (pending.panel !== null) {
            pending.panel.remove();
            this.onPendingChange(null);
        }
    }

    #setRunning(running) {
        this.#running = running;
        this.#els.interrupt.disabled = !running;
    }

    async #attach(input) {
        this.#images = [];
        clear(this.#els.attached);
        for (const file of input.files) {
            const data = await new Promise((resolve, reject) => {
                const reader = new FileReader();
                reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
                reader.onerror = () => reject(reader.error);
                reader.readAsDataURL(file);
            });
            this.#images.push({ data, media_type: file.type || null });
            this.#els.attached.append(h("li", {}, `${file.name} (${Math.ceil(file.size / 1024)} KiB)`));
        }
    }

    async #send(event) {
        event.preventDefault();
        const prompt = this.#els.prompt.value;
        if (!prompt.trim()) {
            this.#els.formStatus.textContent = "Write a prompt first.";
            return;
        }
        this.#els.send.disabled = true;
        this.#els.formStatus.textContent = "Sending…";
        try {
            await this.#session.send(this.#images.length ? { prompt, images: this.#images } : { prompt });
            this.#els.prompt.value = "";
            this.#els.attach.value = "";
            this.#images = [];
            clear(this.#els.attached);
            this.#els.formStatus.textContent = "Sent.";
        } catch (error) {
            this.#els.formStatus.textContent = error.status === 409 ? "A turn is running: wait for it or interrupt it." : `Not sent: ${error.message}`;
        } finally {
            this.#els.send.disabled = false;
        }
    }

    async #interrupt() {
        try {
            const stopped = await this.#session.interrupt();
            this.#els.formStatus.textContent = stopped ? "Interrupting…" : "No turn was running.";
        } catch (error) {
            this.#els.formStatus.textContent = `Could not interrupt: ${error.message}`;
        }
    }
}
