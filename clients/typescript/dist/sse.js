// Server-Sent Events read from a fetch response body, as the HTML standard's event-stream parser reads them.
/**
 * The events of an event stream, in order. Reading stops when the body ends or the consumer stops
 * iterating (which cancels the body, closing the connection).
 */
export async function* readServerSentEvents(body) {
    const reader = body.getReader();
    const decoder = new TextDecoder("utf-8");
    let buffer = "";
    let event = "";
    let data = [];
    let id = "";
    let first = true;
    try {
        for (;;) {
            const { value, done } = await reader.read();
            buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
            if (first && buffer.length > 0) {
                // A leading byte order mark is not part of the first field name.
                if (buffer.charCodeAt(0) === 0xfeff) {
                    buffer = buffer.slice(1);
                }
                first = false;
            }
            let start = 0;
            for (;;) {
                const end = nextLineEnd(buffer, start, done);
                if (end < 0) {
                    break;
                }
                const line = buffer.slice(start, end);
                start = end + (buffer[end] === "\r" && buffer[end + 1] === "\n" ? 2 : 1);
                if (line === "") {
                    if (data.length > 0) {
                        yield { event: event || "message", data: data.join("\n"), id };
                    }
                    event = "";
                    data = [];
                    continue;
                }
                if (line.startsWith(":")) {
                    continue;
                }
                const colon = line.indexOf(":");
                const name = colon < 0 ? line : line.slice(0, colon);
                let fieldValue = colon < 0 ? "" : line.slice(colon + 1);
                if (fieldValue.startsWith(" ")) {
                    fieldValue = fieldValue.slice(1);
                }
                if (name === "event") {
                    event = fieldValue;
                }
                else if (name === "data") {
                    data.push(fieldValue);
                }
                else if (name === "id" && !fieldValue.includes("\0")) {
                    id = fieldValue;
                }
                // "retry" and unknown fields are ignored: reconnection is the client's own policy.
            }
            buffer = buffer.slice(start);
            if (done) {
                return; // an event without its closing blank line is incomplete and is not dispatched
            }
        }
    }
    finally {
        await reader.cancel().catch(() => undefined);
    }
}
function nextLineEnd(buffer, from, done) {
    for (let i = from; i < buffer.length; i++) {
        const ch = buffer[i];
        if (ch === "\n") {
            return i;
        }
        if (ch === "\r") {
            // A lone CR ends a line too, but a CR at the end of the chunk may be the first half of CRLF.
            return i + 1 < buffer.length || done ? i : -1;
        }
    }
    return -1;
}
