// The audit view: the session's records as the log holds them, and whether the hash chain verifies.

import { append, clear, h, when } from "./dom.js";

function verdict(v) {
    if (!v.exists) {
        return h("p", { class: "chain chain-empty", role: "status" }, "No audit log yet: nothing has been recorded.");
    }
    if (!v.ok) {
        return h(
            "div",
            { class: "chain chain-bad", role: "alert" },
            h("p", {}, h("strong", {}, "The audit chain does not verify. "), v.problem ?? ""),
            v.first_bad_seq !== null ? h("p", {}, `First bad record: ${v.first_bad_seq}`) : null,
        );
    }
    const signature = { valid: "signed head, signature valid", unsigned: "unsigned", unchecked: "signed, key not available to check", none: "no signature" }[v.signature] ?? v.signature;
    return h(
        "div",
        { class: "chain chain-ok", role: "status" },
        h("p", {}, h("strong", {}, "Chain verified: "), `${v.records} records, head at ${v.head_seq}, ${signature}.`),
        v.key_id ? h("p", {}, "Signing key ", h("code", {}, v.key_id)) : null,
        v.interrupted ? h("p", {}, `${v.interrupted} action(s) interrupted by a crash.`) : null,
        v.warnings.length ? h("ul", { "aria-label": "Warnings" }, v.warnings.map((w) => h("li", {}, w))) : null,
    );
}

const COLUMNS = ["Seq", "Type", "Time", "Tool", "Summary", "Decision", "Outcome"];

function row(record, intents) {
    // An outcome names its action by id: it is shown with the tool and summary of the intent it closes.
    const action = record.action ?? intents.get(record.action_id) ?? {};
    const outcome = record.outcome ?? {};
    const approval = record.approval ?? null;
    const cells = [
        String(record.seq ?? ""),
        record.type ?? "",
        when(record.timestamp),
        action.tool ?? "",
        action.summary ?? outcome.detail ?? "",
        approval ? `${approval.decision} (${approval.approved_by})` : (record.verdict?.decision ?? ""),
        outcome.status ?? "",
    ];
    return h("tr", {}, cells.map((text, i) => h("td", { dataset: { label: COLUMNS[i] } }, text)));
}

export async function showAudit(client, sessionId, root) {
    clear(root).append(h("p", { role: "status" }, "Loading the audit records…"));
    const view = await (await client.sessions.get(sessionId)).audit();
    const intents = new Map(view.records.filter((r) => r.type === "intent").map((r) => [r.action.id, r.action]));
    append(clear(root), [
        h(
            "nav",
            { class: "crumbs", "aria-label": "Breadcrumb" },
            h("a", { href: "#/" }, "Sessions"),
            " / ",
            h("a", { href: `#/sessions/${encodeURIComponent(sessionId)}` }, sessionId),
            " / audit",
        ),
        h("h1", {}, "Audit records"),
        verdict(view.verification),
        view.truncated ? h("p", {}, "Only the newest records are shown.") : null,
        view.records.length === 0
            ? h("p", {}, "This session has no audit records yet.")
            : h(
                  "div",
                  { class: "table-scroll" },
                  h(
                      "table",
                      { class: "records" },
                      h("caption", {}, `${view.records.length} records of session ${sessionId}`),
                      h("thead", {}, h("tr", {}, COLUMNS.map((t) => h("th", { scope: "col" }, t)))),
                      h("tbody", {}, view.records.map((record) => row(record, intents))),
                  ),
              ),
    ]);
}
