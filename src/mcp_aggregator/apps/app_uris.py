"""The URIs a tool definition or a tool result names, shown as the gateway routes them.

Two servers built from the same example point their tools at the same ``ui://`` address;
behind one gateway that address is shared, so the catalogue shows each server's copy under
its own name (``FeatureCatalog.shown_uri``). A host reads the app by the URI the tool's
``_meta.ui.resourceUri`` gives, so that URI must be the shown one too, in the listing and in
each result, as must the URIs of resource links and embedded resources in a result. Pure
functions over the SDK's models; ``shown`` maps one upstream URI to the one clients see.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import mcp_types as types

ShownUri = Callable[[str], str]

_UI_KEY: Final = "ui"
_FLAT_KEY: Final = "ui/resourceUri"
"""The form of ``_meta.ui.resourceUri`` that early MCP Apps hosts and servers used."""


def app_uri(tool: types.Tool) -> str | None:
    """The ``ui://`` address of the app ``tool``'s definition points at (None: none)."""
    meta = tool.meta or {}
    ui = meta.get(_UI_KEY)
    found = ui.get("resourceUri") if isinstance(ui, Mapping) else meta.get(_FLAT_KEY)
    return found if isinstance(found, str) else None


def binds_app(tool: types.Tool) -> bool:
    """Whether ``tool``'s definition points at an app (its results may name the app too)."""
    return app_uri(tool) is not None


def _shown_meta(meta: dict[str, Any] | None, shown: ShownUri) -> dict[str, Any] | None:
    """``meta`` with its app URIs shown; the same object when nothing changes."""
    if not meta:
        return meta
    out = meta
    ui = meta.get(_UI_KEY)
    if isinstance(ui, Mapping) and isinstance(uri := ui.get("resourceUri"), str) and shown(uri) != uri:
        out = {**out, _UI_KEY: {**ui, "resourceUri": shown(uri)}}
    flat = meta.get(_FLAT_KEY)
    if isinstance(flat, str) and shown(flat) != flat:
        out = {**out, _FLAT_KEY: shown(flat)}
    return out


def shown_tool(tool: types.Tool, shown: ShownUri) -> types.Tool:
    """``tool`` with its ``_meta`` app URI shown (the same object when it names none)."""
    meta = _shown_meta(tool.meta, shown)
    return tool if meta is tool.meta else tool.model_copy(update={"meta": meta})


def _shown_block(block: types.ContentBlock, shown: ShownUri) -> types.ContentBlock:
    if isinstance(block, types.ResourceLink) and shown(str(block.uri)) != str(block.uri):
        return block.model_copy(update={"uri": shown(str(block.uri))})
    if isinstance(block, types.EmbeddedResource) and shown(str(block.resource.uri)) != str(block.resource.uri):
        resource = block.resource.model_copy(update={"uri": shown(str(block.resource.uri))})
        return block.model_copy(update={"resource": resource})
    return block


def shown_result(result: types.CallToolResult, shown: ShownUri) -> types.CallToolResult:
    """``result`` with the URIs it names shown: its ``_meta`` app URI, resource links and
    embedded resources (the same object when none changes)."""
    meta = _shown_meta(result.meta, shown)
    content = [_shown_block(block, shown) for block in result.content]
    if meta is result.meta and all(a is b for a, b in zip(content, result.content, strict=True)):
        return result
    return result.model_copy(update={"meta": meta, "content": content})
