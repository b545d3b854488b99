"""The ``security:`` section: what the gateway does when an upstream's tools change."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from mcp_aggregator.catalog.tool_pins import NewToolPolicy


class SecuritySettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pin_tool_definitions: bool = True
    """Fingerprint each tool's definition at first sight; a later change holds the tool
    (out of tools/list, search and facades, calls refused) until an admin approves it."""
    new_tools: NewToolPolicy = NewToolPolicy.ALLOW
    """A tool that appears on an already known server: ``allow`` pins it on first sight,
    ``hold`` keeps it out until approved. A server's first discovery is always trusted."""
