// Model text to HTML, by the server: texts are gathered for a moment and rendered in one request, so
// replaying a long session after a reload costs a few requests, not one per paragraph.

import { setSanitisedHtml } from "./dom.js";

export class MarkdownRenderer {
    #client;
    #queue = [];
    #timer = undefined;

    constructor(client) {
        this.#client = client;
    }

    /** Show `text` in `element` as plain text now, and as rendered markdown once the server answers. */
    render(element, text) {
        element.textContent = text;
        this.#queue.push({ element, text });
        if (this.#timer === undefined) {
            this.#timer = setTimeout(() => this.#flush(), 30);
        }
    }

    async #flush() {
        this.#timer = undefined;
        const batch = this.#queue.splice(0, 200);
        if (this.#queue.length > 0) {
            this.#timer = setTimeout(() => this.#flush(), 30);
        }
        try {
            const html = await this.#client.renderMarkdown(batch.map((item) => item.text));
            batch.forEach((item, index) => {
                setSanitisedHtml(item.element, html[index]);
                item.element.classList.add("rendered");
            });
        } catch (error) {
            // The text is already shown as text: readable, just not formatted.
            console.warn("markdown rendering failed:", error);
        }
    }
}
