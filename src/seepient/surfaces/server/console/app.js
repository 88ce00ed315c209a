// The console's entry point: sign-in (the token lives in session storage, never in a URL), the list of the
// principal's sessions, the new-session form limited to its grants, and the routes between the views.

import { AuthError, Seepient } from "./sdk/index.js";
import { showAudit } from "./audit.js";
import { clear, h, statusForm, when } from "./dom.js";
import { SessionPage } from "./session.js";

const TOKEN_KEY = "seepient.token";
const TITLE = "Seepient console";
const main = document.getElementById("main");
const announcer = document.getElementById("announcer");
const account = document.getElementById("account");
let client = null;
let page = null;

function announce(text) {
    announcer.textContent = "";
    setTimeout(() => (announcer.textContent = text), 50);
}

function connect(token) {
    client = new Seepient({ baseUrl: window.location.origin, token });
}

function signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
    client = null;
    route();
}

function showSignIn(problem) {
    clear(account);
    const token = h("input", { id: "token", type: "password", autocomplete: "current-password", required: true, spellcheck: "false" });
    const status = h("p", { class: "form-status", role: "status", id: "signin-status" }, problem ?? "");
    const signIn = async () => {
        connect(token.value.trim());
        try {
            await client.me();
        } catch (error) {
            client = null;
            status.textContent = error instanceof AuthError ? "This token is not valid here." : `Cannot sign in: ${error.message}`;
            return;
        }
        sessionStorage.setItem(TOKEN_KEY, token.value.trim());
        route();
    };
    const form = statusForm(
        { class: "signin", "aria-labelledby": "signin-title" },
        status,
        "Checking the token…",
        signIn,
        h("h1", { id: "signin-title" }, "Sign in"),
        h("label", { for: "token" }, "Token"),
        token,
        h("p", { class: "hint" }, "Create one on the server with ", h("code", {}, "seepient tokens create --principal NAME"), ". It is kept in this tab only."),
        h("button", { type: "submit", class: "control primary" }, "Sign in"),
    );
    clear(main).append(form);
    token.focus();
}

function newSessionForm(grants, onCreated) {
    const status = h("p", { class: "form-status", role: "status", id: "new-status" });
    const workspace = h("input", { id: "workspace", list: "roots", required: true, value: grants.roots[0] ?? "", spellcheck: "false" });
    const roots = h("datalist", { id: "roots" }, grants.roots.map((root) => h("option", { value: root })));
    const replay = "__replay__";
    const model = h(
        "select",
        { id: "model", required: true },
        grants.models.map((spec) => h("option", { value: spec }, spec)),
        grants.allow_replay ? h("option", { value: replay }, "A replay script…") : null,
    );
    const script = h("input", { id: "replay-script", spellcheck: "false", placeholder: "/absolute/path/script.yaml" });
    const scriptRow = h("div", { class: "field", hidden: model.value !== replay }, h("label", { for: "replay-script" }, "Replay script (inside your roots)"), script);
    model.addEventListener("change", () => (scriptRow.hidden = model.value !== replay));
    const mode = h("select", { id: "mode" }, grants.modes.map((m) => h("option", { value: m }, m)));
    const create = h("button", { type: "submit", class: "control primary", disabled: grants.modes.length === 0 }, "Create session");
    const createSession = async () => {
        try {
            const chosen = model.value === replay ? `replay:${script.value.trim()}` : model.value;
            const session = await client.sessions.create({ workspace: workspace.value.trim(), model: chosen, mode: mode.value });
            onCreated(session);
        } catch (error) {
            status.textContent = `Not created: ${error.message}`;
        }
    };
    return statusForm(
        { class: "new-session", "aria-labelledby": "new-title" },
        status,
        "Creating…",
        createSession,
        h("h2", { id: "new-title" }, "New session"),
        grants.roots.length === 0 ? h("p", {}, "This server grants you no workspace: ask its operator.") : null,
        h("div", { class: "field" }, h("label", { for: "workspace" }, "Workspace (a folder under your roots)"), workspace, roots),
        h("div", { class: "field" }, h("label", { for: "model" }, "Model"), model),
        scriptRow,
        h("div", { class: "field" }, h("label", { for: "mode" }, `Consent mode (at most ${grants.max_mode ?? "none"})`), mode),
        create,
    );
}

async function showSessions() {
    clear(main).append(h("p", { role: "status" }, "Loading your sessions…"));
    const [grants, sessions] = await Promise.all([client.me(), client.sessions.list()]);
    account.replaceChildren(h("span", {}, "Signed in as ", h("strong", {}, grants.principal)), " ", h("button", { type: "button", class: "control", onclick: signOut }, "Sign out"));
    const rows = sessions
        .slice()
        .sort((a, b) => String(b.updated_at).localeCompare(String(a.updated_at)))
        .map((s) =>
            h(
                "tr",
                {},
                h("td", { dataset: { label: "Session" } }, h("a", { href: `#/sessions/${encodeURIComponent(s.id)}` }, s.id)),
                h("td", { dataset: { label: "Status" } }, h("span", { class: `status status-${s.status}` }, s.status)),
                h("td", { dataset: { label: "Workspace" } }, h("code", {}, s.workspace)),
                h("td", { dataset: { label: "Model" } }, h("code", {}, s.model)),
                h("td", { dataset: { label: "Last activity" } }, when(s.updated_at)),
            ),
        );
    clear(main).append(
        h("h1", {}, "Sessions"),
        sessions.length === 0
            ? h("p", {}, "No sessions yet.")
            : h(
                  "div",
                  { class: "table-scroll" },
                  h(
                      "table",
                      { class: "sessions" },
                      h("caption", { class: "visually-hidden" }, "Your sessions"),
                      h("thead", {}, h("tr", {}, ["Session", "Status", "Workspace", "Model", "Last activity"].map((t) => h("th", { scope: "col" }, t)))),
                      h("tbody", {}, rows),
                  ),
              ),
        newSessionForm(grants, (session) => (window.location.hash = `#/sessions/${encodeURIComponent(session.id)}`)),
    );
}

function updateTitle(request) {
    const waiting = page?.pendingCount() ?? 0;
    document.title = waiting ? `(${waiting}) Approval waiting — ${TITLE}` : TITLE;
    if (request && document.hidden && "Notification" in window && Notification.permission === "granted") {
        new Notification("Seepient: an approval waits", { body: request.action.summary, tag: request.request_id });
    }
}

async function showSession(id) {
    const session = await client.sessions.get(id);
    page = new SessionPage(client, session, main, announce);
    page.onPendingChange = updateTitle;
    page.show();
}

async function route() {
    page?.close();
    page = null;
    document.title = TITLE;
    const token = sessionStorage.getItem(TOKEN_KEY);
    if (!token) {
        showSignIn();
        return;
    }
    if (client === null) {
        connect(token);
    }
    const parts = window.location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
    try {
        if (parts[0] === "sessions" && parts[1] && parts[2] === "audit") {
            await showAudit(client, parts[1], main);
        } else if (parts[0] === "sessions" && parts[1]) {
            await showSession(parts[1]);
        } else {
            await showSessions();
        }
    } catch (error) {
        if (error instanceof AuthError) {
            sessionStorage.removeItem(TOKEN_KEY);
            client = null;
            showSignIn("Your token is no longer accepted: sign in again.");
            return;
        }
        clear(main).append(h("h1", {}, "Something went wrong"), h("p", { role: "alert" }, error.message), h("p", {}, h("a", { href: "#/" }, "Back to the sessions")));
    }
    main.focus();
}

document.getElementById("notify").addEventListener("click", async () => {
    if (!("Notification" in window)) {
        announce("This browser has no notifications.");
        return;
    }
    const answer = await Notification.requestPermission();
    announce(answer === "granted" ? "You will be notified when an approval waits." : "Notifications are off.");
});
window.addEventListener("hashchange", route);
route();
document.querySelector(".skip").addEventListener("click", (event) => {
    // The hash is the console's route: the skip link moves focus instead of changing it.
    event.preventDefault();
    main.focus();
});
