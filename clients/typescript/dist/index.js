// @seepient/client: drive a Seepient server from TypeScript or JavaScript (Node.js 20+ and browsers).
export { Seepient, Session, Sessions, approveOnce, approveSession, reject } from "./client.js";
export { AuthError, ConflictError, ConnectionError, ForbiddenError, InvalidRequestError, NotFoundError, PayloadTooLargeError, RateLimitError, SeepientError, ServerError, } from "./errors.js";
export { readServerSentEvents } from "./sse.js";
export * from "./types.js";
