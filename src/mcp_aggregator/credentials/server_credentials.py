"""``ServerCredentials``: one upstream's tokens, kept fresh, shared by its connection's requests."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace

import anyio

from mcp_aggregator.credentials.config import CredentialsSettings, Grant, UpstreamOAuth
from mcp_aggregator.credentials.credential_store import CredentialStore
from mcp_aggregator.credentials.oauth_client import OAuthClient, TokenRefused
from mcp_aggregator.credentials.records import AuthServer, AuthStatus, ClientInfo, Credential, TokenSet
from mcp_aggregator.errors import SignInFailedError, SignInRequiredError
from mcp_aggregator.settings.env_expansion import expand_value

logger = logging.getLogger(__name__)

NO_SUBJECT_TOKEN = (
    "this server trades each user's own token for theirs (RFC 8693 token exchange) and the calling "
    "client presented no bearer token; connect with a serve.oauth access token or a named client's token"
)

StatusListener = Callable[["ServerCredentials", AuthStatus], None]
Discover = Callable[[tuple[str, ...]], Awaitable[AuthServer]]
"""Where a server's sign-in happens, given the scopes to ask for (empty: its default)."""


class ServerCredentials:
    """The sign-in of one server (``subject`` empty: the server's own).

    ``bearer()`` hands out an access token, refreshing it first when it expires within
    ``refresh_ahead_secs`` (or, with ``client_credentials``, getting a new one), and raises
    ``SignInRequiredError`` when there is none to give. ``after_unauthorized`` is the one
    refresh a 401 earns. Token writes go to the store before they are used, so a restart or
    another replica picks them up; before refreshing, the store is read again in case another
    replica already did (a rotated refresh token may be used once only).
    """

    def __init__(
        self,
        server_id: str,
        name: str,
        server_url: str,
        auth: UpstreamOAuth,
        *,
        oauth: OAuthClient,
        store: CredentialStore,
        settings: CredentialsSettings,
        env: Mapping[str, str],
        now: Callable[[], float],
        on_status: StatusListener,
        subject: str = "",
        discover: Discover | None = None,
    ) -> None:
        """``discover``: where to sign in, given scopes; default: MCP's discovery at
        ``server_url`` (a bridged server's security scheme tells it instead)."""
        self.server_id = server_id
        self.name = name
        self.server_url = server_url
        self.auth = auth
        self.subject = subject
        self.refresh_failures = 0
        self.parked = False
        """True once ``bearer`` had no token to give, until this process sees a sign-in."""
        self.oauth = oauth
        self._store = store
        self._settings = settings
        self._env = env
        self._now = now
        self._on_status = on_status
        self._credential: Credential | None = None
        self._lock = anyio.Lock()
        self.discover: Discover = discover or (lambda scopes: self.oauth.discover(self.server_url, scopes))

    @property
    def status(self) -> AuthStatus:
        return self._credential.status if self._credential else AuthStatus.SIGN_IN_REQUIRED

    async def current(self) -> Credential:
        if self._credential is None:
            self._credential = await self._store.load(self.server_id, self.subject) or Credential()
        return self._credential

    async def reload(self) -> Credential:
        """Forget what is held and read the store again (another replica may have signed in)."""
        self._credential = None
        return await self.current()

    @property
    def exchanges(self) -> bool:
        """A user's credentials of a ``token_exchange`` server: renewed by trading their token."""
        return bool(self.subject) and self.auth.token_exchange is not None

    async def bearer(self, subject_token: str | None = None) -> str:
        """``subject_token``: the user's own token, traded when ``exchanges`` and none is held."""
        try:
            return await self._bearer(subject_token)
        except SignInRequiredError:
            self.parked = True
            raise

    async def _bearer(self, subject_token: str | None) -> str:
        async with self._lock:
            credential = await self.current()
            tokens = credential.tokens
            ahead = self._settings.refresh_ahead_secs
            if tokens is not None and credential.status is AuthStatus.SIGNED_IN:
                if not tokens.expires_within(ahead, self._now()):
                    return tokens.access_token
                return await self._renew(tokens, subject_token)
            if self.auth.grant is Grant.CLIENT_CREDENTIALS or self.exchanges:
                return await self._renew(None, subject_token)
            raise SignInRequiredError(self.name, credential.status.value)

    async def after_unauthorized(self, rejected: str, subject_token: str | None = None) -> str:
        """The upstream refused ``rejected``: refresh (or exchange) once, unless someone already did."""
        async with self._lock:
            credential = await self.current()
            if credential.tokens is not None and credential.tokens.access_token != rejected:
                return credential.tokens.access_token
            return await self._renew(credential.tokens, subject_token)

    async def _renew(self, tokens: TokenSet | None, subject_token: str | None = None) -> str:
        stored = await self.reload()
        newer = stored.tokens
        if (
            newer is not None
            and tokens is not None
            and newer.access_token != tokens.access_token
            and not newer.expires_within(self._settings.refresh_ahead_secs, self._now())
        ):
            return newer.access_token  # another replica refreshed first
        if self.exchanges:
            return await self._exchange(stored, subject_token)
        if self.auth.grant is Grant.CLIENT_CREDENTIALS:
            return await self._client_credentials(stored)
        if stored.server is None or stored.client is None or stored.tokens is None:
            raise SignInRequiredError(self.name, stored.status.value)
        try:
            fresh = await self.oauth.refresh(stored.server, stored.client, stored.tokens)
        except TokenRefused as exc:
            await self._refresh_failed(stored, exc.reason)
            raise SignInRequiredError(self.name, AuthStatus.REFRESH_FAILED.value, exc.error) from exc
        await self._save(stored.with_tokens(fresh))
        return fresh.access_token

    async def _client_credentials(self, stored: Credential) -> str:
        server = stored.server or await self.discover(self.auth.scopes)
        client = self.configured_client(None)
        assert client is not None  # client_credentials requires client_id and client_secret
        try:
            fresh = await self.oauth.client_credentials(server, client)
        except TokenRefused as exc:
            await self._refresh_failed(replace(stored, server=server), exc.reason)
            raise SignInRequiredError(self.name, AuthStatus.REFRESH_FAILED.value, exc.error) from exc
        await self._save(Credential(status=AuthStatus.SIGNED_IN, server=server, tokens=fresh))
        return fresh.access_token

    async def _exchange(self, stored: Credential, subject_token: str | None) -> str:
        """RFC 8693: the user's ``subject_token`` traded for their token to this server."""
        exchange = self.auth.token_exchange
        assert exchange is not None  # only called when ``exchanges``
        if not subject_token:
            raise SignInFailedError(self.name, NO_SUBJECT_TOKEN)
        server = stored.server or await self.discover(exchange.scopes or self.auth.scopes)
        if exchange.resource is not None:
            server = replace(server, resource=exchange.resource)
        client = self.configured_client(None)
        assert client is not None  # token_exchange requires client_id and client_secret
        try:
            fresh = await self.oauth.exchange_token(
                server, client, subject_token, exchange.subject_token_type, audience=exchange.audience
            )
        except TokenRefused as exc:
            logger.warning("upstream %s: token exchange for user %s refused (%s)", self.name, self.subject, exc.reason)
            refused = f"the authorization server refused to exchange the token of user {self.subject}: {exc.reason}"
            raise SignInFailedError(self.name, refused) from exc
        await self._save(Credential(status=AuthStatus.SIGNED_IN, server=server, tokens=fresh))
        return fresh.access_token

    async def _refresh_failed(self, stored: Credential, reason: str) -> None:
        self.refresh_failures += 1
        logger.warning(
            "upstream %s: the authorization server refused to refresh its OAuth tokens (%s); "
            "status refresh_failed until an admin signs in again",
            self.name,
            reason,
        )
        await self._save(replace(stored, status=AuthStatus.REFRESH_FAILED, tokens=None))

    async def _save(self, credential: Credential) -> None:
        before = self.status
        await self._store.save(self.server_id, credential, self.subject)
        self._credential = credential
        if credential.status is AuthStatus.SIGNED_IN:
            self.parked = False
        if credential.status is not before:
            self._on_status(self, credential.status)

    def configured_client(self, redirect_uri: str | None) -> ClientInfo | None:
        """The client the config names (its secret expanded now), if it names one."""
        if self.auth.client_id is None:
            return None
        secret = None
        if self.auth.client_secret is not None:
            secret = expand_value(self.auth.client_secret, self._env, server=self.name, field="auth.client_secret")
        return ClientInfo(client_id=self.auth.client_id, client_secret=secret, redirect_uri=redirect_uri)

    async def prepare_sign_in(self, redirect_uri: str) -> tuple[AuthServer, ClientInfo]:
        """Discover (again: the server may have moved) and have a client for ``redirect_uri``."""
        if self.auth.grant is Grant.CLIENT_CREDENTIALS:
            raise SignInFailedError(self.name, "grant client_credentials signs in by itself; no browser sign-in")
        async with self._lock:
            stored = await self.reload()
            server = await self.discover(self.auth.scopes)
            client = self.configured_client(redirect_uri)
            if client is None:
                client = stored.client
                if client is None or not client.registered or client.redirect_uri != redirect_uri:
                    client = await self.oauth.register(server, redirect_uri)
            await self._save(replace(stored, server=server, client=client))
            return server, client

    async def adopt(self, server: AuthServer, client: ClientInfo) -> None:
        """Take the server's discovery and client for this user's sign-in (per user)."""
        async with self._lock:
            stored = await self.reload()
            await self._save(replace(stored, server=server, client=client))

    async def finish_sign_in(self, code: str, verifier: str, iss: str | None = None) -> None:
        async with self._lock:
            stored = await self.reload()
            if stored.server is None or stored.client is None:
                raise SignInFailedError(self.name, "no sign-in was started for this server")
            if iss is not None and iss != stored.server.issuer:
                # RFC 9207: a response from another authorization server (mix-up attack).
                raise SignInFailedError(self.name, f"the callback names issuer {iss}, not {stored.server.issuer}")
            tokens = await self.oauth.exchange_code(stored.server, stored.client, code, verifier)
            await self._save(stored.with_tokens(tokens))
        logger.info("upstream %s: signed in", self.name)
