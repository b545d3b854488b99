"""How log lines are written: ``text`` for people, ``json`` (one object a line) for collectors."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from mcp_aggregator.logs.log_context import current_call, current_request_id

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
CONTEXT_FIELDS = ("request_id", "client", "jsonrpc_id", "server", "tool")


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


def context_fields(record: logging.LogRecord) -> dict[str, str]:
    """The record's request id, client, server and tool: given as ``extra``, else from the context."""
    # Imported here, not at the top: the command line names ``LogFormat`` in its options and
    # must not pay for the relay (and the MCP types) to print its help.
    from mcp_aggregator.relay.caller import current_caller

    fields: dict[str, str] = {}
    caller = current_caller.get()
    # The caller's first: a handshake-era session's calls run in that session's task, whose
    # context holds the id of the request that opened the session.
    request_id = (
        getattr(record, "request_id", None)
        or (caller.http_request_id if caller is not None else None)
        or current_request_id.get()
    )
    if request_id:
        fields["request_id"] = request_id
    client = getattr(record, "client", None) or (caller.identity.name if caller is not None else None)
    if client:
        fields["client"] = client
    if caller is not None and caller.request_id is not None:
        # The MCP request's own id: the audit's ``jsonrpc_id``, the traces' ``jsonrpc.request.id``.
        fields["jsonrpc_id"] = str(caller.request_id)
    call = current_call.get()
    server = getattr(record, "server", None) or (call[0] if call else None)
    tool = getattr(record, "tool", None) or (call[1] if call else None)
    if server:
        fields["server"] = server
    if tool:
        fields["tool"] = tool
    return fields


class JsonLogFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (UTC, ISO 8601), ``level``, ``logger``, ``message``,
    then ``request_id`` (the HTTP request's, as the audit trail and traces record it too),
    ``client``, ``jsonrpc_id`` (the MCP request's), ``server``, ``tool`` when known, and
    ``exception``."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            **context_fields(record),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            line["exception"] = record.exc_text
        return json.dumps(line, ensure_ascii=False, default=str)


def configure_logging(level: int, log_format: LogFormat = LogFormat.TEXT) -> None:
    """One handler on stderr for every logger (uvicorn's too: serve it with ``log_config=None``)."""
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonLogFormatter() if log_format is LogFormat.JSON else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
