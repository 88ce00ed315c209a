/** The server refused a request. `message` is the server's reason; `status` the HTTP status (0: no answer). */
export declare class SeepientError extends Error {
    readonly status: number;
    /** The server's `detail`, as it sent it (a string, or FastAPI's list of validation problems). */
    readonly detail: unknown;
    constructor(status: number, message: string, detail?: unknown);
}
/** 401: the bearer token is missing or not known to the server. */
export declare class AuthError extends SeepientError {
}
/** 403: the token is valid but may not do this (a workspace outside its roots, a mode above its cap). */
export declare class ForbiddenError extends SeepientError {
}
/** 404: no such session or request, or it belongs to another principal (the server does not say which). */
export declare class NotFoundError extends SeepientError {
}
/** 409: a turn is already running in the session, or the approval request was already answered. */
export declare class ConflictError extends SeepientError {
}
/** 413: the request body is larger than the server accepts. */
export declare class PayloadTooLargeError extends SeepientError {
}
/** 400 or 422: the server could not accept the request as sent (the message lists what is wrong). */
export declare class InvalidRequestError extends SeepientError {
}
/** 429: this token is over its rate; try again after `retryAfter` seconds. */
export declare class RateLimitError extends SeepientError {
    /** Seconds to wait before the next request, from the `Retry-After` header (1 when it is absent). */
    readonly retryAfter: number;
    constructor(status: number, message: string, detail: unknown, retryAfter: number);
}
/** 5xx: the server failed. */
export declare class ServerError extends SeepientError {
}
/** The server could not be reached, or the event stream kept dropping and could not be resumed (a turn may still be running on the server). */
export declare class ConnectionError extends SeepientError {
    constructor(message: string, options?: {
        cause?: unknown;
    });
}
/** The typed error for an HTTP answer with status >= 400 and the text of its body. */
export declare function errorFromResponse(status: number, body: string, headers: {
    get(name: string): string | null;
}): SeepientError;
