// A unified diff shown two ways: side by side (old left, new right) and unified; the stylesheet shows
// the one that fits the screen. Every line is text content.

import { h } from "./dom.js";

/** The rows of a side-by-side view: runs of removals and additions paired up, context on both sides. */
function sideBySideRows(lines) {
    const rows = [];
    let removed = [];
    let added = [];
    const flush = () => {
        for (let i = 0; i < Math.max(removed.length, added.length); i++) {
            rows.push({ kind: "change", left: removed[i] ?? null, right: added[i] ?? null });
        }
        removed = [];
        added = [];
    };
    for (const line of lines) {
        if (line.startsWith("---") || line.startsWith("+++")) {
            continue;
        }
        if (line.startsWith("@@")) {
            flush();
            rows.push({ kind: "hunk", text: line });
        } else if (line.startsWith("-")) {
            removed.push(line.slice(1));
        } else if (line.startsWith("+")) {
            added.push(line.slice(1));
        } else {
            flush();
            const text = line.startsWith(" ") ? line.slice(1) : line;
            rows.push({ kind: "context", left: text, right: text });
        }
    }
    flush();
    return rows;
}

function cell(text, side) {
    if (text === null) {
        return h("td", { class: "diff-empty" });
    }
    return h("td", { class: side === "left" ? "diff-del" : "diff-add" }, text);
}

function sideBySide(lines, label) {
    const body = h("tbody");
    for (const row of sideBySideRows(lines)) {
        if (row.kind === "hunk") {
            body.append(h("tr", { class: "diff-hunk" }, h("td", { colspan: "2" }, row.text)));
        } else if (row.kind === "context") {
            body.append(h("tr", {}, h("td", {}, row.left), h("td", {}, row.right)));
        } else {
            body.append(h("tr", {}, cell(row.left, "left"), cell(row.right, "right")));
        }
    }
    return h(
        "table",
        { class: "diff diff-split" },
        h("caption", { class: "visually-hidden" }, `Side-by-side diff of ${label}`),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Before"), h("th", { scope: "col" }, "After"))),
        body,
    );
}

function unified(lines, label) {
    const list = h("pre", { class: "diff diff-unified", "aria-label": `Unified diff of ${label}` });
    for (const line of lines) {
        const kind = line.startsWith("+") && !line.startsWith("+++")
            ? "diff-add"
            : line.startsWith("-") && !line.startsWith("---")
              ? "diff-del"
              : line.startsWith("@@")
                ? "diff-hunk"
                : "";
        list.append(h("span", { class: `diff-line ${kind}` }, line), "\n");
    }
    return list;
}

/** Both views of `diff` (a unified diff's text) for the file `label`. */
export function diffView(diff, label) {
    const lines = diff.replace(/\n$/, "").split("\n");
    return h("div", { class: "diff-views" }, sideBySide(lines, label), unified(lines, label));
}
