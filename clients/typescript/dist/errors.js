// Typed errors for what a Seepient server refuses, each carrying the server's own message.
/** The server refused a request. `message` is the server's reason; `status` the HTTP status (0: no answer). */
export class SeepientError extends Error {
    status;
    /** The server's `detail`, as it sent it (a string, or FastAPI's list of validation problems). */
    detail;
    constructor(status, message, detail) {
        super(message);
        this.name = new.target.name;
        this.status = status;
        this.detail = detail === undefined ? message : detail;
    }
}
/** 401: the bearer token is missing or not known to the server. */
export class AuthError extends SeepientError {
}
/** 403: the token is valid but may not do this (a workspace outside its roots, a mode above its cap). */
export class ForbiddenError extends SeepientError {
}
/** 404: no such session or request, or it belongs to another principal (the server does not say which). */
export class NotFoundError extends SeepientError {
}
/** 409: a turn is already running in the session, or the approval request was already answered. */
export class ConflictError extends SeepientError {
}
/** 413: the request body is larger than the server accepts. */
export class PayloadTooLargeError extends SeepientError {
}
/** 400 or 422: the server could not accept the request as sent (the message lists what is wrong). */
export class InvalidRequestError extends SeepientError {
}
/** 429: this token is over its rate; try again after `retryAfter` seconds. */
export class RateLimitError extends SeepientError {
    /** Seconds to wait before the next request, from the `Retry-After` header (1 when it is absent). */
    retryAfter;
    constructor(status, message, detail, retryAfter) {
        super(status, message, detail);
        this.retryAfter = retryAfter;
    }
}
/** 5xx: the server failed. */
export class ServerError extends SeepientError {
}
/** The server could not be reached, or the event stream kept dropping and could not be resumed (a turn may still be running on the server). */
export class ConnectionError extends SeepientError {
    constructor(message, options) {
        super(0, message);
        if (options?.cause !== undefined) {
            Object.defineProperty(this, "cause", { value: options.cause, enumerable: false });
        }
    }
}
function describe(detail) {
    if (typeof detail === "string") {
        return detail;
    }
    if (Array.isArray(detail)) {
        // FastAPI's validation errors: [{loc: [...], msg: "..."}, ...]
        return detail
            .map((item) => {
            if (item && typeof item === "object" && "msg" in item) {
                const loc = Array.isArray(item.loc) ? item.loc.join(".") : "";
                return loc ? `${loc}: ${String(item.msg)}` : String(item.msg);
            }
            return JSON.stringify(item);
        })
            .join("; ");
    }
    return JSON.stringify(detail);
}
/** The typed error for an HTTP answer with status >= 400 and the text of its body. */
export function errorFromResponse(status, body, headers) {
    let detail = body;
    try {
        const parsed = JSON.parse(body);
        if (parsed && typeof parsed === "object" && "detail" in parsed) {
            detail = parsed.detail;
        }
    }
    catch {
        // not JSON: the body itself is the message
    }
    const message = describe(detail) || `HTTP ${status}`;
    switch (status) {
        case 400:
        case 422:
            return new InvalidRequestError(status, message, detail);
        case 401:
            return new AuthError(status, message, detail);
        case 403:
            return new ForbiddenError(status, message, detail);
        case 404:
            return new NotFoundError(status, message, detail);
        case 409:
            return new ConflictError(status, message, detail);
        case 413:
            return new PayloadTooLargeError(status, message, detail);
        case 429: {
            const header = Number(headers.get("retry-after"));
            return new RateLimitError(status, message, detail, Number.isFinite(header) && header > 0 ? header : 1);
        }
        default:
            return status >= 500 ? new ServerError(status, message, detail) : new SeepientError(status, message, detail);
    }
}
