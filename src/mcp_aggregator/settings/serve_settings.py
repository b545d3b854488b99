"""How the gateway faces its clients: MCP transport, exposure, names, admin access."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator


class Exposure(StrEnum):
    FACADES = "facades"
    PASSTHROUGH = "passthrough"
    SEARCH = "search"


class FacadeGrouping(StrEnum):
    SERVER = "server"
    SKILL = "skill"


class ToolNames(StrEnum):
    NAMESPACED = "namespaced"
    ORIGINAL = "original"


class ServeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8765, ge=0, le=65535)
    exposure: Exposure = Exposure.FACADES
    facade_grouping: FacadeGrouping = FacadeGrouping.SERVER
    upstream_domains: bool = True
    upstream_domains_max_chars: int = Field(default=12_000, ge=0)
    """Upstream domains are listed only while their definitions fit in this many characters
    (about 3,000 tokens); past that, clients reach upstream tools through ``tools``."""
    name_separator: str = "__"
    tool_names: ToolNames = ToolNames.NAMESPACED
    """``namespaced``: passthrough lists ``server__tool``; ``original``: a tool whose name no other
    server uses (and clients accept) keeps its own name, so a single-server gateway is
    indistinguishable from its server; shared names stay namespaced."""
    max_name_length: int = Field(default=64, ge=16, le=128)
    admin_token: str | None = None
    drain_timeout_secs: float = Field(default=30.0, ge=0)
    http_json_response: bool = False
    """Answer each HTTP request with one JSON body instead of an SSE stream: about 1.5 ms
    faster per call, but progress notifications of a running call cannot be relayed."""
    http_stateless: bool = False
    """Serve streamable HTTP without protocol sessions, so any replica can answer any request;
    handshake-era clients then get no list-changed notifications."""
    list_wait_secs: float = Field(default=10.0, ge=0)
    """How long ``tools/list`` waits for upstreams still making their first connection."""
    max_result_bytes: int = Field(default=64 << 20, ge=1024)
    """The largest message an upstream may answer with (64 MiB by default); a larger result fails
    its own call with a clear error and the session stays up."""
    fast_path: bool = True
    """Passthrough ``tools/call`` from 2026-07-28 clients that need nothing but the answer are
    forwarded as raw JSON-RPC (no SDK models on the way); everything else takes the full
    pipeline. ``false`` sends every call through the full pipeline."""
    input_wait_secs: float = Field(default=300.0, gt=0)
    """How long a call that asked a 2026-07-28 client for input (sampling, elicitation, roots)
    waits for the client's retry before the upstream's question is answered with an error."""
    data_dir: Path = Path(".aggregator")
    workspace_roots: tuple[Path, ...] = ()

    @field_validator("name_separator")
    @classmethod
    def _separator(cls, value: str) -> str:
        if not value or any(not (c.isalnum() or c in "_-.") for c in value) or not value.isascii():
            raise ValueError(f"must be a non-empty run of [A-Za-z0-9_.-], got {value!r}")
        return value
