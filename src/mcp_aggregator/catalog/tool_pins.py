"""Tool-definition pinning, the pure core: fingerprints and the approve / hold decision.

A tool's definition (name, description, input and output schema, annotations) is
fingerprinted when the gateway first trusts it. A later discovery that lists a different
definition under the same name does not replace the trusted one: the tool is *held*
(``changed``) with its new definition kept aside until an admin approves it. This is the
defence against an upstream that rewrites a tool after it was reviewed ("rug pull").

A guardrail on tool definitions can hold a tool too (it is ``suspect``). A pin made before
the finding existed (the tool was trusted on first sight, or before the rule was added) does
not clear it: the pinned definition itself is held (``flagged``) until an admin approves it
knowing the finding; that approval is kept on the pin (``cleared_fingerprint``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # Annotations only: the settings name ``NewToolPolicy`` and load without the MCP types.
    import mcp_types as types

JsonObject = dict[str, Any]


class NewToolPolicy(StrEnum):
    ALLOW = "allow"
    HOLD = "hold"


class PinStatus(StrEnum):
    APPROVED = "approved"
    CHANGED = "changed"
    FLAGGED = "flagged"
    NEW = "new"


def tool_definition(tool: types.Tool) -> JsonObject:
    """The parts of a tool a client relies on, as wire JSON (camelCase), absent parts as null.

    The schemas are the tool's own dicts, shared, not copies (treat the result as read-only):
    they came off the wire as JSON, which is what a dump would have made of them again, and a
    pin per tool holding a copy of every schema cost a second catalogue's worth of memory.
    """
    annotations = (
        tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True) if tool.annotations else None
    )
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": tool.input_schema or {},
        "outputSchema": tool.output_schema,
        "annotations": annotations,
    }


def fingerprint(definition: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``definition`` (sorted keys, no spaces, UTF-8)."""
    canonical = json.dumps(definition, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ToolPin:
    """The trusted definition of one tool of one server, and a pending one if it is held.

    ``fingerprint``/``definition`` are ``None`` for a new tool held before its first approval;
    a pending fingerprint equal to the trusted one is that definition held by a guardrail
    finding (``flagged``). ``cleared_fingerprint`` is the definition an admin approved while
    a guardrail's finding held it: a finding on that definition holds it no more.
    """

    tool_name: str
    fingerprint: str | None
    definition: JsonObject | None
    pending_fingerprint: str | None = None
    pending_definition: JsonObject | None = None
    cleared_fingerprint: str | None = None

    @property
    def status(self) -> PinStatus:
        if self.pending_fingerprint is None:
            return PinStatus.APPROVED
        if self.fingerprint is None:
            return PinStatus.NEW
        return PinStatus.FLAGGED if self.pending_fingerprint == self.fingerprint else PinStatus.CHANGED

    @property
    def held(self) -> bool:
        return self.pending_fingerprint is not None


@dataclass(frozen=True, slots=True)
class PinReview:
    """What one discovery means: the tools that may be served and the server's pins after it."""

    exposable: tuple[types.Tool, ...]
    pins: dict[str, ToolPin]
    modified: bool
    """``pins`` differ from the pins given (they need storing)."""

    @property
    def held(self) -> list[ToolPin]:
        return [pin for pin in self.pins.values() if pin.held]


def review_tools(
    pins: Mapping[str, ToolPin],
    tools: Sequence[types.Tool],
    *,
    new_tools: NewToolPolicy,
    suspect: Collection[str] = (),
) -> PinReview:
    """Decide, for one server's discovered ``tools``, which are served and which are held.

    * no pins at all: the server's first discovery; every tool is pinned and served;
    * same fingerprint as the pin: served (a pending change the upstream took back is dropped),
      unless the name is in ``suspect`` and an admin has not cleared this definition: held as
      ``flagged`` (the pin predates the finding, so it does not vouch for it);
    * different fingerprint: held as ``changed``, the pinned definition kept;
    * unpinned name on a known server: pinned and served (``allow``) or held as ``new`` (``hold``);
    * an unpinned name in ``suspect`` (a guardrail found something in its definition): held as
      ``new``, first discovery or not, until an admin approves it.

    Pins of tools no longer listed are kept, so a tool that vanishes and comes back rewritten
    is still caught.
    """
    first_sight = not pins
    out = dict(pins)
    exposable: list[types.Tool] = []
    for tool in tools:
        definition = tool_definition(tool)
        seen = fingerprint(definition)
        pin = pins.get(tool.name)
        if pin is None:
            if tool.name not in suspect and (first_sight or new_tools is NewToolPolicy.ALLOW):
                out[tool.name] = ToolPin(tool.name, seen, definition)
                exposable.append(tool)
            else:
                out[tool.name] = ToolPin(tool.name, None, None, seen, definition)
        elif pin.fingerprint == seen and tool.name in suspect and pin.cleared_fingerprint != seen:
            out[tool.name] = replace(pin, pending_fingerprint=seen, pending_definition=definition)
        elif pin.fingerprint == seen:
            out[tool.name] = replace(pin, pending_fingerprint=None, pending_definition=None)
            exposable.append(tool)
        elif pin.pending_fingerprint != seen:
            out[tool.name] = replace(pin, pending_fingerprint=seen, pending_definition=definition)
    return PinReview(tuple(exposable), out, out != dict(pins))


def approve_pins(
    pins: Mapping[str, ToolPin], names: Collection[str], *, suspect: Collection[str] = ()
) -> dict[str, ToolPin]:
    """Trust the pending definitions of ``names`` (every held tool when empty).

    The approval of a ``flagged`` pin, or of a name in ``suspect`` (a guardrail found
    something in its pending definition), clears that definition of the finding.

    Raises:
        KeyError: a name is not held (its ``args`` list every such name).
    """
    wanted = set(names) if names else {name for name, pin in pins.items() if pin.held}
    unknown = sorted(name for name in wanted if name not in pins or not pins[name].held)
    if unknown:
        raise KeyError(*unknown)
    out = dict(pins)
    for name in wanted:
        pin = pins[name]
        cleared = pin.status is PinStatus.FLAGGED or name in suspect
        pending = pin.pending_fingerprint
        out[name] = ToolPin(name, pending, pin.pending_definition, cleared_fingerprint=pending if cleared else None)
    return out
