"""Keeps one upstream connected: connects with backoff, reconnects after a loss, obeys admins.

The supervisor task owns the connection task (structured concurrency), and every status
change goes through the pure state machine, so an impossible sequence raises instead of
silently corrupting what admins and clients see.

A loss is noticed where it happens, not at the next health check: a stdio server whose
output closes or whose process exits, a session the SDK closed under a call, an upstream
that refuses connections. Calls count too: consecutive transport failures (closed, reset,
timed out) move the server as failed health checks do, and a call that came back counts as
a passing one. Between reconnection attempts to an HTTP upstream that refused connections,
its port is watched, so the attempt is made as soon as it listens again.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import anyio
from anyio.abc import TaskStatus

from mcp_aggregator.credentials.upstream_bearer import UpstreamBearer
from mcp_aggregator.errors import (
    EnvVarError,
    HiddenPathError,
    SandboxError,
    ServerUnavailableError,
    SignInRequiredError,
    StateError,
    UpstreamConnectError,
    UpstreamError,
)
from mcp_aggregator.health.backoff import backoff_delays
from mcp_aggregator.health.call_failure import CallFailure, classify_call_failure, refused
from mcp_aggregator.health.health_result import HealthOutcome, HealthResult, apply_health_result
from mcp_aggregator.health.port_probe import Address, address_of, port_open, wait_port_open
from mcp_aggregator.health.server_state import ServerEvent, ServerStatus, can_execute, transition
from mcp_aggregator.sandbox.hidden_paths import SandboxHint, hint_sentence
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite
from mcp_aggregator.settings import ServerConfig, Transport
from mcp_aggregator.upstreams.connection import Backchannel, UpstreamConnection
from mcp_aggregator.upstreams.stdio_pipe import StdioPipe

logger = logging.getLogger(__name__)

Sleeper = Callable[[float], Awaitable[None]]
ChangeCallback = Callable[["ServerSupervisor", ServerEvent | None, bool], None]
"""Called with the event applied (None: the tool list changed) and whether to persist it."""


@dataclass(frozen=True)
class RetryPolicy:
    """How reconnection backs off, and how many failed calls in a row degrade a server."""

    max_attempts: int = 5
    base_secs: float = 1.0
    degraded_after: int = 2
    """Consecutive transport failures (health checks or calls) that make a server DEGRADED."""
    error_after: int = 3
    """... and that make it ERROR (its session is then replaced)."""
    probe_every_secs: float = 0.25
    """How often a refusing HTTP upstream's port is tried while a reconnection waits (four
    times less often once the round's attempts are spent)."""


_HEALTH_EVENTS = {
    ServerStatus.DEGRADED: ServerEvent.HEALTH_DEGRADED,
    ServerStatus.ERROR: ServerEvent.HEALTH_ERROR,
    ServerStatus.CONNECTED: ServerEvent.HEALTH_OK,
}
_PASSED = HealthResult(HealthOutcome.HEALTHY)
_HISTORY = 32
_LOGGED_LINES = 5
"""The last stderr lines a failed start's warning in the log ends with."""


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
        connect_limit: anyio.CapacityLimiter | None = None,
        sandbox: SandboxSite | None = None,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.config = config
        self._connect_limit = connect_limit if connect_limit is not None else anyio.CapacityLimiter(math.inf)
        self.sandbox = sandbox
        """The gateway's sandbox site: a stdio server starts confined (None: as a plain child)."""
        self.limit_hit: str | None = None
        """The sandbox limit that ended the server's last process, if one did."""
        self.sandbox_active: bool | None = None
        """Whether the running process is confined (None before its first start)."""
        self.sandbox_warnings: tuple[str, ...] = ()
        """What the last start could not confine (the platform lacks a tool), said in the status."""
        self.sandbox_applied: dict[str, Any] | None = None
        """The sandbox the running process got (after any fallback), as the views show it."""
        self._sandbox_error: str | None = None
        self.stderr_tail: list[str] = []
        """The last lines (scrubbed) its process wrote to stderr, when it failed to start or
        ended; cleared when it connects."""
        self.sandbox_hints: list[SandboxHint] = []
        """Paths it was given that its sandbox hid when it last failed to start."""
        self.auth = auth
        self.backchannel = backchannel
        self.max_result_bytes = max_result_bytes
        self.name = config.name
        self.status = transition(None, ServerEvent.REGISTER)
        self.history: deque[ServerStatus] = deque([self.status], maxlen=_HISTORY)
        """The latest statuses, oldest first, each change once (for operators and tests)."""
        self.error_message: str | None = None
        self.connection: UpstreamConnection | None = None
        self.consecutive_failures = 0
        self.calls = 0
        self.call_errors = 0
        self.last_health_check: datetime | None = None
        self.connected_at: datetime | None = None
        """When its current (or last) session was made: the registry's copy trails by the write-behind."""
        self._wall_clock = wall_clock
        self.response_time_ms: float | None = None
        self.last_error: str | None = None
        self._env = env
        self._retry = retry
        self._sleep = sleep
        self._on_change = on_change
        self._on_activity = on_activity
        self._want_connected = anyio.Event()
        self._kick = anyio.Event()
        """Set by ``request_connect``: cuts a backoff wait short."""
        self._requests = 0
        self._cancel = anyio.CancelScope()
        self._admin_disconnect = False
        self._finished = anyio.Event()

    def _move(self, event: ServerEvent, error: str | None = None, *, persist: bool = True) -> None:
        previous, self.status = self.status, transition(self.status, event)
        if previous is ServerStatus.CONNECTING and self.status is ServerStatus.CONNECTED:
            self.connected_at = self._wall_clock()
        if self.status is not self.history[-1]:
            self.history.append(self.status)
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
        self._kick.set()

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
        """Attempts with backoff; a lost session starts a fresh round (EC-001, EC-003).

        An HTTP upstream whose port refuses connections is retried as soon as its port
        accepts again, and is still watched after the last attempt of a round failed.
        """
        delays = [*backoff_delays(self._retry.max_attempts, self._retry.base_secs), None]
        attempt = 0
        while attempt < len(delays):
            delay = delays[attempt]
            attempt += 1
            event = ServerEvent.CONNECT if self.status is ServerStatus.DISCONNECTED else ServerEvent.RECONNECT
            self._kick = anyio.Event()
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
                logger.warning("%s (attempt %d of %d)%s", exc, attempt, len(delays), _said(self.stderr_tail))
                # A missing variable, tool or granted path, or a path the sandbox hides, will
                # not appear by retrying.
                if isinstance(exc, EnvVarError | SandboxError) or not await self._pause(delay, exc):
                    break
                if delay is None:
                    attempt = 0  # the round was over, and the port listens again: a fresh round
                continue
            if self._admin_disconnect:
                self._admin_disconnect = False
                break
            if self.status in (ServerStatus.CONNECTED, ServerStatus.DEGRADED):
                self._move(ServerEvent.HEALTH_ERROR, reason)
            logger.warning("upstream %s lost: %s; reconnecting", self.name, reason)
            attempt = 0

    async def _pause(self, delay: float | None, failure: UpstreamConnectError) -> bool:
        """Wait before the next attempt; whether to make one.

        ``delay`` is the backoff (None: the round's last attempt failed). A request to
        connect cuts the wait short. An HTTP upstream that refused connections is tried
        again as soon as its port accepts, even after the round is over; otherwise a round
        that is over gives up (False).
        """
        address = self._address if refused(failure) else None
        if address is not None and await port_open(address, self._retry.probe_every_secs * 4):
            return True  # it listens again already
        if delay is None and address is None:
            return False
        async with anyio.create_task_group() as tg:

            async def until(waiting: Awaitable[object]) -> None:
                await waiting
                tg.cancel_scope.cancel()

            if delay is not None:
                tg.start_soon(until, self._sleep(delay))
            tg.start_soon(until, self._kick.wait())
            if address is not None:
                # Between attempts the port is tried often; after the round, less so (it may
                # be a remote server down for hours).
                every = self._retry.probe_every_secs * (1 if delay is not None else 4)
                tg.start_soon(until, wait_port_open(address, every))
        return True

    @property
    def _address(self) -> Address | None:
        if self.config.transport is Transport.STDIO:
            return None
        return address_of(self.config.base_url or self.config.url)

    async def _connect_and_hold(self) -> str:
        """Connect, then hold the session until it ends; returns why it ended.

        A start whose sandbox bwrap itself could not set up is made once more at once, as
        part of the same attempt: seen here as a rare netlink error while bwrap brings up the
        namespace's loopback (``bwrap: loopback: Failed RTM_NEWADDR``), which a second start
        does not meet, and which should not cost a backoff or a failed first attempt."""
        self._sandbox_error = None
        try:
            return await self._connect_once()
        except UpstreamConnectError:
            error = self._sandbox_error
            if error is None:
                raise
        logger.warning("upstream %s: its sandbox could not be set up (%s); starting it again", self.name, error)
        return await self._connect_once()

    async def _connect_once(self) -> str:
        connection = UpstreamConnection(
            self.config,
            env=self._env,
            on_tools_changed=self._tools_changed,
            on_activity=self._on_activity,
            backchannel=self.backchannel,
            max_result_bytes=self.max_result_bytes,
            auth=self.auth,
            sandbox=self.sandbox,
        )
        failure: UpstreamConnectError | EnvVarError | SignInRequiredError | None = None
        async with anyio.create_task_group() as tg:
            try:
                # Only the connection's making (process start, handshake, first listing) is
                # bounded: fifty upstreams starting at once on a few cores leave the gateway's
                # own loop no time to answer anyone.
                async with self._connect_limit:
                    await tg.start(connection.run)
            except (UpstreamConnectError, EnvVarError, SignInRequiredError) as exc:
                # Raised outside the task group, or anyio would wrap it in an ExceptionGroup.
                failure = self._why_start_failed(connection, exc)
                if connection.pipe is not None:
                    self._sandbox_error = connection.pipe.sandbox_error
            else:
                self.connection = connection
                self._note_sandbox(connection)
                self.limit_hit = None  # a new process: the last one's limit is history (last_error)
                self.stderr_tail, self.sandbox_hints = [], []
                self._move(ServerEvent.CONNECT_OK)
                watch = anyio.CancelScope()
                if connection.pipe is not None:
                    tg.start_soon(self._watch_pipe, connection, connection.pipe, watch)
                try:
                    await connection.wait_closed()
                finally:
                    watch.cancel()
                    self.connection = None
        if failure is not None:
            raise failure
        reason = connection.close_reason or "session closed"
        if connection.pipe is not None:
            self.stderr_tail = connection.pipe.stderr.lines()
        # Read after the close, which waits for the process to exit: its status is known then.
        hit = connection.pipe.limit_hit if connection.pipe is not None else None
        if hit is not None:
            self.limit_hit = hit
            if "limit" not in reason:
                reason = f"{reason}: it exceeded its sandbox's {hit} limit"
        return reason

    def _note_sandbox(self, connection: UpstreamConnection) -> None:
        """What this start's sandbox was, for the status (also when the start failed)."""
        launch = connection.pipe.launch if connection.pipe is not None else None
        if launch is not None and launch.plan is not None:
            self.sandbox_warnings = launch.warnings
            self.sandbox_active = launch.plan.sandboxed
            self.sandbox_applied = launch.applied()

    def _why_start_failed(
        self, connection: UpstreamConnection, exc: UpstreamConnectError | EnvVarError | SignInRequiredError
    ) -> UpstreamConnectError | EnvVarError | SignInRequiredError:
        """A start that failed because the server died says how (its exit, the sandbox limit
        it ran into), not only that the handshake was cut short; a sandboxed one that was
        given paths its sandbox hides names them with the lines to add (``HiddenPathError``).
        Keeps the server's last stderr lines for the status."""
        self._note_sandbox(connection)
        pipe = connection.pipe
        self.stderr_tail = pipe.stderr.lines() if pipe is not None else []
        self.sandbox_hints = []
        if pipe is None:
            return exc
        if isinstance(exc, UpstreamConnectError) and not isinstance(exc, SandboxError) and pipe.launch is not None:
            self.sandbox_hints = pipe.launch.hidden_paths(self.stderr_tail)
        exc = self._explained(exc, pipe)
        if self.sandbox_hints:
            hidden = HiddenPathError(
                self.name, f"{str(exc).removeprefix(f'{self.name}: ')}; {hint_sentence(self.sandbox_hints)}"
            )
            hidden.__cause__ = exc
            return hidden
        return exc

    def _explained(
        self, exc: UpstreamConnectError | EnvVarError | SignInRequiredError, pipe: StdioPipe
    ) -> UpstreamConnectError | EnvVarError | SignInRequiredError:
        if not isinstance(exc, UpstreamConnectError) or pipe.gone_reason is None:
            return exc
        message = str(exc)
        gone = pipe.gone_reason
        if pipe.limit_hit is not None:
            self.limit_hit = pipe.limit_hit
            if "limit" not in gone:
                gone = f"{gone}: it exceeded its sandbox's {pipe.limit_hit} limit"
        elif "closed" not in message:
            return exc  # it did not die on its own: we ended it (a timeout), which says enough
        if gone in message:
            return exc
        detail = message.removeprefix(f"{self.name}: ")
        better = type(exc)(self.name, f"{detail}; {gone}")
        better.__cause__ = exc
        return better

    async def _watch_pipe(self, connection: UpstreamConnection, pipe: StdioPipe, scope: anyio.CancelScope) -> None:
        """Give the session up the moment its server process is gone (killed, crashed, exited)."""
        with scope:
            reason = await pipe.wait_gone()
            if connection.close_reason is None:
                logger.warning("upstream %s: %s", self.name, reason)
                connection.abandon(reason)

    def call_succeeded(self) -> None:
        """A call came back: counts like a passing health check (kept cheap, it runs per call)."""
        self.calls += 1
        if self.consecutive_failures:
            self._fold_call(_PASSED)

    def call_failed(self, exc: UpstreamError | None) -> None:
        """A call failed with ``exc``: a transport failure counts like a failed health check,
        a lost session (refused, or unknown upstream) is replaced at once, an upstream's answer
        counts as a pass."""
        self.calls += 1
        self.call_errors += 1
        kind = CallFailure.NONE if exc is None else classify_call_failure(exc)
        if kind is CallFailure.NONE:
            if self.consecutive_failures:
                self._fold_call(_PASSED)
            return
        assert exc is not None
        error = str(exc)
        if kind is CallFailure.LOST and self.connection is not None and can_execute(self.status):
            self.consecutive_failures += 1
            self.last_error = error
            self.health_event(ServerEvent.HEALTH_ERROR, error)
            return
        self._fold_call(HealthResult(HealthOutcome.UNHEALTHY, None, error))

    def _fold_call(self, result: HealthResult) -> None:
        if self.connection is None or not can_execute(self.status):
            return  # no session to judge: the reconnection round owns the state
        update = apply_health_result(
            self.status,
            self.consecutive_failures,
            result,
            degraded_after=self._retry.degraded_after,
            error_after=self._retry.error_after,
        )
        self.consecutive_failures = update.consecutive_failures
        if result.error:
            self.last_error = result.error
        if update.status is not self.status:
            if update.status is ServerStatus.CONNECTED:
                logger.info("upstream %s answers calls again; status CONNECTED", self.name)
            else:
                logger.warning(
                    "upstream %s: %d calls in a row failed; status %s: %s",
                    self.name,
                    update.consecutive_failures,
                    update.status.value,
                    result.error,
                )
            self.health_event(_HEALTH_EVENTS[update.status], result.error)

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


def _said(stderr: list[str]) -> str:
    """The last stderr lines, for a warning in the log (each was relayed as it came too)."""
    if not stderr:
        return ""
    return "; its stderr ended with: " + " | ".join(stderr[-_LOGGED_LINES:])
