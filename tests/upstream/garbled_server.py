"""A stdio MCP server written by hand, line by line, that can answer a call with a broken
line: how the gateway meets an upstream whose output is not always JSON-RPC.

Tools: ``echo`` (answers ``text``) and ``garble`` (answers with a line cut off mid-JSON,
under the request's own id). It speaks the 2025-11-25 handshake and refuses the rest.
"""

from __future__ import annotations

import json
import sys
from typing import Any

TOOLS = [
    {"name": "echo", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "garble", "inputSchema": {"type": "object"}},
]


def answer(ident: Any, result: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "result": result})


def handle(message: dict[str, Any]) -> str | None:
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        return None  # notifications: nothing to say
    params = message.get("params") or {}
    if method == "initialize":
        info = {"name": "garbled", "version": "1"}
        return answer(ident, {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": info})
    if method == "ping":
        return answer(ident, {})
    if method == "tools/list":
        return answer(ident, {"tools": TOOLS})
    if method == "tools/call" and params.get("name") == "garble":
        return json.dumps({"jsonrpc": "2.0", "id": ident})[:-1] + ', "result": {"content": ['
    if method == "tools/call":
        text = str((params.get("arguments") or {}).get("text", ""))
        return answer(ident, {"content": [{"type": "text", "text": text}]})
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
