// How an HTTP refusal becomes a typed error carrying the server's message (the server tests meet most of
// these live; a 5xx and FastAPI's validation list are checked here).

import assert from "node:assert/strict";
import { test } from "node:test";

import { errorFromResponse } from "../dist/errors.js";
import {
    AuthError,
    ConflictError,
    ForbiddenError,
    InvalidRequestError,
    NotFoundError,
    PayloadTooLargeError,
    RateLimitError,
    SeepientError,
    ServerError,
} from "@seepient/client";

const headers = (values = {}) => new Headers(values);

test("each status maps to its class, all of them SeepientErrors with the server's detail as message", () => {
    const cases = [
        [400, InvalidRequestError],
        [401, AuthError],
        [403, ForbiddenError],
        [404, NotFoundError],
        [409, ConflictError],
        [413, PayloadTooLargeError],
        [429, RateLimitError],
        [500, ServerError],
        [503, ServerError],
        [418, SeepientError],
    ];
    for (const [status, kind] of cases) {
        const error = errorFromResponse(status, JSON.stringify({ detail: `reason ${status}` }), headers());
        assert.ok(error instanceof kind && error instanceof SeepientError && error instanceof Error, `${status}`);
        assert.equal(error.constructor, kind);
        assert.equal(error.name, kind.name);
        assert.equal(error.status, status);
        assert.equal(error.message, `reason ${status}`);
    }
});

test("429 carries Retry-After in seconds, 1 when absent or unreadable", () => {
    assert.equal(errorFromResponse(429, "{}", headers({ "Retry-After": "7" })).retryAfter, 7);
    assert.equal(errorFromResponse(429, "{}", headers()).retryAfter, 1);
    assert.equal(errorFromResponse(429, "{}", headers({ "Retry-After": "soon" })).retryAfter, 1);
});

test("a validation list is spelled out field by field; a body that is not JSON is the message itself", () => {
    const detail = [
        { loc: ["body", "prompt"], msg: "String should have at least 1 character", type: "string_too_short" },
        { loc: ["query", "after"], msg: "Input should be greater than or equal to 0" },
    ];
    const invalid = errorFromResponse(422, JSON.stringify({ detail }), headers());
    assert.ok(invalid instanceof InvalidRequestError);
    assert.equal(
        invalid.message,
        "body.prompt: String should have at least 1 character; query.after: Input should be greater than or equal to 0",
    );
    assert.deepEqual(invalid.detail, detail);
    const gateway = errorFromResponse(502, "Bad Gateway", headers());
    assert.ok(gateway instanceof ServerError);
    assert.equal(gateway.message, "Bad Gateway");
    assert.equal(errorFromResponse(500, "", headers()).message, "HTTP 500");
});
