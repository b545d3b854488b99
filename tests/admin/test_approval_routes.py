"""The admin path's guard against a client deciding held calls: any client's token is refused
(a client whose token, or its SHA-256, is the admin token is refused at load already)."""

from __future__ import annotations

import hashlib

import pytest

from mcp_aggregator.admin.approval_routes import is_client_token
from mcp_aggregator.settings import Settings

ADMIN = "approvals-admin-token-0123456789"


def settings() -> Settings:
    return Settings.model_validate(
        {
            "serve": {"admin_token": ADMIN, "mcp_tokens": ["open-token-0123456789abcdef"]},
            "clients": [
                {"name": "ada", "token": "ada-token-0123456789abcdef", "profiles": ["default"]},
                {
                    "name": "eve",
                    "token_sha256": hashlib.sha256(b"eve-token-0123456789abcdef").hexdigest(),
                    "profiles": ["default"],
                },
            ],
        }
    )


@pytest.mark.parametrize(
    ("authorization", "refused"),
    [
        ("Bearer ada-token-0123456789abcdef", True),
        ("Bearer open-token-0123456789abcdef", True),
        ("Bearer eve-token-0123456789abcdef", True),
        (f"Bearer {ADMIN}", False),
        ("Bearer someone-else", False),
        (None, False),
        ("Basic ada-token-0123456789abcdef", False),
    ],
)
def test_a_clients_token_never_decides_a_held_call(authorization: str | None, refused: bool) -> None:
    assert is_client_token(settings(), authorization) is refused
