// Building the page: elements made with text content only, and the one way server-sanitised HTML enters.

/**
 * An element with attributes and children. Strings become text nodes, never markup, so anything a model,
 * a file name or a tool wrote stays text whatever it contains.
 */
export function h(tag, attributes = {}, ...children) {
    const element = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes)) {
        if (value === null || value === undefined || value === false) {
            continue;
        }
        if (name.startsWith("on") && typeof value === "function") {
            element.addEventListener(name.slice(2), value);
        } else if (name === "dataset") {
            Object.assign(element.dataset, value);
        } else {
            element.setAttribute(name, value === true ? "" : String(value));
        }
    }
    append(element, children);
    return element;
}

export function append(element, children) {
    for (const child of children.flat()) {
        if (child === null || child === undefined || child === false) {
            continue;
        }
        element.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return element;
}

/**
 * A form whose submission first says in its status line (the last child) that it is under way, then runs
 * `submit`, which reports how it ended there.
 */
export function statusForm(attributes, status, busy, submit, ...children) {
    const onsubmit = async (event) => {
        event.preventDefault();
        status.textContent = busy;
        await submit();
    };
    return h("form", { ...attributes, onsubmit }, ...children, status);
}

export function clear(element) {
    element.replaceChildren();
    return element;
}

// The page's Content-Security-Policy requires Trusted Types for every HTML sink: this policy is the only
// one it allows, and it is handed only what /v1/render/markdown returned (rendered with raw HTML off and
// cleaned by an allow-list sanitiser on the server).
const markdownPolicy = window.trustedTypes
    ? window.trustedTypes.createPolicy("seepient-markdown", { createHTML: (html) => html })
    : { createHTML: (html) => html };

export function setSanitisedHtml(element, html) {
    element.innerHTML = markdownPolicy.createHTML(html);
}

/** A short local date and time for an ISO timestamp or epoch seconds. */
export function when(value) {
    const date = typeof value === "number" ? new Date(value * 1000) : new Date(value);
    return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString();
}
