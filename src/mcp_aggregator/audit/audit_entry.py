"""``AuditEntry``: one call as the audit trail keeps it, and the pure rules that make it.

What a call's outcome was (``ok``, ``error`` or ``denied``), the digest of its arguments,
and its argument values with secrets hidden are decided here, apart from any I/O, so the
rules are tested with tables.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Final

import orjson

from mcp_aggregator.errors import PolicyError
from mcp_aggregator.registry.redaction import REDACTED, looks_like_token

Scrub = Callable[[str], str]

_SECRET_KEY: Final = re.compile(
    r"token|secret|passw|api[_-]?key|auth|credential|private[_-]?key|cookie|bearer|session[_-]?id", re.I
)
_IS_ERROR: Final = re.compile(rb'"isError"\s*:\s*true')
_TAIL: Final = 4096
"""How far from its end a raw result is searched for ``"isError": true`` (SDK servers write
the flag after the content; a multi-megabyte result is not scanned whole on the hot path)."""
MAX_ERROR_TEXT: Final = 2000


class Outcome(StrEnum):
    OK = "ok"
    ERROR = "error"
    DENIED = "denied"


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One audited call. ``id`` is None until stored; ``arguments`` only with
    ``audit.include_arguments`` (secrets hidden); ``client`` None for an unidentified client.
    ``request_id``: the HTTP request's id (``X-Request-Id``, the access log's and the log
    lines'), None over stdio; ``jsonrpc_id``: the client's JSON-RPC id of the request."""

    time: datetime
    client: str | None
    profile: str
    method: str
    server: str
    tool: str
    outcome: Outcome
    duration_ms: float
    arguments_digest: str | None
    arguments: Any = None
    error: str | None = None
    request_id: str | None = None
    jsonrpc_id: str | None = None
    id: int | None = None
    guardrails: tuple[dict[str, Any], ...] | None = None
    """What guardrail rules decided on the call (``{rule, action, kind, where, found}``, never a value)."""
    cached: bool = False
    """The tool result cache answered the call (its outcome is then ``ok``)."""

    def to_json(self, *, with_arguments: bool) -> dict[str, Any]:
        """The REST API's shape of the entry (``arguments`` only when kept and asked for)."""
        item: dict[str, Any] = {
            "id": self.id,
            "time": self.time.isoformat(),
            "client": self.client,
            "profile": self.profile,
            "method": self.method,
            "server": self.server,
            "tool": self.tool,
            "outcome": self.outcome.value,
            "duration_ms": round(self.duration_ms, 3),
            "arguments_digest": self.arguments_digest,
        }
        if with_arguments and self.arguments is not None:
            item["arguments"] = self.arguments
        if self.error is not None:
            item["error"] = self.error
        if self.request_id is not None:
            item["request_id"] = self.request_id
        if self.jsonrpc_id is not None:
            item["jsonrpc_id"] = self.jsonrpc_id
        if self.guardrails:
            item["guardrails"] = list(self.guardrails)
        if self.cached:
            item["cached"] = True
        return item


def is_denial(exc: BaseException) -> bool:
    """Whether ``exc`` is a refusal by policy rather than a failure: a ``PolicyError``
    (``AccessDeniedError`` and held tools among them), or any error that says so itself
    (a true ``denied`` attribute, or a class name ending in ``DeniedError``)."""
    if isinstance(exc, PolicyError) or getattr(exc, "denied", False) is True:
        return True
    return type(exc).__name__.endswith("DeniedError")


def outcome_of(result: object) -> Outcome:
    """The outcome of a call that ended with ``result``: an exception, a result model, or the
    raw bytes of an upstream's answer (the fast path). A tool result with ``isError`` is an
    error; so is a JSON-RPC error answer."""
    if isinstance(result, BaseException):
        return Outcome.DENIED if is_denial(result) else Outcome.ERROR
    if isinstance(result, bytes):
        return Outcome.ERROR if _IS_ERROR.search(result, max(0, len(result) - _TAIL)) else Outcome.OK
    return Outcome.ERROR if getattr(result, "is_error", False) is True else Outcome.OK


def error_text(result: object, scrub: Scrub) -> str | None:
    """What went wrong, scrubbed and cut to ``MAX_ERROR_TEXT``; None for a result."""
    if not isinstance(result, BaseException):
        return None
    text = f"{type(result).__name__}: {result}"
    return scrub(storable(text))[:MAX_ERROR_TEXT]


def arguments_digest(arguments: Mapping[str, Any] | None) -> str | None:
    """SHA-256 of the arguments as canonical JSON (keys sorted): equal arguments, equal
    digests, whatever order the client wrote them in. None when the call had none."""
    if arguments is None:
        return None
    try:
        data = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    except orjson.JSONEncodeError:
        # Text that is not valid Unicode (a lone surrogate, refused at the edge, still audited).
        data = json.dumps(arguments, sort_keys=True, default=str, separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()


def scrubbed_arguments(value: Any, scrub: Scrub) -> Any:
    """``value`` with secrets hidden as ``***``: values under secret-sounding keys
    (``token``, ``password``, ``api_key``...), strings that look like credentials, and every
    secret of the servers' configs (``scrub``) inside any string."""
    if isinstance(value, Mapping):
        return {
            str(key): REDACTED if _SECRET_KEY.search(str(key)) else scrubbed_arguments(item, scrub)
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrubbed_arguments(item, scrub) for item in value]
    if isinstance(value, str):
        return REDACTED if looks_like_token(value) else scrub(storable(value))
    return value


def storable(text: str) -> str:
    """``text`` as a database takes it: a lone surrogate (not valid Unicode) escaped."""
    try:
        text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode()
    return text
