"""Structured logs for the server and the scheduler: one JSON object a line, with the trace and span ids of
the span current when the line was logged (when traces are on), so a log line leads to its trace."""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from typing import IO, Any

from seepient.telemetry.spans import current_ids

_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonLines(logging.Formatter):
    """``{"ts", "level", "logger", "event", ...the record's extra fields, "trace_id", "span_id"}``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                line[key] = value
        ids = current_ids()
        if ids is not None:
            line["trace_id"], line["span_id"] = ids
        if record.exc_info and record.exc_info[0] is not None:
            line["error_type"] = record.exc_info[0].__name__
        return json.dumps(line, default=str, ensure_ascii=False)


def log_event(logger: logging.Logger, event: str, fields: dict[str, Any], level: int = logging.INFO) -> None:
    """Log ``event`` with ``fields`` as the line's own keys (a field named like a log record attribute gets a
    trailing ``_``); costs one level check when nothing listens."""
    if logger.isEnabledFor(level):
        logger.log(level, event, extra={f"{k}_" if k in _STANDARD else k: v for k, v in fields.items()})


def use_json_logs(stream: IO[str] | None = None, level: int = logging.INFO) -> logging.Handler:
    """Send Seepient's and uvicorn's/aiohttp's log records to ``stream`` (stderr) as JSON lines."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLines())
    for name in ("seepient", "uvicorn", "uvicorn.error", "aiohttp.server"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.setLevel(level)
        logger.propagate = False
    return handler
