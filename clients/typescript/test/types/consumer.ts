// A program written against the published declarations (resolved through package.json "exports", as a
// user's would be). It must compile, and each line marked @ts-expect-error must be a type error.

import {
    AuthError,
    NotFoundError,
    RateLimitError,
    Seepient,
    SeepientError,
    approveSession,
    reject,
    type ApprovalRequest,
    type PermissionAnswer,
    type Reply,
    type RuntimeEvent,
    type RuntimeEventType,
} from "@seepient/client";
import type { TurnCompleted } from "@seepient/client/types";

export async function example(): Promise<string> {
    const client = new Seepient({ baseUrl: "http://127.0.0.1:7337", token: "spt_x" });
    const names: string[] = await client.toolNames();
    const session = await client.sessions.create({ workspace: "/srv/repo", model: "replay:/s.json", mode: "always-ask" });
    session.onPermissionRequest((request: ApprovalRequest): PermissionAnswer => {
        const payload = request.action.payload;
        if (payload.type === "file_change") {
            const path: string = payload.path;
            const preImage: string | null = payload.pre_image_sha256;
            return path.startsWith("src/") && preImage !== null ? approveSession(request.scopes[0]?.kind) : reject("no");
        }
        if (payload.type === "shell") {
            return payload.capabilities?.includes("network") ? false : true;
        }
        return undefined;
    });
    let text = "";
    for await (const event of session.stream("go")) {
        switch (event.type) {
            case "text_delta":
                text += event.text;
                break;
            case "tool_result": {
                const status: "ok" | "error" | "denied" | "rejected" = event.status;
                text += status;
                break;
            }
            case "turn_completed": {
                const done: TurnCompleted = event;
                text += done.reason + done.usage.output_tokens;
                break;
            }
            case "permission_request":
                text += event.request.action.digest;
                break;
            default:
                break;
        }
    }
    const reply: Reply = await session.chat("again");
    const kinds: RuntimeEventType[] = reply.events.map((event: RuntimeEvent) => event.type);
    try {
        await session.interrupt();
    } catch (error) {
        if (error instanceof RateLimitError) {
            const seconds: number = error.retryAfter;
            text += seconds;
        } else if (error instanceof AuthError || error instanceof NotFoundError) {
            const status: number = error.status;
            text += status + error.message;
        } else if (error instanceof SeepientError) {
            text += error.detail;
        }
    }
    return text + names.join() + kinds.join() + reply.text;
}

export function misuses(event: RuntimeEvent, request: ApprovalRequest): void {
    // @ts-expect-error a text_delta has no status
    if (event.type === "text_delta") event.status;
    // @ts-expect-error no such event type
    if (event.type === "text_deltas") return;
    // @ts-expect-error decisions are approve_once, approve_session and reject
    const wrong: PermissionAnswer = { decision: "approve_always" };
    // @ts-expect-error the token is required
    new Seepient({ baseUrl: "http://127.0.0.1:7337" });
    // @ts-expect-error a digest is a string
    const digest: number = request.action.digest;
    void wrong;
    void digest;
}
