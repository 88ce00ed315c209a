"""The JSON Schema of the runtime events the server streams (SSE ``data:`` and WebSocket frames).

Clients in other languages generate their event types from it. Every field is marked required because
the server always sends every field (defaults included), so a client may rely on each one being present.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from seepient.protocol import RuntimeEvent


class _EveryFieldSent(GenerateJsonSchema):
    """Serialization schemas in which a field is required when the server always sends it.

    A model with a wrap serializer typed ``Any`` post-processes its own dump (it leaves out a field at its
    default, to keep old digests stable): it is described by its fields, and a field with a default is
    optional there, because the serializer may omit it (its literal ``type`` tag excepted).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._may_omit_defaults: list[bool] = []

    def ser_schema(
        self, schema: core_schema.SerSchema | core_schema.IncExSeqSerSchema | core_schema.IncExDictSerSchema
    ) -> JsonSchemaValue | None:
        if _wraps_any(schema):
            return None
        return super().ser_schema(schema)

    def model_schema(self, schema: core_schema.ModelSchema) -> JsonSchemaValue:
        self._may_omit_defaults.append(_wraps_any(schema.get("serialization")))
        try:
            return super().model_schema(schema)
        finally:
            self._may_omit_defaults.pop()

    def field_is_required(
        self,
        field: core_schema.ModelField | core_schema.DataclassField | core_schema.TypedDictField,
        total: bool,
    ) -> bool:
        if self.mode != "serialization":
            return super().field_is_required(field, total)
        if self._may_omit_defaults and self._may_omit_defaults[-1] and not _is_tag(field):
            return super().field_is_required(field, total)
        return not field.get("serialization_exclude")


def _is_tag(field: Any) -> bool:
    inner = field.get("schema", {})
    if inner.get("type") == "default":
        inner = inner.get("schema", {})
    return bool(inner.get("type") == "literal")


def _wraps_any(schema: Any) -> bool:
    if not isinstance(schema, dict) or schema.get("type") != "function-wrap":
        return False
    returns = schema.get("return_schema")
    return returns is None or returns.get("type") == "any"


@cache
def runtime_event_schema() -> dict[str, Any]:
    """The discriminated union of runtime events (by ``type``), with its ``$defs``."""
    schema = TypeAdapter(RuntimeEvent).json_schema(mode="serialization", schema_generator=_EveryFieldSent)
    return {"title": "RuntimeEvent", **schema}
