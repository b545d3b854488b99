"""``ToolPinBook``: every server's pins in memory, asked on each discovery and each refused call."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

import mcp_types as types

from mcp_aggregator.catalog.naming import exposed_name, namespace
from mcp_aggregator.catalog.tool_pins import NewToolPolicy, ToolPin, approve_pins, review_tools
from mcp_aggregator.errors import ToolHeldError, ToolNotFoundError
from mcp_aggregator.registry import ToolPinRecord

PersistPins = Callable[[str, Sequence[ToolPin]], None]
"""Store one server's whole pin set (``server_id``, pins); called after every change."""


class ToolPinBook:
    """The pins of every server, keyed by server id, mirrored to the registry through ``persist``.

    With ``enabled`` false every discovered tool is served and nothing is pinned.
    """

    def __init__(
        self,
        pins: Iterable[tuple[str, ToolPin]],
        *,
        persist: PersistPins,
        enabled: bool = True,
        new_tools: NewToolPolicy = NewToolPolicy.ALLOW,
        separator: str = "__",
        max_name_length: int = 64,
    ) -> None:
        self.enabled = enabled
        self._persist = persist
        self._new_tools = new_tools
        self._separator = separator
        self._max_name_length = max_name_length
        self._pins: dict[str, dict[str, ToolPin]] = {}
        self._names: dict[str, str] = {}
        self._suspect: dict[str, frozenset[str]] = {}
        """The tools a guardrail found something in at each server's latest listing."""
        for server_id, pin in pins:
            self._pins.setdefault(server_id, {})[pin.tool_name] = pin

    def review(
        self, server_id: str, server_name: str, tools: Sequence[types.Tool], suspect: Collection[str] = ()
    ) -> tuple[types.Tool, ...]:
        """The tools of this discovery that may be served; held ones are kept aside. A tool in
        ``suspect`` whose definition is not approved yet is held (with pinning off: left out)."""
        self._names[server_id] = server_name
        if not self.enabled:
            return tuple(tool for tool in tools if tool.name not in suspect)
        self._suspect[server_id] = frozenset(suspect)
        review = review_tools(self._pins.get(server_id, {}), tools, new_tools=self._new_tools, suspect=suspect)
        if review.modified:
            self._pins[server_id] = review.pins
            self._persist(server_id, list(review.pins.values()))
        return review.exposable

    def approve(self, server_id: str, names: Collection[str]) -> list[str]:
        """Trust the pending definitions of ``names`` (all held tools when empty); the names approved.

        Raises:
            ToolNotFoundError: a name is not held on this server.
        """
        pins = self._pins.get(server_id, {})
        try:
            approved = approve_pins(pins, names, suspect=self._suspect.get(server_id, ()))
        except KeyError as exc:
            server = self._names.get(server_id, server_id)
            raise ToolNotFoundError(", ".join(namespace(server, str(n)) for n in exc.args)) from None
        changed = sorted(name for name in approved if approved[name] != pins.get(name))
        if changed:
            self._pins[server_id] = approved
            self._persist(server_id, list(approved.values()))
        return changed

    def held(self, server_id: str) -> list[ToolPin]:
        return sorted((p for p in self._pins.get(server_id, {}).values() if p.held), key=lambda p: p.tool_name)

    def forget_server(self, name: str) -> None:
        """The server is gone; the registry drops its pins with it."""
        for server_id in [sid for sid, known in self._names.items() if known == name]:
            self._pins.pop(server_id, None)
            self._names.pop(server_id, None)
            self._suspect.pop(server_id, None)

    def check_not_held(self, name: str, server: str | None = None) -> None:
        """Raise ``ToolHeldError`` if ``name`` (any spelling a client may use) is a held tool."""
        if not self.enabled:
            return
        for server_id, pins in self._pins.items():
            server_name = self._names.get(server_id)
            if server_name is None or (server is not None and server != server_name):
                continue
            for pin in pins.values():
                if pin.held and name in self._spellings(server_name, pin.tool_name, explicit=server is not None):
                    raise ToolHeldError(server_name, pin.tool_name, reason=pin.status.value)

    def _spellings(self, server: str, tool: str, *, explicit: bool) -> set[str]:
        if explicit:
            return {tool}
        exposed = exposed_name(server, tool, separator=self._separator, max_length=self._max_name_length)
        return {tool, namespace(server, tool), exposed}


def pin_of(record: ToolPinRecord) -> tuple[str, ToolPin]:
    """``(server_id, pin)`` from the registry's record."""
    pin = ToolPin(
        record.tool_name,
        record.fingerprint,
        record.definition,
        record.pending_fingerprint,
        record.pending_definition,
        record.cleared_fingerprint,
    )
    return record.server_id, pin


def record_of(server_id: str, pin: ToolPin) -> ToolPinRecord:
    return ToolPinRecord(
        server_id=server_id,
        tool_name=pin.tool_name,
        fingerprint=pin.fingerprint,
        definition=pin.definition,
        pending_fingerprint=pin.pending_fingerprint,
        pending_definition=pin.pending_definition,
        cleared_fingerprint=pin.cleared_fingerprint,
    )
