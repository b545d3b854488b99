"""``ResultCacheConfig``: a server's opt-in tool result cache (``cache:`` per server)."""

from __future__ import annotations

from fnmatch import fnmatchcase

from pydantic import BaseModel, ConfigDict, Field


class ResultCacheConfig(BaseModel):
    """Which of a server's tools have their successful results kept, and for how long.

    ``tools`` are globs over the upstream's own tool names (``get_*``); every tool of the
    server when left out. Only tools whose results depend on nothing but their arguments
    and the client belong here: the operator marks them, the gateway cannot tell."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ttl_secs: float = Field(gt=0)
    tools: tuple[str, ...] = ("*",)

    def covers(self, tool: str) -> bool:
        """Whether results of ``tool`` (the upstream's name) are cached."""
        return any(fnmatchcase(tool, pattern) for pattern in self.tools)

    def stored(self) -> dict[str, object]:
        """The shape kept in the registry (and read back by ``model_validate``)."""
        return {"ttl_secs": self.ttl_secs, "tools": list(self.tools)}
