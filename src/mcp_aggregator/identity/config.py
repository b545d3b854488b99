"""The ``profiles``, ``clients``, ``policies`` and ``tool_overrides`` sections of the settings.

Parsed once with the rest of the settings; the cross-references between them (a client's
profiles exist, a profile is not named twice) are checked by ``check_identity_settings``,
which the root ``Settings`` runs, so a mistake is refused at start with its field named.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator, model_validator

from mcp_aggregator.approvals.config import ApprovalRule
from mcp_aggregator.guardrails.config import GuardrailRule, check_rule_names
from mcp_aggregator.identity.client_identity import DEFAULT_PROFILE
from mcp_aggregator.identity.policies import compile_rule
from mcp_aggregator.settings.serve_settings import Exposure, ServeSettings

PROFILE_NAME: Final = re.compile(r"^[a-z][a-z0-9_-]{0,62}$")
CLIENT_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$")
TOOL_NAME: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
SHA256_HEX: Final = re.compile(r"^[0-9a-f]{64}$")


class ToolOverride(BaseModel):
    """How one tool is shown and called: in a profile, or for every profile (``tool_overrides``).

    ``tool`` is the canonical ``server.tool`` name. ``hide`` takes arguments out of the
    definition the client sees and always sends the given value; ``defaults`` fills an
    argument the client left out (and shows the default in the schema).
    """

    model_config = ConfigDict(extra="forbid")

    tool: str = Field(min_length=3)
    name: str | None = None
    description: str | None = None
    hide: dict[str, JsonValue] = Field(default_factory=dict)
    defaults: dict[str, JsonValue] = Field(default_factory=dict)

    @field_validator("tool")
    @classmethod
    def _canonical(cls, value: str) -> str:
        server, dot, tool = value.partition(".")
        if not dot or not server or not tool:
            raise ValueError(f"must be a canonical server.tool name, got {value!r}")
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None and TOOL_NAME.fullmatch(value) is None:
            raise ValueError(f"must match [A-Za-z0-9_.-]{{1,128}}, got {value!r}")
        return value

    @model_validator(mode="after")
    def _hidden_not_defaulted(self) -> ToolOverride:
        both = sorted(set(self.hide) & set(self.defaults))
        if both:
            raise ValueError(f"defaults: {', '.join(both)} also hidden; a hidden argument takes its value from hide")
        return self


class ProfileSettings(BaseModel):
    """A slice of the catalogue served at ``/mcp/<name>``.

    ``servers`` takes whole servers, ``tools`` / ``prompts`` / ``resources`` single items by
    canonical name (``server.name``; a resource by ``server`` and URI: ``server:uri``), each
    entry a glob (``vcs.git_*``). A kind with no pattern of its own follows ``servers``.
    ``guardrails``: rules for this profile's calls, on top of the global ones; ``approvals``
    likewise (calls through this profile a person must approve).
    """

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    servers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    exposure: Exposure | None = None
    overrides: tuple[ToolOverride, ...] = ()
    guardrails: tuple[GuardrailRule, ...] = ()
    approvals: tuple[ApprovalRule, ...] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if PROFILE_NAME.fullmatch(value) is None:
            raise ValueError(f"must match ^[a-z][a-z0-9_-]*$ (at most 63 characters), got {value!r}")
        if value == DEFAULT_PROFILE:
            raise ValueError(f"{DEFAULT_PROFILE!r} is the whole catalogue at /mcp; choose another name")
        return value

    @field_validator("servers", "tools", "prompts", "resources")
    @classmethod
    def _patterns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, pattern in enumerate(value):
            if not pattern or any(c.isspace() for c in pattern):
                raise ValueError(f"[{index}]: a name or glob without spaces, got {pattern!r}")
        return value

    @model_validator(mode="after")
    def _unique_overrides(self) -> ProfileSettings:
        _check_overrides(self.overrides)
        check_rule_names(self.guardrails, "guardrails")
        return self


class ClaimMatch(BaseModel):
    """Which OAuth access tokens a client entry stands for; every given condition must hold."""

    model_config = ConfigDict(extra="forbid")

    sub: tuple[str, ...] = ()
    """The token's subject is one of these."""
    groups: tuple[str, ...] = ()
    """The token's ``groups`` claim holds at least one of these."""
    scopes: tuple[str, ...] = ()
    """The token carries every one of these scopes."""

    @model_validator(mode="after")
    def _some_condition(self) -> ClaimMatch:
        if not (self.sub or self.groups or self.scopes):
            raise ValueError("give at least one of sub, groups, scopes")
        return self


class ClientSettings(BaseModel):
    """A named client: a static bearer token (``token`` or its ``token_sha256``), or OAuth
    access tokens whose claims ``match``; and the profiles it may use."""

    model_config = ConfigDict(extra="forbid")

    name: str
    token: str | None = None
    token_sha256: str | None = None
    match: ClaimMatch | None = None
    profiles: tuple[str, ...] = Field(min_length=1)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if CLIENT_NAME.fullmatch(value) is None:
            raise ValueError(f"must match ^[A-Za-z0-9][A-Za-z0-9_.@-]*$, got {value!r}")
        return value

    @field_validator("token_sha256")
    @classmethod
    def _digest(cls, value: str | None) -> str | None:
        if value is not None and SHA256_HEX.fullmatch(value) is None:
            raise ValueError("must be 64 lowercase hex digits (sha256 of the token)")
        return value

    @model_validator(mode="after")
    def _one_credential(self) -> ClientSettings:
        given = [k for k in ("token", "token_sha256", "match") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"token: give exactly one of token, token_sha256, match (got {given or 'none'})")
        return self


class PolicyRule(BaseModel):
    """A CEL expression over ``client``, ``profile``, ``tool`` and ``arguments``; a call for
    which ``deny`` is true is refused, naming the rule."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=128)
    deny: str = Field(min_length=1)
    message: str | None = None

    @field_validator("deny")
    @classmethod
    def _compiles(cls, value: str) -> str:
        compile_rule(value)
        return value


def _check_overrides(overrides: Sequence[ToolOverride]) -> None:
    seen: set[str] = set()
    for index, override in enumerate(overrides):
        if override.tool in seen:
            raise ValueError(f"overrides[{index}].tool: {override.tool!r} is overridden twice")
        seen.add(override.tool)


def _duplicates(names: Sequence[str], where: str) -> None:
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in seen:
            raise ValueError(f"{where}[{index}].name: duplicate name {name!r} (also {where}[{seen[name]}])")
        seen[name] = index


def check_identity_settings(
    profiles: Sequence[ProfileSettings],
    clients: Sequence[ClientSettings],
    policies: Sequence[PolicyRule],
    overrides: Sequence[ToolOverride],
    serve: ServeSettings,
) -> None:
    """Cross-field checks; raises ``ValueError`` whose text starts with the field path."""
    _duplicates([p.name for p in profiles], "profiles")
    _duplicates([c.name for c in clients], "clients")
    _duplicates([r.name for r in policies], "policies")
    try:
        _check_overrides(overrides)
    except ValueError as exc:
        raise ValueError(f"tool_{exc}") from None
    known = {DEFAULT_PROFILE, *(p.name for p in profiles)}
    shared_tokens = (*serve.mcp_tokens, *((serve.admin_token,) if serve.admin_token is not None else ()))
    taken_hashes = {hashlib.sha256(token.encode()).hexdigest() for token in shared_tokens}
    for index, client in enumerate(clients):
        for j, profile in enumerate(client.profiles):
            if profile not in known:
                raise ValueError(
                    f"clients[{index}].profiles[{j}]: no profile named {profile!r} (known: {', '.join(sorted(known))})"
                )
        if client.match is not None and serve.oauth is None:
            raise ValueError(f"clients[{index}].match: claims come from OAuth tokens; configure serve.oauth")
        if client.token is not None and (client.token in serve.mcp_tokens or client.token == serve.admin_token):
            raise ValueError(f"clients[{index}].token: already used by serve.mcp_tokens or serve.admin_token")
        # A client holding the admin token would pass the admin path as an admin (and could
        # approve its own held calls): refuse the hash of a shared token as firmly as the token.
        if client.token_sha256 is not None and client.token_sha256 in taken_hashes:
            raise ValueError(
                f"clients[{index}].token_sha256: the hash of a token in serve.mcp_tokens or serve.admin_token"
            )
