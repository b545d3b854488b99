"""Per-user upstream tokens: each identified client's calls carry that user's own token.

The relay stage ``PerUserTokens`` runs before a call to a ``per_user`` server: it finds the
caller's key (``identity.subject or identity.name``), makes sure that user holds a token
(else the call fails with ``SignInRequiredError`` carrying the user's own sign-in URL), and
marks the call's context with the user, so the transport's ``UserBearer`` signs that call's
HTTP request with that user's token and no one else's. Work without a caller (the
connection's handshake, tool listing) uses the server's own sign-in.

A server with ``auth.token_exchange`` asks no one to sign in: the stage hands the caller's
own ``/mcp`` bearer token down with the user, and the user's token is got by trading it at
the authorization server (RFC 8693), again whenever it expires or the upstream refuses it.

The stage also satisfies ``ErrorStage`` (its ``on_error`` does nothing): the raw fast path,
which settles calls by callback when every stage is such, never serves an OAuth upstream,
and for every other server this stage leaves the call alone.
"""

from __future__ import annotations

import secrets
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types as types
from pydantic import SecretStr

from mcp_aggregator.credentials.records import AuthStatus
from mcp_aggregator.credentials.server_credentials import NO_SUBJECT_TOKEN, ServerCredentials
from mcp_aggregator.errors import SignInFailedError, SignInRequiredError, UpstreamError

if TYPE_CHECKING:
    from mcp_aggregator.credentials.credential_book import Credentials

_RECHECK_SECS = 2.0


@dataclass(frozen=True, slots=True)
class ActingUser:
    """The user a per-user call is made for: their key, and their own ``/mcp`` token (masked)."""

    key: str
    token: SecretStr | None = field(default=None, repr=False)

    @property
    def subject_token(self) -> str | None:
        return self.token.get_secret_value() if self.token is not None else None


acting_user: ContextVar[ActingUser | None] = ContextVar("mcp_aggregator_upstream_user", default=None)
"""The user whose token an upstream request carries (set around a per-user call)."""


class _Invocation(Protocol):
    """The part of the relay's ``Invocation`` this stage reads."""

    @property
    def server(self) -> str: ...

    @property
    def caller(self) -> Any: ...


class UserBearer:
    """The token source of a ``per_user`` server's transport (see ``UpstreamBearer``).

    A user's token problem never raises here (that would end the session every user
    shares): the request goes with what there is, the upstream's 401 fails that one call,
    and the user's next call is refused by the stage with their sign-in URL.
    """

    def __init__(self, book: Credentials, server: ServerCredentials) -> None:
        self._book = book
        self._server = server

    async def bearer(self) -> str:
        acting = acting_user.get()
        if acting is None:
            return await self._server.bearer()
        try:
            return await self._book.user(self._server, acting.key).bearer(acting.subject_token)
        except UpstreamError:
            return ""

    async def after_unauthorized(self, rejected: str) -> str:
        acting = acting_user.get()
        if acting is None:
            return await self._server.after_unauthorized(rejected)
        try:
            return await self._book.user(self._server, acting.key).after_unauthorized(rejected, acting.subject_token)
        except UpstreamError:
            return rejected


class PerUserTokens:
    """The relay stage for ``per_user`` servers (a no-op for every other server)."""

    def __init__(self, book: Credentials) -> None:
        self._book = book

    async def __call__(self, invocation: _Invocation, send: Any) -> Any:
        server = self._book.per_user.get(invocation.server) if self._book.per_user else None
        if server is None:
            return await send()
        identity = invocation.caller.identity
        user = identity.subject or identity.name
        if not user:
            raise SignInRequiredError(
                server.name,
                "sign_in_required",
                "this server signs in per user and the calling client is not identified",
            )
        acting = ActingUser(user, identity.token)
        if server.auth.token_exchange is not None:
            if acting.token is None:
                raise SignInFailedError(server.name, NO_SUBJECT_TOKEN)
            await self._book.ensure_user(server, user, acting.subject_token)
        else:
            try:
                await self._book.ensure_user(server, user)
            except SignInRequiredError as exc:
                if exc.url is None or not await self._signed_in_when_asked(invocation.caller, server, user, exc.url):
                    raise
        token = acting_user.set(acting)
        try:
            return await send()
        finally:
            acting_user.reset(token)

    async def _signed_in_when_asked(self, caller: Any, server: ServerCredentials, user: str, url: str) -> bool:
        """Ask a client that takes URL-mode elicitation to open ``url``; wait for the sign-in.

        False when the client cannot be asked, declines, or the sign-in does not finish within
        ``credentials.sign_in_ttl_secs`` (the call then fails with the URL in its error).
        """
        request = types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                mode="url",
                message=f"Sign in to {server.name} so the gateway can call it as you.",
                url=url,
                elicitation_id=secrets.token_urlsafe(12),
            )
        )
        if caller.refusal(request) is not None:
            return False
        done = self._book.sign_in_done(server.server_id, user)
        answer = await caller.answer(request)
        if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
            return False
        with anyio.move_on_after(self._book.settings.sign_in_ttl_secs):
            while not done.is_set():
                # The callback may reach another replica: the registry says so too.
                with anyio.move_on_after(_RECHECK_SECS):
                    await done.wait()
                if (await self._book.user(server, user).reload()).status is AuthStatus.SIGNED_IN:
                    return True
        return done.is_set()

    def on_error(self, invocation: _Invocation, exc: UpstreamError) -> None:
        return None
