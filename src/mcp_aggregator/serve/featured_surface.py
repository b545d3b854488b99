"""``FeaturedSurface``: tools listed beside the facades under their passthrough names.

The pinned tools (``facades.pinned``) and the profile's most executed ones
(``facades.frequent``, counted in the audit trail every ``facades.frequent_refresh_secs``)
are listed as the upstream defines them, named as passthrough names them, and called as
passthrough calls them: through the same pipeline (policies, guardrails, cache, audit,
traces). A changed set of most executed tools is announced with ``tools/list_changed``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import anyio
import mcp_types as types
from anyio.abc import TaskStatus

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.facades.config import FacadeSettings
from mcp_aggregator.facades.featured import featured_tools
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.serve.tool_surface import PassthroughSurface, ToolHandler

logger = logging.getLogger(__name__)

_OVERFETCH = 2
"""Count a few more than needed: a most called tool may be pinned or gone from the catalogue."""


class FeaturedSurface:
    """The pinned and most executed tools of one profile."""

    def __init__(self, gateway: ServeGateway, settings: FacadeSettings, profile: str) -> None:
        self.gateway = gateway
        self.settings = settings
        self.profile = profile
        self._passthrough = PassthroughSurface(gateway)
        self._frequent: tuple[str, ...] = ()
        self._unserved_pins: frozenset[str] = frozenset()

    def names(self) -> tuple[str, ...]:
        """The canonical names listed now."""
        catalog = self.gateway.catalog
        return featured_tools(
            self.settings.pinned, self._frequent, self.settings.frequent, lambda name: catalog.get(name) is not None
        )

    def list_tools(self) -> Sequence[types.Tool]:
        catalog = self.gateway.catalog
        names = self.names()
        self._note_unserved_pins(names)
        tools = []
        for name in names:
            entry = catalog.get(name)
            if entry is not None:
                tools.append(entry.tool.model_copy(update={"name": entry.exposed}))
        return tools

    def handler(self, name: str) -> ToolHandler | None:
        entry = self.gateway.catalog.get(name)
        if entry is None or entry.exposed != name or entry.canonical not in self.names():
            return None
        return self._passthrough.handler(name)

    async def refresh(self) -> bool:
        """Count the most executed tools again; whether the listed set changed."""
        if self.settings.frequent == 0:
            return False
        before = self.names()
        limit = self.settings.frequent + len(self.settings.pinned) + _OVERFETCH
        try:
            self._frequent = tuple(await self.gateway.most_called(self.profile, limit))
        except RegistryError as exc:
            logger.warning("facades.frequent: cannot count the calls of profile %r: %s", self.profile, exc)
            return False
        return self.names() != before

    async def run(
        self, changed: Callable[[], None], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Refresh every ``frequent_refresh_secs``; call ``changed`` when the list changed."""
        await self.refresh()
        task_status.started()
        if self.settings.frequent == 0:
            return
        while True:
            await anyio.sleep(self.settings.frequent_refresh_secs)
            if await self.refresh():
                changed()

    def _note_unserved_pins(self, names: tuple[str, ...]) -> None:
        # Logged once per change, not per listing: a pin waits for its server to connect,
        # and a name its server does not have is most likely a typo.
        served = set(self.gateway.exposed_servers())
        unserved = frozenset(
            pin for pin in self.settings.pinned if pin not in names and pin.partition(".")[0] in served
        )
        for pin in sorted(unserved - self._unserved_pins):
            logger.warning("facades.pinned: server %r has no tool %r; it is not listed", *pin.split(".", 1))
        self._unserved_pins = unserved
