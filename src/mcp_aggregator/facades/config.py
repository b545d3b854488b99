"""Settings of the facades (the ``facades:`` section): the tools listed beside them, their words.

An agent that sees only ``tools``, ``servers`` and ``aggregator`` has to think of searching
before it can call anything, and many do not. So the operator may list some tools directly
beside the facades, under their passthrough names: ``pinned`` ones always, and the
``frequent`` ones each profile has executed most (read from the audit trail). The facades'
own descriptions may be reworded too (``descriptions``), e.g. to say what the catalogue
holds.
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

FACADE_NAMES = ("tools", "servers", "aggregator", "files")
"""The facades whose description the operator may set (the core domains)."""


class FacadeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pinned: tuple[str, ...] = ()
    """Canonical ``server.tool`` names listed beside the facades, in this order, whenever
    their server serves them."""
    frequent: StrictInt = Field(default=0, ge=0, le=100)
    """List the N tools each profile executed most (successful calls in the audit trail),
    after the pinned ones; 0: none."""
    frequent_refresh_secs: float = Field(default=60.0, gt=0, le=86_400, allow_inf_nan=False)
    """How often the most executed tools are counted again; a changed set is announced to
    clients with ``notifications/tools/list_changed``."""
    descriptions: dict[str, str] = Field(default_factory=dict)
    """The description of a facade (``tools``, ``servers``, ``aggregator``, ``files``),
    replacing the built-in one; the list of its commands still follows it."""

    @field_validator("pinned")
    @classmethod
    def _pinned(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        seen: set[str] = set()
        for index, name in enumerate(value):
            server, dot, tool = name.partition(".")
            if not dot or not server or not tool:
                raise ValueError(f"[{index}]: must be a canonical server.tool name, got {name!r}")
            if name in seen:
                raise ValueError(f"[{index}]: {name!r} is pinned twice")
            seen.add(name)
        return value

    @field_validator("descriptions")
    @classmethod
    def _descriptions(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if name not in FACADE_NAMES:
                raise ValueError(f"{name!r} is not a facade (facades: {', '.join(FACADE_NAMES)})")
            if not text.strip():
                raise ValueError(f"{name}: a description must not be empty")
        return value

    @property
    def lists_tools(self) -> bool:
        """Whether any tool is listed beside the facades."""
        return bool(self.pinned) or self.frequent > 0


def check_facade_settings(facades: FacadeSettings, servers: Collection[str], *, audit_enabled: bool) -> None:
    """Refuse pins of servers the configuration does not have, and ``frequent`` without an audit.

    A pinned tool's own name is checked once its server is connected (the gateway logs a pin
    its server does not serve); its server must be configured here, so that a typo fails at
    load instead of listing nothing.

    Raises:
        ValueError: naming the field.
    """
    for index, name in enumerate(facades.pinned):
        server = name.partition(".")[0]
        if server not in servers:
            known = ", ".join(sorted(servers)) or "none configured"
            raise ValueError(f"facades.pinned[{index}]: no server named {server!r} in servers (known: {known})")
    if facades.frequent and not audit_enabled:
        raise ValueError("facades.frequent: counts the calls the audit trail recorded; it needs audit.enabled: true")
