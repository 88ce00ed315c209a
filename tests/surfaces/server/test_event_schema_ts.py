"""The server's event schema (``/v1/schema/events``) and the TypeScript client's types generated from it and
from ``/openapi.json``: the schema tells the truth about real events, and ``clients/typescript`` (snapshot,
source and the checked-in ``dist/types.d.ts``) matches a running server, event by event and field by field."""

from __future__ import annotations

import asyncio
import copy
import importlib.util
import json
import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import jsonschema
import pytest

from seepient.protocol import RuntimeEvent
from tests.surfaces.server.conftest import Served

_SCRIPT = Path(__file__).resolve().parents[3] / "clients" / "typescript" / "scripts" / "gen_types.py"


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("seepient_ts_gen_types", _SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


async def _live(served: Served) -> dict[str, Any]:
    async with served.client(None) as anonymous, served.client() as client:
        openapi = await anonymous.get("/openapi.json")
        events = await client.get("/v1/schema/events")
        refused = await anonymous.get("/v1/schema/events")
    assert openapi.status_code == 200 and events.status_code == 200, events.text
    assert refused.status_code == 401
    return gen.snapshot_of(openapi.json(), events.json())


def _event_classes() -> dict[str, str]:
    union = typing.get_args(typing.get_args(RuntimeEvent)[0])
    return {cls.model_fields["type"].default: cls.__name__ for cls in union}


async def test_the_event_schema_names_every_runtime_event(served: Served) -> None:
    schema = (await _live(served))["events"]
    mapping = schema["discriminator"]["mapping"]
    assert {kind: ref.rsplit("/", 1)[-1] for kind, ref in mapping.items()} == _event_classes()
    assert schema["discriminator"]["propertyName"] == "type"


async def test_real_events_validate_against_the_schema_with_every_field_required(served: Served) -> None:
    schema = (await _live(served))["events"]
    script = served.script(
        [
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "s.txt", "content": "x"}}]},
            {"text": "done"},
        ]
    )
    async with served.client() as client:
        created = await client.post(
            "/v1/sessions",
            json={"workspace": str(served.workspace), "model": f"replay:{script}", "mode": "always-ask"},
        )
        session_id = created.json()["id"]
        await client.post(f"/v1/sessions/{session_id}/messages", json={"prompt": "go"})
        events: list[dict[str, Any]] = []
        for _ in range(500):
            body = (await client.get(f"/v1/sessions/{session_id}/events?follow=false")).text
            events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
            if any(e["type"] == "permission_request" for e in events):
                break
            await asyncio.sleep(0.02)
        asked = [e for e in events if e["type"] == "permission_request"]
        assert asked, f"the turn never asked for approval: {[e['type'] for e in events]}"
        request = asked[0]["request"]
        await client.post(
            f"/v1/sessions/{session_id}/approvals/{request['request_id']}", json={"decision": "approve_once"}
        )
        # The approved turn goes on after the answer: wait for its end (a second prompt would be refused
        # with 409 while it runs, and reading the events at once races its last ones).
        for _ in range(500):
            body = (await client.get(f"/v1/sessions/{session_id}/events?follow=false")).text
            if '"turn_completed"' in body:
                break
            await asyncio.sleep(0.02)
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    kinds = {e["type"] for e in events}
    assert {
        "turn_started",
        "permission_request",
        "permission_resolved",
        "tool_result",
        "turn_completed",
    } <= kinds
    validator = jsonschema.Draft202012Validator(schema)
    for event in events:
        errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(event)]
        assert not errors, f"{event['type']} does not match the schema: {errors}"
    # "Required" is a promise: a field missing from a real event breaks it.
    broken = {
        k: v for k, v in next(e for e in events if e["type"] == "turn_completed").items() if k != "usage"
    }
    assert not validator.is_valid(broken)


async def test_the_typescript_types_match_the_running_server(served: Served) -> None:
    problems = gen.drift(await _live(served))
    assert not problems, "clients/typescript no longer matches the server:\n- " + "\n- ".join(
        [*problems, gen.REGENERATE]
    )


def test_the_declarations_read_back_from_dist_are_the_generated_ones() -> None:
    committed = json.loads(gen.SNAPSHOT.read_text())
    parsed = gen.parse_declarations(gen.DECLARATIONS.read_text())
    expected = gen.declarations(committed)
    assert set(parsed) == set(expected)
    assert parsed["TurnCompleted"].event == "turn_completed"
    fields = {f.name: (f.type, f.optional) for f in parsed["TurnCompleted"].fields}
    assert fields["reason"] == ('"final"|"step_limit"|"budget"|"interrupted"|"error"', False)
    assert fields["usage"] == ("Usage", False)
    assert not gen.differences(expected, parsed, "dist/types.d.ts")


def _add_event(snapshot: dict[str, Any], kind: str, name: str, fields: dict[str, Any]) -> None:
    events = snapshot["events"]
    properties = {
        "session_id": {"type": "string"},
        "seq": {"type": "integer"},
        "type": {"const": kind, "type": "string"},
        **fields,
    }
    events["$defs"][name] = {"type": "object", "properties": properties, "required": list(properties)}
    events["oneOf"].append({"$ref": f"#/$defs/{name}"})
    events["discriminator"]["mapping"][kind] = f"#/$defs/{name}"


def test_drift_is_reported_by_event_and_field() -> None:
    """What a colleague's new event or changed field looks like to this check: each difference named."""
    server = copy.deepcopy(json.loads(gen.SNAPSHOT.read_text()))
    _add_event(
        server, "plan_updated", "PlanUpdated", {"steps": {"type": "array", "items": {"type": "string"}}}
    )
    defs = server["events"]["$defs"]
    defs["TextDelta"]["properties"]["text"] = {"type": "integer"}
    defs["TurnCompleted"]["properties"]["cached"] = {"type": "boolean"}
    defs["TurnCompleted"]["required"].append("cached")
    del defs["TurnStarted"]["properties"]["prompt"]
    defs["TurnStarted"]["required"].remove("prompt")
    defs["ToolResult"]["required"].remove("digest")
    server["openapi"]["components"]["schemas"]["TurnReply"]["properties"]["elapsed_ms"] = {"type": "number"}

    client = gen.parse_declarations(gen.DECLARATIONS.read_text())
    problems = gen.differences(gen.declarations(server), client, "dist/types.d.ts")
    assert set(problems) == {
        "RuntimeEvent: the server sends PlanUpdated, which dist/types.d.ts does not list",
        "event `plan_updated` (PlanUpdated) is sent by the server but missing from dist/types.d.ts",
        "event `text_delta` (TextDelta): field `text` is `number` on the server but `string` in dist/types.d.ts",
        "event `turn_completed` (TurnCompleted): field `cached: boolean` is missing from dist/types.d.ts",
        "event `turn_started` (TurnStarted): field `prompt` is in dist/types.d.ts but not on the server",
        "event `tool_result` (ToolResult): field `digest` is optional on the server but required in dist/types.d.ts",
        "type TurnReply: field `elapsed_ms?: number` is missing from dist/types.d.ts",
    }, "\n".join(problems)
    # Regenerating from that server makes the declarations agree again.
    rendered = gen.parse_declarations(gen.render(server))
    assert gen.differences(gen.declarations(server), rendered, "src/types.ts") == []


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, "string | null"),
        ({"type": "array", "items": {"enum": ["a", "b"]}}, '("a" | "b")[]'),
        ({"type": "object", "additionalProperties": True}, "{ [key: string]: unknown; }"),
        ({"type": "object", "additionalProperties": {"type": "integer"}}, "{ [key: string]: number; }"),
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, "[string, number]"),
        ({"$ref": "#/components/schemas/ApprovalRequest"}, "ApprovalRequest"),
        ({}, "unknown"),
    ],
)
def test_json_schema_to_typescript(schema: dict[str, Any], expected: str) -> None:
    assert gen.ts_type(schema) == expected
