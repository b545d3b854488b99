"""API bodies of ``/api/v1/aggregator/registry``: catalogue entries, install and update."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from mcp_aggregator.admin.schemas import OriginPublic, ServerPublic
from mcp_aggregator.health.server_state import ServerStatus


class EntryInputPublic(BaseModel):
    """A value the entry asks for: give it as ``env``, ``headers`` or ``arguments`` when installing."""

    kind: str = Field(description="env | header | argument | variable")
    name: str
    description: str | None = None
    required: bool = False
    secret: bool = False
    default: str | None = None
    choices: list[str] | None = None


class EntryPublic(BaseModel):
    registry: str
    name: str
    title: str | None = None
    description: str | None = None
    version: str
    status: str = Field(description="active | deprecated | deleted")
    runs: list[str] = Field(
        description="How it runs: 'npm <id>@<version>', 'pypi ...', 'oci ...', 'remote <type> <url>'"
    )
    runs_here: str | None = Field(
        default=None, description="Which of ``runs`` an install on this gateway would run (None: none of them)"
    )
    inputs: list[EntryInputPublic] = Field(description="The inputs of what runs here (else of the first package)")
    runtime_arguments: list[str] = Field(
        default_factory=list,
        description="The runtimeArguments of what runs here (else of the first package), as the entry declares them",
    )
    published_at: datetime | None = None
    updated_at: datetime | None = None


class EntrySearchResult(BaseModel):
    servers: list[EntryPublic]
    problems: list[str] = Field(
        default_factory=list, description="Registries that did not answer (their stored copy was searched)"
    )


class RegistryInstall(BaseModel):
    """Install an entry (``name``, optionally ``version`` and ``registry``) or a ``server_json``."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(default=None, max_length=255, description="namespace/name; NAME@VERSION is accepted")
    version: str | None = Field(default=None, max_length=255)
    registry: str | None = Field(default=None, description="Which of registries: (default: the first that has it)")
    server_json: dict[str, object] | None = Field(default=None, description="A server.json document instead of name")
    server_name: str | None = Field(default=None, description="The local name (default: from the entry name)")
    env: dict[str, str] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    arguments: dict[str, str] = Field(default_factory=dict)
    grant_read: list[str] = Field(default_factory=list)
    grant_write: list[str] = Field(default_factory=list)
    network: str | list[str] | None = Field(default=None, description="outbound | none | host | [host:port, ...]")
    allow_runtime_args: list[str] = Field(
        default_factory=list,
        description=(
            "OCI runtimeArguments that widen the container's rights (--privileged, --cap-add X, a host namespace, "
            "--device, --security-opt, a mount of /, the home, the data dir or a container socket), allowed as "
            "the refusal names them; without this such an entry is refused"
        ),
    )
    wait_secs: float = Field(default=60.0, ge=0, le=600)


class RegistryUpdate(BaseModel):
    """Move a server to another version; ``env``/``headers``/``arguments`` add to (or replace)
    the inputs it was installed with, for what the new version asks that the old did not."""

    model_config = ConfigDict(extra="forbid")

    server_name: str
    version: str | None = Field(default=None, description="Default: the latest")
    env: dict[str, str] = Field(default_factory=dict)
    headers: dict[str, str] = Field(default_factory=dict)
    arguments: dict[str, str] = Field(default_factory=dict)
    allow_runtime_args: list[str] = Field(
        default_factory=list, description="As for an install: OCI runtimeArguments that widen the container's rights"
    )
    wait_secs: float = Field(default=60.0, ge=0, le=600)


class InstallResult(BaseModel):
    server: ServerPublic
    origin: OriginPublic
    connected: bool
    status: ServerStatus
    error: str | None = Field(default=None, description="Why it is not CONNECTED (secrets hidden)")
    warnings: list[str] = Field(default_factory=list)
    previous_version: str | None = None
