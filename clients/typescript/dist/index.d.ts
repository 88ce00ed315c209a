export { Seepient, Session, Sessions, approveOnce, approveSession, reject } from "./client.js";
export type { EventsOptions, PermissionAnswer, PermissionContext, PermissionHandler, ReconnectOptions, Reply, SeepientOptions, Transport, TurnOptions, WebSocketConstructor, } from "./client.js";
export { AuthError, ConflictError, ConnectionError, ForbiddenError, InvalidRequestError, NotFoundError, PayloadTooLargeError, RateLimitError, SeepientError, ServerError, } from "./errors.js";
export { readServerSentEvents } from "./sse.js";
export type { ServerSentEvent } from "./sse.js";
export * from "./types.js";
