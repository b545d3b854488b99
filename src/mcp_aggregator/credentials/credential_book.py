"""``Credentials``: every OAuth upstream's sign-in, the seam ``upstreams/`` and ``admin/`` use."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Self

import anyio
import httpx2

from mcp_aggregator.credentials.config import CredentialsSettings, Grant, UpstreamOAuth
from mcp_aggregator.credentials.credential_store import CredentialStore
from mcp_aggregator.credentials.oauth_client import OAuthClient, new_pkce
from mcp_aggregator.credentials.per_user import UserBearer
from mcp_aggregator.credentials.records import AuthStatus
from mcp_aggregator.credentials.secret_box import SecretBox
from mcp_aggregator.credentials.server_credentials import Discover, ServerCredentials
from mcp_aggregator.credentials.sign_in_state import PendingSignIn, SignInStates
from mcp_aggregator.credentials.upstream_bearer import UpstreamBearer
from mcp_aggregator.errors import (
    ServerNotFoundError,
    SignInFailedError,
    SignInRequiredError,
    SignInStateError,
    StateError,
)
from mcp_aggregator.registry import Registry
from mcp_aggregator.settings.server_config import ServerConfig

logger = logging.getLogger(__name__)

StatusChange = Callable[[str, AuthStatus], None]
"""Called with the server id and its new status (signed in, refresh failed...)."""

CALLBACK_PATH = "/oauth/callback"

Discovery = Callable[[ServerConfig, httpx2.AsyncClient], Discover | None]
"""Where a server that is not an MCP server signs in (None: MCP's discovery); see
``bridges.scheme_sign_in``."""


class Credentials:
    """Holds a ``ServerCredentials`` per OAuth server; ``async with`` it once the registry is open.

    ``on_status(server_id, status)`` hears every change this process makes, so the gateway
    can connect a server once it is signed in and drop a session whose tokens died.
    """

    def __init__(
        self,
        settings: CredentialsSettings,
        *,
        data_dir: Path,
        env: Mapping[str, str],
        on_status: StatusChange = lambda _id, _s: None,
        now: Callable[[], float] = time.time,
        discovery: Discovery = lambda _config, _http: None,
    ) -> None:
        self.settings = settings
        self._discovery = discovery
        self._data_dir = data_dir
        self._env = env
        self._on_status = on_status
        self._now = now
        self._servers: dict[str, ServerCredentials] = {}
        self._users: dict[tuple[str, str], ServerCredentials] = {}
        self._done: dict[tuple[str, str], anyio.Event] = {}
        self.per_user: dict[str, ServerCredentials] = {}
        """The ``per_user`` servers, by name (read on every relayed call: a plain lookup)."""
        self.public_base: str | None = None
        """The gateway's own address, for sign-in URLs made outside an admin request (per user)."""
        self._store: CredentialStore | None = None
        self._states: SignInStates | None = None
        self._http: httpx2.AsyncClient | None = None

    def open(self, registry: Registry) -> Self:
        box = SecretBox.open(self._data_dir, self._env)
        self._store = CredentialStore(registry, box)
        self._states = SignInStates(box, self.settings.sign_in_ttl_secs)
        self._http = httpx2.AsyncClient(timeout=self.settings.http_timeout_secs, follow_redirects=False)
        return self

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._http is not None:
            await self._http.aclose()

    def auth_for(self, server_id: str, config: ServerConfig) -> UpstreamBearer | None:
        """The auth an upstream's transport uses (None: the server has no ``auth``)."""
        creds = self.server(server_id, config)
        if creds is None:
            return None
        return UpstreamBearer(UserBearer(self, creds) if creds.auth.per_user else creds)

    def server(self, server_id: str, config: ServerConfig) -> ServerCredentials | None:
        if config.auth is None:
            if self._servers.pop(server_id, None) is not None:
                self.per_user = {c.name: c for c in self._servers.values() if c.auth.per_user}
            return None
        url = config.base_url or config.url or config.spec
        known = self._servers.get(server_id)
        if known is not None and known.auth == config.auth and known.server_url == url:
            return known
        assert url is not None  # http/sse servers have one; openapi a spec
        if self._http is None:
            raise RuntimeError("Credentials are not open")
        discover = self._discovery(config, self._http)
        creds = self._new(server_id, config.name, url, config.auth, subject="", discover=discover)
        self._servers[server_id] = creds
        self.per_user = {c.name: c for c in self._servers.values() if c.auth.per_user}
        return creds

    def _new(
        self,
        server_id: str,
        name: str,
        url: str,
        auth: UpstreamOAuth,
        *,
        subject: str,
        discover: Discover | None = None,
    ) -> ServerCredentials:
        if self._store is None or self._http is None:
            raise RuntimeError("Credentials are not open")
        return ServerCredentials(
            server_id,
            name,
            url,
            auth,
            oauth=OAuthClient(self._http, name, now=self._now),
            store=self._store,
            settings=self.settings,
            env=self._env,
            now=self._now,
            on_status=self._changed,
            subject=subject,
            discover=discover,
        )

    def user(self, server: ServerCredentials, subject: str) -> ServerCredentials:
        """``subject``'s own credentials for a ``per_user`` server (kept apart from everyone's)."""
        key = (server.server_id, subject)
        creds = self._users.get(key)
        if creds is None or creds.auth != server.auth:
            creds = self._new(server.server_id, server.name, server.server_url, server.auth, subject=subject)
            self._users[key] = creds
        return creds

    async def ensure_user(self, server: ServerCredentials, subject: str, subject_token: str | None = None) -> None:
        """Make sure ``subject`` holds a token for ``server``; else raise ``SignInRequiredError``
        with the sign-in URL made for that user.

        A ``token_exchange`` server trades ``subject_token`` (the user's own) instead, and
        raises ``SignInFailedError`` when there is none or the authorization server refuses.
        """
        user = self.user(server, subject)
        if user.exchanges:
            await user.bearer(subject_token)
            return
        try:
            await user.bearer()
        except SignInRequiredError as exc:
            if self.settings.callback_url is None and self.public_base is None:
                raise
            redirect = self.callback_url(self.public_base or "")
            url = await self.start_sign_in(server.server_id, redirect, subject=subject)
            raise SignInRequiredError(
                server.name, exc.auth_status, f"user {subject} signs in once at {url} and calls again", url=url
            ) from exc

    def sign_in_done(self, server_id: str, subject: str) -> anyio.Event:
        """Set when ``subject`` finishes a sign-in to ``server_id`` in this process."""
        return self._done.setdefault((server_id, subject), anyio.Event())

    def _changed(self, creds: ServerCredentials, status: AuthStatus) -> None:
        if not creds.subject:  # a user's tokens concern that user's calls only
            self._on_status(creds.server_id, status)

    async def status(self, server_id: str) -> AuthStatus:
        """``not_required`` for a server without ``auth``; else its stored sign-in state."""
        creds = self._servers.get(server_id)
        if creds is None:
            return AuthStatus.NOT_REQUIRED
        return (await creds.reload()).status

    async def signed_in_elsewhere(self, server_id: str) -> bool:
        """Whether a server parked here for want of tokens now has them (another replica signed in)."""
        creds = self._servers.get(server_id)
        if creds is None or not creds.parked:
            return False
        if (await creds.reload()).status is not AuthStatus.SIGNED_IN:
            return False
        creds.parked = False
        return True

    def refresh_failures(self) -> dict[str, tuple[AuthStatus, int]]:
        """By server name: the status held and how many refreshes failed since start (metrics)."""
        return {c.name: (c.status, c.refresh_failures) for c in self._servers.values()}

    def callback_url(self, base_url: str) -> str:
        """Where the browser comes back: ``credentials.callback_url``, else ``base_url`` + the path."""
        return self.settings.callback_url or base_url.rstrip("/") + CALLBACK_PATH

    async def start_sign_in(self, server_id: str, redirect_uri: str, *, subject: str = "") -> str:
        """The authorization URL an admin opens to sign the gateway in to ``server_id``.

        Raises ``StateError`` for a server without ``auth: oauth``, ``SignInFailedError`` when
        discovery or registration is refused.
        """
        creds = self._servers.get(server_id)
        if creds is None:
            raise StateError(f"Server {server_id} has no auth: oauth; there is nothing to sign in to")
        if creds.auth.grant is Grant.CLIENT_CREDENTIALS:
            raise StateError(f"Server {creds.name} has grant client_credentials: it signs in by itself")
        assert self._states is not None
        server, client = await creds.prepare_sign_in(redirect_uri)
        if subject:
            creds = self.user(creds, subject)
            await creds.adopt(server, client)
        pkce = new_pkce()
        state = self._states.issue(PendingSignIn(server_id, pkce.code_verifier, redirect_uri, subject))
        logger.info("upstream %s: sign-in started", creds.name)
        return creds.oauth.authorization_url(server, client, state, pkce)

    async def finish_sign_in(
        self, state: str, code: str | None, *, error: str | None = None, iss: str | None = None
    ) -> ServerCredentials:
        """Take the callback's ``state`` and exchange its ``code``; the server's credentials.

        Raises ``SignInStateError`` (state), ``SignInFailedError`` (refused at the authorization
        server, or the token request was), ``ServerNotFoundError`` (removed meanwhile).
        """
        if self._states is None:
            raise RuntimeError("Credentials are not open")
        pending = self._states.take(state)
        creds = self._servers.get(pending.server_id)
        if creds is None:
            raise ServerNotFoundError(pending.server_id)
        if pending.subject:
            creds = self.user(creds, pending.subject)
        if error is not None:
            raise SignInFailedError(creds.name, f"the authorization server refused the sign-in: {error}")
        if not code:
            raise SignInStateError("the callback carries no code")
        await creds.finish_sign_in(code, pending.verifier, iss)
        done = self._done.pop((pending.server_id, pending.subject), None)
        if done is not None:
            done.set()
        return creds
