"""JSON log lines and the context they carry."""

from __future__ import annotations

import dataclasses
import json
import logging
import sys

from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.logs import JsonLogFormatter, call_context, current_request_id
from mcp_aggregator.relay.caller import NO_CALLER, current_caller


def record(message: str = "hello %s", *args: object, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("mcp_aggregator.test", logging.WARNING, __file__, 1, message, args or ("world",), None)
    for key, value in extra.items():
        setattr(made, key, value)
    return made


def test_a_line_is_one_json_object_with_time_level_logger_and_message() -> None:
    line = JsonLogFormatter().format(record())
    assert "\n" not in line
    parsed = json.loads(line)
    assert {k: parsed[k] for k in ("level", "logger", "message")} == {
        "level": "WARNING",
        "logger": "mcp_aggregator.test",
        "message": "hello world",
    }
    assert parsed["time"].endswith("+00:00") and "T" in parsed["time"]
    assert not {"request_id", "client", "server", "tool"} & parsed.keys(), "absent when unknown"


def test_the_request_id_client_server_and_tool_come_from_the_context() -> None:
    caller = dataclasses.replace(NO_CALLER, identity=ClientIdentity(name="ci-bot", profile="default"), request_id=7)
    request = current_request_id.set("req-1")
    calling = current_caller.set(caller)
    try:
        with call_context("alpha", "alpha.echo"):
            parsed = json.loads(JsonLogFormatter().format(record()))
    finally:
        current_caller.reset(calling)
        current_request_id.reset(request)
    assert {k: parsed[k] for k in ("request_id", "client", "jsonrpc_id", "server", "tool")} == {
        "request_id": "req-1",
        "client": "ci-bot",
        "jsonrpc_id": "7",
        "server": "alpha",
        "tool": "alpha.echo",
    }


def test_a_calls_http_request_id_wins_over_the_contexts() -> None:
    """A handshake-era session's calls run in its task, whose context holds the id of the
    request that opened the session: the caller's own id is the one logged."""
    caller = dataclasses.replace(NO_CALLER, http_request_id="this-call")
    request = current_request_id.set("session-opener")
    calling = current_caller.set(caller)
    try:
        parsed = json.loads(JsonLogFormatter().format(record()))
    finally:
        current_caller.reset(calling)
        current_request_id.reset(request)
    assert parsed["request_id"] == "this-call"


def test_fields_given_as_extra_win_and_an_exception_is_kept_in_one_line() -> None:
    try:
        raise ValueError("bad\nthing")
    except ValueError:
        failed = record(server="beta", tool="beta.add")
        failed.exc_info = sys.exc_info()
    with call_context("alpha", "alpha.echo"):
        parsed = json.loads(JsonLogFormatter().format(failed))
    assert (parsed["server"], parsed["tool"]) == ("beta", "beta.add")
    assert "ValueError: bad\nthing" in parsed["exception"]
