"""``CredentialStore``: sealed credentials in the registry's ``upstream_credentials`` table."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint, delete, select
from sqlalchemy.orm import Mapped, mapped_column

from mcp_aggregator.credentials.records import AuthStatus, Credential
from mcp_aggregator.credentials.secret_box import SecretBox
from mcp_aggregator.registry import Registry
from mcp_aggregator.registry.tables import SCHEMA, Base

CREDENTIALS_CHANGED = "credentials"
"""The change-feed kind other replicas hear when a server's sign-in status changes."""


class UpstreamCredentialRow(Base):
    """Migration 0004. ``sealed`` is the encrypted ``Credential`` (tokens, client secret)."""

    __tablename__ = "upstream_credentials"
    __table_args__ = (
        UniqueConstraint("server_id", "subject", name="uq_upstream_credentials_server_subject"),
        {"schema": SCHEMA},
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    server_id: Mapped[str] = mapped_column(String(36), ForeignKey(f"{SCHEMA}.external_servers.id", ondelete="CASCADE"))
    subject: Mapped[str] = mapped_column(String(255), default="")
    auth_status: Mapped[str] = mapped_column(String(32))
    sealed: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime | None]
    updated_at: Mapped[datetime]


class CredentialStore:
    """Reads and writes credentials, sealing them with ``box`` on the way in.

    A row that no longer opens (the key changed) reads as "sign-in required": nothing is
    lost but the need to sign in again.
    """

    def __init__(self, registry: Registry, box: SecretBox) -> None:
        self._registry = registry
        self._box = box

    async def load(self, server_id: str, subject: str = "") -> Credential | None:
        async with self._registry.transaction() as session:
            row = await session.scalar(
                select(UpstreamCredentialRow).where(
                    UpstreamCredentialRow.server_id == server_id, UpstreamCredentialRow.subject == subject
                )
            )
            if row is None:
                return None
            text = self._box.open_sealed(row.sealed)
            if text is None:
                return Credential(status=AuthStatus.SIGN_IN_REQUIRED)
            return Credential.from_json(AuthStatus(row.auth_status), text)

    async def save(self, server_id: str, credential: Credential, subject: str = "") -> None:
        """Store ``credential``; a new status is announced to the other replicas (shared registry)."""
        expires = credential.tokens.expires_at if credential.tokens else None
        values = {
            "auth_status": credential.status.value,
            "sealed": self._box.seal(credential.to_json()),
            "expires_at": datetime.fromtimestamp(expires, UTC) if expires is not None else None,
            "updated_at": datetime.now(UTC),
        }
        async with self._registry.transaction() as session:
            row = await session.scalar(
                select(UpstreamCredentialRow)
                .where(UpstreamCredentialRow.server_id == server_id, UpstreamCredentialRow.subject == subject)
                .with_for_update()
            )
            changed = row is None or row.auth_status != credential.status.value
            if row is None:
                session.add(UpstreamCredentialRow(id=str(uuid.uuid4()), server_id=server_id, subject=subject, **values))
            else:
                for key, value in values.items():
                    setattr(row, key, value)
            if changed:
                await self._registry.notify(session, CREDENTIALS_CHANGED, server_id)

    async def forget(self, server_id: str, subject: str = "") -> None:
        async with self._registry.transaction() as session:
            await session.execute(
                delete(UpstreamCredentialRow).where(
                    UpstreamCredentialRow.server_id == server_id, UpstreamCredentialRow.subject == subject
                )
            )
