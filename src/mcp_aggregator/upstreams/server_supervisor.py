"""Keeps one upstream connected: connects with backoff, reconnects after a loss, obeys admins.

The supervisor task owns the connection task (structured concurrency), and every status
change goes through the pure state machine, so an impossible sequence raises instead of
silently corrupting what admins and clients see.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime

import anyio
from anyio.abc import TaskStatus

from mcp_aggregator.credentials.upstream_bearer import UpstreamBearer
from mcp_aggregator.errors import (
    EnvVarError,
    ServerUnavailableError,
    SignInRequiredError,
    StateError,
    UpstreamConnectError,
)
from mcp_aggregator.health.backoff import backoff_delays
from mcp_aggregator.health.server_state import ServerEvent, ServerStatus, can_execute, transition
from mcp_aggregator.settings import ServerConfig
from mcp_aggregator.upstreams.connection import Backchannel, UpstreamConnection

logger = logging.getLogger(__name__)

Sleeper = Callable[[float], Awaitable[None]]
ChangeCallback = Callable[["ServerSupervisor", ServerEvent | None, bool], None]
"""Called with the event applied (None: the tool list changed) and whether to persist it."""


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 5
    base_secs: float = 1.0


class ServerSupervisor:
    """Owns the lifecycle of one upstream; ``run`` it once in the gateway's task group."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        env: Mapping[str, str] | None = None,
        retry: RetryPolicy = RetryPolicy(),
        sleep: Sleeper = anyio.sleep,
        on_change: ChangeCallback = lambda _s, _e, _p: None,
        on_activity: Callable[[], None] = lambda: None,
        backchannel: Backchannel | None = None,
        max_result_bytes: int = 64 << 20,
        auth: UpstreamBearer | None = None,
    ) -> None:
        self.config = config
        self.auth = auth
        self.backchannel = backchannel
        self.max_result_bytes = max_result_bytes
        self.name = config.name
        self.status = transition(None, ServerEvent.REGISTER)
        self.error_message: str | None = None
        self.connection: UpstreamConnection | None = None
        self.consecutive_failures = 0
        self.calls = 0
        self.call_errors = 0
        self.last_health_check: datetime | None = None
        self.response_time_ms: float | None = None
        self.last_error: str | None = None
        self._env = env
        self._retry = retry
        self._sleep = sleep
        self._on_change = on_change
        self._on_activity = on_activity
        self._want_connected = anyio.Event()
        self._requests = 0
        self._cancel = anyio.CancelScope()
        self._admin_disconnect = False
        self._finished = anyio.Event()

    def _move(self, event: ServerEvent, error: str | None = None, *, persist: bool = True) -> None:
        self.status = transition(self.status, event)
        self.error_message = error
        if error:
            self.last_error = error
        if event in (ServerEvent.CONNECT_OK, ServerEvent.HEALTH_OK):
            self.consecutive_failures = 0
        self._on_change(self, event, persist)

    def request_connect(self) -> None:
        """Ask for a connection (auto-connect, admin connect, or a scheduled reconnect)."""
        self._requests += 1
        self._want_connected.set()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            with self._cancel:
                while True:
                    await self._want_connected.wait()
                    requests_seen = self._requests
                    await self._connect_until_given_up()
                    if self._requests == requests_seen:
                        # Nobody asked again while that round ran (a request made during a
                        # disconnect or the last attempt must not be lost).
                        self._want_connected = anyio.Event()
        finally:
            self._finished.set()

    async def _connect_until_given_up(self) -> None:
        """Attempts with backoff; a lost session starts a fresh round (EC-001, EC-003)."""
        delays = [*backoff_delays(self._retry.max_attempts, self._retry.base_secs), None]
        attempt = 0
        while attempt < len(delays):
            delay = delays[attempt]
            attempt += 1
            event = ServerEvent.CONNECT if self.status is ServerStatus.DISCONNECTED else ServerEvent.RECONNECT
            self._move(event)
            try:
                reason = await self._connect_and_hold()
            except SignInRequiredError as exc:
                # Parked: retrying cannot sign in. A sign-in (or an admin connect) asks again.
                self._move(ServerEvent.CONNECT_FAILED, str(exc))
                logger.warning("%s", exc)
                break
            except (UpstreamConnectError, EnvVarError) as exc:
                self._move(ServerEvent.CONNECT_FAILED, str(exc))
                logger.warning("%s (attempt %d of %d)", exc, attempt, len(delays))
                if isinstance(exc, EnvVarError) or delay is None:
                    break  # a missing variable will not appear by retrying
                await self._sleep(delay)
                continue
            if self._admin_disconnect:
                self._admin_disconnect = False
                break
            if self.status in (ServerStatus.CONNECTED, ServerStatus.DEGRADED):
                self._move(ServerEvent.HEALTH_ERROR, reason)
            logger.warning("upstream %s lost: %s; reconnecting", self.name, reason)
            attempt = 0

    async def _connect_and_hold(self) -> str:
        """Connect, then hold the session until it ends; returns why it ended."""
        connection = UpstreamConnection(
            self.config,
            env=self._env,
            on_tools_changed=self._tools_changed,
            on_activity=self._on_activity,
            backchannel=self.backchannel,
            max_result_bytes=self.max_result_bytes,
            auth=self.auth,
        )
        failure: UpstreamConnectError | EnvVarError | SignInRequiredError | None = None
        async with anyio.create_task_group() as tg:
            try:
                await tg.start(connection.run)
            except (UpstreamConnectError, EnvVarError, SignInRequiredError) as exc:
                # Raised outside the task group, or anyio would wrap it in an ExceptionGroup.
                failure = exc
            else:
                self.connection = connection
                self._move(ServerEvent.CONNECT_OK)
                try:
                    await connection.wait_closed()
                finally:
                    self.connection = None
        if failure is not None:
            raise failure
        return connection.close_reason or "session closed"

    def _tools_changed(self, _connection: UpstreamConnection) -> None:
        self._on_change(self, None, True)

    def require_connection(self) -> UpstreamConnection:
        """The live connection, if the state allows calls (BR-005); else ``ServerUnavailableError``."""
        connection = self.connection
        if connection is None or not can_execute(self.status):
            raise ServerUnavailableError(self.name, self.status.value, self.error_message)
        if self.status is ServerStatus.DEGRADED:
            logger.warning("calling %s while it is DEGRADED", self.name)
        return connection

    def health_event(self, event: ServerEvent, error: str | None = None, *, persist: bool = True) -> None:
        """Apply a health outcome (DEGRADED / ERROR / back to CONNECTED).

        Moving to ERROR closes the session; the supervisor then reconnects with backoff
        (EC-010: a stale session is found by the health check and replaced).
        """
        self._move(event, error, persist=persist)
        if self.status is ServerStatus.ERROR and self.connection is not None:
            self.connection.abandon(error or "health checks failed")

    async def disconnect(self, *, force: bool = False, drain_timeout: float = 30.0) -> int:
        """BR-007: drain (or cancel) in-flight calls, close, go DISCONNECTED. Returns calls aborted."""
        connection = self.connection
        if self.status is not ServerStatus.CONNECTED or connection is None:
            raise StateError(f"Server {self.name} cannot be disconnected in status {self.status.value}")
        self._admin_disconnect = True
        self._move(ServerEvent.DISCONNECT)
        aborted = await connection.drain(drain_timeout, force=force)
        await connection.close()
        return aborted

    async def stop(self) -> None:
        """End the supervisor and its session (server removal, gateway shutdown)."""
        self._cancel.cancel()
        await self._finished.wait()
