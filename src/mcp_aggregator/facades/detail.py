"""Detail levels and the projections of tool and server records at each level.

``minimal`` = ids and names only; ``standard`` = key fields and excerpts; ``full`` =
everything, schemas included. Projections omit empty fields: they cost tokens and say nothing.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from enum import StrEnum
from typing import Any

from mcp_aggregator.errors import FacadeError
from mcp_aggregator.facades.param_schema import ParamSchema
from mcp_aggregator.facades.records import ScoredTool, ServerRecord, ServerStatus, ToolRecord

EXCERPT_CHARS = 160
# Western sentences end in punctuation plus a space; CJK ones (U+3002, U+FF01, U+FF1F) need none.
_CJK_ENDS = "\u3002\uff01\uff1f"
_SENTENCE_END = re.compile(f"(?<=[.!?])\\s+|(?<=[{_CJK_ENDS}])")


class Detail(StrEnum):
    MINIMAL = "minimal"
    STANDARD = "standard"
    FULL = "full"

    @classmethod
    def parse(cls, value: object) -> Detail:
        """``None`` means ``standard``; case-insensitive; raises ``FacadeError`` naming ``detail``."""
        if value is None:
            return cls.STANDARD
        if isinstance(value, str):
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        choices = ", ".join(level.value for level in cls)
        raise FacadeError(f"detail: must be one of {choices}, got {value!r}")


def excerpt(text: str | None, limit: int = EXCERPT_CHARS) -> str:
    """The first paragraph, cut to whole sentences (or words) within ``limit`` characters."""
    if not text:
        return ""
    first = text.strip().split("\n\n", 1)[0]
    first = " ".join(first.split())
    if len(first) <= limit:
        return first
    sentences = _SENTENCE_END.split(first)
    kept = ""
    for sentence in sentences:
        joiner = "" if not kept or kept[-1] in _CJK_ENDS else " "
        candidate = f"{kept}{joiner}{sentence}"
        if len(candidate) > limit:
            break
        kept = candidate
    if kept:
        return kept
    cut = first[: limit - 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + "…"


def _compact(record: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in record.items() if value not in (None, "", [], {})}


Signature = Callable[[ToolRecord], str]
"""A tool written for a script (code mode), headed by the name ``call_tool`` takes. With one,
a record is its ``signature`` in place of ``name``, ``server`` and ``args`` (the signature
starts with the name, the name with the server); ``full`` adds the whole description and
the arguments' descriptions (``argDocs``) in place of the raw input and output schemas: the
signature carries their types, enums and result shape, and the model writes a script, not
a JSON request."""


def project_tool(tool: ToolRecord, detail: Detail) -> dict[str, Any]:
    if detail is Detail.MINIMAL:
        return {"name": tool.name, "server": tool.server}
    if detail is Detail.STANDARD:
        return _compact(
            {
                "name": tool.name,
                "server": tool.server,
                "skill": tool.skill,
                "description": excerpt(tool.description),
                "args": ParamSchema(tool.input_schema, lenient=True).signature(),
            }
        )
    return _compact(
        {
            "name": tool.name,
            "server": tool.server,
            "originalName": tool.original_name,
            "title": tool.title,
            "skill": tool.skill,
            "description": tool.description,
            "inputSchema": dict(tool.input_schema),
            "outputSchema": dict(tool.output_schema) if tool.output_schema else None,
            "annotations": dict(tool.annotations) if tool.annotations else None,
            "app": tool.app,
        }
    )


def project_script_tool(tool: ToolRecord, detail: Detail, signature: Signature) -> dict[str, Any] | str:
    """A tool for a script (code mode); ``minimal`` as ``project_tool`` gives it."""
    if detail is Detail.MINIMAL:
        return project_tool(tool, detail)
    if detail is Detail.STANDARD:
        return stub_line(signature(tool), tool)
    return _compact(
        {
            "signature": signature(tool),
            "title": tool.title,
            "skill": tool.skill,
            "description": tidy(tool.description),
            "argDocs": arg_docs(tool.input_schema),
            "annotations": dict(tool.annotations) if tool.annotations else None,
            "app": tool.app,
        }
    )


def tidy(text: str) -> str:
    """``text`` without its docstring indentation and trailing blanks: they mean nothing and
    cost tokens; line breaks and relative indentation (an example's) stay."""
    return "\n".join(line.rstrip() for line in inspect.cleandoc(text).splitlines())


def stub_line(signature: str, tool: ToolRecord) -> str:
    """``name(args) -> result  # excerpt [skill: s]``: a tool at ``standard`` for a script, one
    line as a Python stub reads (keys and quotes would cost more than the line itself)."""
    note = excerpt(tool.description)
    if tool.skill:
        note = f"{note} [skill: {tool.skill}]".strip()
    return f"{signature}  # {note}" if note else signature


def arg_docs(schema: Mapping[str, Any]) -> dict[str, str]:
    """The description of each top-level argument that has one, by argument name."""
    props = schema.get("properties")
    if not isinstance(props, Mapping):
        return {}
    return {
        name: " ".join(prop["description"].split())
        for name, prop in props.items()
        if isinstance(prop, Mapping) and isinstance(prop.get("description"), str) and prop["description"].strip()
    }


def project_hit(hit: ScoredTool, detail: Detail) -> dict[str, Any]:
    """A search hit: the tool's projection plus its score (rounded: digits past 3 are noise).
    A hit for a script is ``project_script_tool`` alone: hits come best first, and a script
    needs which tools fit, not by how much."""
    record = project_tool(hit.tool, detail)
    if detail is not Detail.MINIMAL:
        record["score"] = round(hit.score, 3)
    return record


def project_server(server: ServerRecord, detail: Detail) -> dict[str, Any]:
    if detail is Detail.MINIMAL:
        return {"name": server.name}
    if detail is Detail.STANDARD:
        return _compact(
            {
                "name": server.name,
                "status": server.status,
                "transport": server.transport,
                "toolCount": server.tool_count,
                "description": excerpt(server.description),
            }
        )
    return _compact(
        {
            "name": server.name,
            "status": server.status,
            "transport": server.transport,
            "description": server.description,
            "lastError": server.last_error,
            "tools": list(server.tools),
            "toolCount": server.tool_count,
            "details": dict(server.details),
        }
    )


def project_status(status: ServerStatus, detail: Detail) -> dict[str, Any]:
    if detail is Detail.MINIMAL:
        return {"name": status.name, "state": status.state}
    record: dict[str, Any] = {
        "name": status.name,
        "state": status.state,
        "since": status.since,
        "lastError": status.last_error,
    }
    if detail is Detail.FULL:
        record["details"] = dict(status.details)
    return _compact(record)
