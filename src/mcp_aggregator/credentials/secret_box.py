"""``SecretBox``: authenticated encryption for what the gateway keeps at rest (upstream tokens).

The key is ``MCP_AGGREGATOR_SECRET_KEY`` (a Fernet key: 32 url-safe base64 bytes) when set,
else ``secret_key`` in the data dir, made at first start with mode 0600. Replicas sharing one
PostgreSQL registry must share the key (the variable, or the same file).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from cryptography.fernet import Fernet, InvalidToken

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.registry.private_files import private_file

KEY_ENV: Final = "MCP_AGGREGATOR_SECRET_KEY"
KEY_FILE: Final = "secret_key"


class SecretBox:
    """Encrypts and decrypts text with one Fernet key (AES-128-CBC + HMAC-SHA256, timestamped)."""

    def __init__(self, key: bytes) -> None:
        try:
            self._fernet = Fernet(key)
        except ValueError as exc:
            raise ConfigError(
                "must be a Fernet key: 32 bytes, url-safe base64 (make one with "
                "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`)",
                path=KEY_ENV,
            ) from exc

    @classmethod
    def open(cls, data_dir: Path, env: Mapping[str, str]) -> SecretBox:
        """The box for this gateway: the key from ``env``, else the data dir's (made if missing)."""
        given = env.get(KEY_ENV, "").strip()
        if given:
            return cls(given.encode("ascii", errors="replace"))
        path = data_dir / KEY_FILE
        existing = path.read_bytes().strip() if path.exists() else b""
        private_file(path)
        if not existing:
            existing = Fernet.generate_key()
            path.write_bytes(existing + b"\n")
        return cls(existing)

    def seal(self, text: str) -> str:
        return self._fernet.encrypt(text.encode()).decode("ascii")

    def open_sealed(self, sealed: str, *, ttl_secs: float | None = None) -> str | None:
        """The text, or None when ``sealed`` was not made with this key, was altered, or is
        older than ``ttl_secs``."""
        try:
            if ttl_secs is None:
                return self._fernet.decrypt(sealed.encode("ascii")).decode()
            return self._fernet.decrypt(sealed.encode("ascii"), ttl=int(ttl_secs)).decode()
        except (InvalidToken, UnicodeError, ValueError):
            return None
