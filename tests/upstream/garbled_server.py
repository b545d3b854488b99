"""A stdio MCP server written by hand, line by line, that can answer a call with a broken
line: how the gateway meets an upstream whose output is not always JSON-RPC.

Tools: ``echo`` (answers ``text``), ``whoami`` (the ``clientInfo`` its client gave at
``initialize``, as ``name version``), ``meta`` (the request's ``_meta`` as JSON text: what
the gateway passed on, trace context included), ``garble`` (answers with a line cut off mid-JSON,
under the request's own id) and ``refuse`` (answers with a JSON-RPC error: ``code`` and
``message`` if given, else -32602 quoting ``$GARBLED_SECRET``); a prompt ``greet`` (argument ``name``) and a resource
``note://hello``, for the shape of a handshake-era answer that is not a tool's. It speaks the
2025-11-25 handshake and refuses the rest.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "whoami", "inputSchema": {"type": "object"}},
    {"name": "meta", "inputSchema": {"type": "object"}},
    {"name": "garble", "inputSchema": {"type": "object"}},
    {"name": "refuse", "inputSchema": {"type": "object"}},
]
PROMPTS = [{"name": "greet", "arguments": [{"name": "name", "required": True}]}]
NOTE_URI = "note://hello"
RESOURCES = [{"uri": NOTE_URI, "name": "hello", "mimeType": "text/plain"}]


def answer(ident: Any, result: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": result})


CLIENT: dict[str, Any] = {}


def handle(message: dict[str, Any]) -> str | None:
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None  # notifications: nothing to say
    params = message.get("params") or {}
    if method == "initialize":
        CLIENT.update(params.get("clientInfo") or {})
        info = {"name": "garbled", "version": "1"}
        capabilities = {"tools": {}, "prompts": {}, "resources": {}}
        return answer(ident, {"protocolVersion": "2025-11-25", "capabilities": capabilities, "serverInfo": info})
    if method == "ping":
        return answer(ident, {})
    if method == "tools/list":
        return answer(ident, {"tools": TOOLS})
    if method == "tools/call" and params.get("name") == "whoami":
        text = f"{CLIENT.get('name')} {CLIENT.get('version')}"
        return answer(ident, {"content": [{"type": "text", "text": text}]})
    if method == "tools/call" and params.get("name") == "meta":
        return answer(ident, {"content": [{"type": "text", "text": json.dumps(params.get("_meta") or {})}]})
    if method == "tools/call" and params.get("name") == "garble":
        return json.dumps({"jsonrpc": "2.0", "id": ident})[:-1] + ', "result": {"content": ['
    if method == "tools/call" and params.get("name") == "refuse":
        # Quoting its own credential, as careless servers do: the gateway must not pass it on.
        arguments = params.get("arguments") or {}
        secret = os.environ.get("GARBLED_SECRET", "")
        code, message = arguments.get("code", -32602), arguments.get("message", f"refused: token={secret}")
        error = {"code": code, "message": message, "data": {"why": "asked to"}}
        return json.dumps({"jsonrpc": "2.0", "id": ident, "error": error})
    if method == "tools/call":
        text = str((params.get("arguments") or {}).get("text", ""))
        return answer(ident, {"content": [{"type": "text", "text": text}]})
    if method == "prompts/list":
        return answer(ident, {"prompts": PROMPTS})
    if method == "prompts/get" and params.get("name") == "greet":
        text = f"Hello, {(params.get('arguments') or {}).get('name', 'nobody')}!"
        return answer(ident, {"messages": [{"role": "user", "content": {"type": "text", "text": text}}]})
    if method == "resources/list":
        return answer(ident, {"resources": RESOURCES})
    if method == "resources/templates/list":
        return answer(ident, {"resourceTemplates": []})
    if method == "resources/read" and params.get("uri") == NOTE_URI:
        return answer(ident, {"contents": [{"uri": NOTE_URI, "mimeType": "text/plain", "text": "a note"}]})
    if method in ("prompts/get", "resources/read"):
        error = {"code": -32602, "message": f"not found: {params.get('name') or params.get('uri')}"}
        return json.dumps({"jsonrpc": "2.0", "id": ident, "error": error})
    error = {"code": -32601, "message": f"Method not found: {method}"}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "error": error})


def main() -> None:
    for line in sys.stdin:
        if not line.strip():
            continue
        out = handle(json.loads(line))
        if out is not None:
            sys.stdout.write(out + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
