"""The leaky upstream behind a gateway with guardrails, for the tests of this folder."""

from __future__ import annotations

import sys
from typing import Any

from mcp_aggregator.settings import ServerConfig, Settings
from tests.conftest import REPO, settings_for

RULES: list[dict[str, Any]] = [
    {"name": "secrets", "kind": "secrets", "on": ["results", "arguments"], "action": "mask"},
    {
        "name": "cards-and-mail",
        "kind": "pii",
        "entities": ["CREDIT_CARD", "EMAIL_ADDRESS", "PHONE_NUMBER"],
        "on": ["results"],
        "action": "mask",
    },
    {"name": "poison", "kind": "injection", "on": ["descriptions", "results"], "action": "block"},
]


def leaky() -> ServerConfig:
    return ServerConfig(
        name="leaky",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.guardrails.leaky_server", "--transport", "stdio"),
        cwd=str(REPO),
    )


def guarded_settings(rules: list[dict[str, Any]] | None = None, **serve: Any) -> Settings:
    """The leaky upstream behind ``rules`` (``RULES`` by default; None in ``sections``: no section)."""
    return settings_for(leaky(), sections={"guardrails": RULES if rules is None else rules}, **serve)
