"""The admin token: configured, or made at first start and kept in the data dir (mode 0600)."""

from __future__ import annotations

import secrets
from pathlib import Path

from mcp_aggregator.registry.private_files import private_file

ADMIN_TOKEN_FILE = "admin_token"


def read_admin_token(data_dir: Path) -> str | None:
    """The token a previous start kept in ``data_dir``, if any."""
    try:
        token = (data_dir / ADMIN_TOKEN_FILE).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return token or None


def admin_token_in(data_dir: Path) -> str:
    """The admin token kept in ``data_dir``, made (random, 256 bits) at first start."""
    existing = read_admin_token(data_dir)
    if existing is not None:
        private_file(data_dir / ADMIN_TOKEN_FILE)
        return existing
    token = secrets.token_urlsafe(32)
    path = private_file(data_dir / ADMIN_TOKEN_FILE)
    path.write_text(token + "\n", encoding="ascii")
    return token


def sign_in_link(base_url: str, token: str) -> str:
    """The web page's address carrying the token in the fragment.

    A fragment never leaves the browser (not in requests, server logs or ``Referer``); the
    page moves it to its own storage and removes it from the address bar.
    """
    return f"{base_url.rstrip('/')}/#token={token}"
