// One pending permission request: what the action would do (a diff, a command with its folder and
// capabilities, a URL) and the choices the terminal offers. It is drawn apart from the transcript, in the
// console's own chrome, so nothing in model text can pass for it.

import { diffView } from "./diff.js";
import { h } from "./dom.js";

function fileChange(change) {
    const what = change.delete ? "delete" : change.pre_image_sha256 === null ? "create" : "change";
    return h(
        "div",
        { class: "approval-file" },
        h("p", {}, h("span", { class: "badge" }, what), " ", h("code", { class: "path" }, change.path)),
        change.diff ? diffView(change.diff, change.path) : h("p", {}, "(no diff to show)"),
    );
}

function actionDetails(action) {
    const payload = action.payload ?? {};
    switch (payload.type) {
        case "file_change":
            return [fileChange(payload)];
        case "file_change_set":
            return payload.changes.map(fileChange);
        case "shell":
            return [
                h(
                    "dl",
                    { class: "facts" },
                    h("dt", {}, "Command"),
                    h("dd", {}, h("pre", { class: "command" }, payload.command)),
                    h("dt", {}, "Folder"),
                    h("dd", {}, h("code", {}, payload.cwd)),
                    h("dt", {}, "Capabilities"),
                    h("dd", {}, (payload.capabilities ?? []).length ? payload.capabilities.join(", ") : "none found"),
                    payload.parsed === false ? [h("dt", {}, "Analysis"), h("dd", {}, "not every part of this line could be accounted for")] : null,
                ),
            ];
        case "fetch":
            return [h("dl", { class: "facts" }, h("dt", {}, "URL"), h("dd", {}, h("code", { class: "url" }, payload.url)), h("dt", {}, "Method"), h("dd", {}, payload.method))];
        default:
            return [h("pre", { class: "payload" }, JSON.stringify(payload, null, 2))];
    }
}

/**
 * The panel for `request`. `answer(body)` sends an ApprovalAnswer and resolves when the server took it; the
 * panel then waits for the session's `permission_resolved` event to go away.
 */
export function approvalPanel(request, answer) {
    const id = request.request_id;
    const status = h("p", { class: "approval-status", role: "status" });
    const feedback = h("textarea", { id: `feedback-${id}`, rows: "2", maxlength: "20000" });
    const scopeChoice = h(
        "select",
        { id: `scope-${id}` },
        request.scopes.map((scope) => h("option", { value: scope.kind }, scope.label)),
    );
    const buttons = [];
    const send = async (body) => {
        buttons.forEach((button) => (button.disabled = true));
        status.textContent = "Sending your answer…";
        try {
            await answer(body);
            status.textContent = "Answer sent.";
        } catch (error) {
            status.textContent = `The answer was not taken: ${error.message}`;
            buttons.forEach((button) => (button.disabled = false));
        }
    };
    const button = (label, className, body) => {
        const made = h("button", { type: "button", class: `control ${className}`, dataset: { control: "approval" }, onclick: () => send(body()) }, label);
        buttons.push(made);
        return made;
    };
    const verdict = request.verdict ?? { reasons: [] };
    const heading = h("h2", { id: `approval-title-${id}`, tabindex: "-1" }, "Seepient asks: approve this action?");
    return h(
        "section",
        { class: "approval", "aria-labelledby": heading.id, dataset: { requestId: id } },
        heading,
        h("p", { class: "approval-summary" }, h("span", { class: "badge" }, request.action.tool), " ", request.action.summary),
        request.agent ? h("p", {}, "Asked by the sub-agent ", h("code", {}, request.agent)) : null,
        verdict.reasons?.length ? h("ul", { class: "reasons", "aria-label": "Why policy asks" }, verdict.reasons.map((reason) => h("li", {}, reason))) : null,
        actionDetails(request.action),
        h(
            "div",
            { class: "choices", role: "group", "aria-label": "Your answer" },
            button("Approve once", "approve", () => ({ decision: "approve_once" })),
            request.scopes.length
                ? h(
                      "div",
                      { class: "choice-row" },
                      h("label", { for: scopeChoice.id }, "Session scope"),
                      scopeChoice,
                      button("Approve for this session", "approve", () => ({ decision: "approve_session", scope: scopeChoice.value })),
                      button("Reject for this session", "reject", () => ({ decision: "reject_session", scope: scopeChoice.value, ...(feedback.value.trim() ? { feedback: feedback.value } : {}) })),
                  )
                : null,
            request.project_rule
                ? h(
                      "div",
                      { class: "choice-row" },
                      button("Always allow in this project", "approve", () => ({ decision: "approve_project", scope: request.project_rule })),
                      h("span", { class: "hint" }, "adds the rule ", h("code", {}, request.project_rule)),
                  )
                : null,
            h(
                "div",
                { class: "choice-row" },
                h("label", { for: feedback.id }, "Feedback for the model (optional)"),
                feedback,
                button("Reject", "reject", () => (feedback.value.trim() ? { decision: "reject", feedback: feedback.value } : { decision: "reject" })),
            ),
        ),
        status,
    );
}
