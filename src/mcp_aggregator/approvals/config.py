"""Settings of approvals (the ``approvals:`` section, and a profile's own).

A rule names the calls a person must approve before they go upstream: by tool (globs on the
canonical ``server.tool``), by server, by profile (globs), narrowed by an optional CEL
``when`` over the call's arguments. ``ask`` says who may decide (the calling client through
elicitation, an admin through the REST API / CLI / page, or either), ``timeout_secs`` how
long the call waits before it expires, ``remember: session`` lets one approval stand for
identical calls for the rest of the client's session.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from mcp_aggregator.approvals.approval_rules import compile_when

_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_SERVER_GLOB: Final = re.compile(r"^[a-z0-9_*?\[\]!-]+$")

_GLOB: Final = frozenset("*?[")


class ApprovalAsk(StrEnum):
    CLIENT = "client"
    ADMIN = "admin"
    BOTH = "both"


class ApprovalRule(BaseModel):
    """One rule; see the module docstring. At least one of ``tools``, ``servers``, ``profiles``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    tools: tuple[str, ...] = ()
    """Globs on the canonical ``server.tool`` name (``vcs.git_commit``, ``vcs.git_*``)."""
    servers: tuple[str, ...] = ()
    profiles: tuple[str, ...] = ()
    when: str | None = None
    """CEL over ``args`` (the call's arguments; ``arguments`` is the same), ``client``
    (``{name, subject, claims}``), ``profile`` and ``tool`` (``{name, server}``); true holds."""
    ask: ApprovalAsk = ApprovalAsk.BOTH
    timeout_secs: StrictInt = Field(default=300, gt=0, le=7 * 24 * 3600)
    remember: Literal["session"] | None = None

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if _NAME.fullmatch(value) is None:
            raise ValueError(f"must match ^[A-Za-z0-9][A-Za-z0-9_.-]*$ (at most 64 characters), got {value!r}")
        return value

    @field_validator("tools")
    @classmethod
    def _tools(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, pattern in enumerate(value):
            server, dot, tool = pattern.partition(".")
            if not dot or not server or not tool or any(c.isspace() for c in pattern):
                raise ValueError(
                    f"[{index}]: {pattern!r} is not a tool pattern; give a canonical server.tool name or glob "
                    "(vcs.git_commit, vcs.git_*, *.delete_*)"
                )
            if _SERVER_GLOB.fullmatch(server) is None:
                raise ValueError(f"[{index}]: {server!r} in {pattern!r} cannot be a server name or glob")
        return value

    @field_validator("servers", "profiles")
    @classmethod
    def _globs(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, pattern in enumerate(value):
            if not pattern or any(c.isspace() for c in pattern):
                raise ValueError(f"[{index}]: a name or glob without spaces, got {pattern!r}")
        return value

    @field_validator("when")
    @classmethod
    def _when(cls, value: str | None) -> str | None:
        if value is not None:
            compile_when(value)  # raises ValueError saying what is wrong
        return value

    @model_validator(mode="after")
    def _selects_something(self) -> ApprovalRule:
        if not (self.tools or self.servers or self.profiles):
            raise ValueError("tools: give at least one of tools, servers, profiles (which calls the rule holds)")
        return self


def check_approval_rules(
    rules: Sequence[ApprovalRule],
    profiles: Sequence[tuple[str, Sequence[ApprovalRule]]],
    *,
    default_profile: str = "default",
) -> None:
    """Raises ``ValueError`` naming the field: a duplicate rule name (the audit and the REST
    API name rules), a profile's own rule with a ``profiles`` filter (it holds that profile's
    calls only), or a ``profiles`` name (not a glob) that no profile has: a typo there would
    silently hold nothing. ``profiles``: each profile's (name, rules), in the order of ``profiles:``."""
    known = {default_profile, *(name for name, _ in profiles)}
    seen: dict[str, str] = {}
    for index, rule in enumerate(rules):
        where = f"approvals[{index}]"
        if rule.name in seen:
            raise ValueError(f"{where}.name: duplicate rule name {rule.name!r} (also {seen[rule.name]})")
        seen[rule.name] = where
        for p_index, name in enumerate(rule.profiles):
            if not _GLOB.intersection(name) and name not in known:
                raise ValueError(
                    f"{where}.profiles[{p_index}]: no profile named {name!r} (known: {', '.join(sorted(known))})"
                )
    for p_index, (_, own) in enumerate(profiles):
        for index, rule in enumerate(own):
            where = f"profiles[{p_index}].approvals[{index}]"
            if rule.profiles:
                raise ValueError(f"{where}.profiles: a profile's own rule holds that profile's calls only; drop it")
            if rule.name in seen:
                raise ValueError(f"{where}.name: duplicate rule name {rule.name!r} (also {seen[rule.name]})")
            seen[rule.name] = where
