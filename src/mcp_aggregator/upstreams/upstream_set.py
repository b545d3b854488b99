"""The set of supervised upstreams, kept in step with the servers that should run.

``reconcile(desired)`` is the one seam through which the registry (or a config file, or a
change another replica made) says what should run: servers missing from it are stopped,
new ones started, and ones whose configuration changed are restarted. Each supervisor
runs in the task group the set is bound to and owns its upstream session.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import anyio
from anyio.abc import TaskGroup, TaskStatus

from mcp_aggregator.credentials.upstream_bearer import UpstreamBearer
from mcp_aggregator.errors import ServerNotFoundError, StateError, UpstreamError
from mcp_aggregator.health.health_monitor import PHASES, phase_of
from mcp_aggregator.health.server_state import ServerEvent, ServerStatus, is_exposed
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite
from mcp_aggregator.settings import ServerConfig
from mcp_aggregator.upstreams.connection import Backchannel, UpstreamConnection
from mcp_aggregator.upstreams.server_supervisor import ChangeCallback, RetryPolicy, ServerSupervisor, Sleeper

logger = logging.getLogger(__name__)

AuthFor = Callable[[str, ServerConfig], UpstreamBearer | None]
"""The auth a server's transport signs its requests with, by registry id and config."""


@dataclass(frozen=True)
class DesiredServer:
    """One server that should be supervised: its registry id, configuration, and whether to connect."""

    server_id: str
    config: ServerConfig
    connect: bool = True


@dataclass(frozen=True)
class Reconciled:
    """What a ``reconcile`` changed, by server name."""

    started: tuple[str, ...] = ()
    stopped: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    connected: tuple[str, ...] = ()
    """Kept servers asked to connect because their connect intent became true."""
    disconnected: tuple[str, ...] = ()
    """Kept servers disconnected (drained) because their connect intent became false."""


class UpstreamSet:
    """Every supervised upstream, by name; ``bind`` it to a task group before starting any."""

    def __init__(
        self,
        *,
        env: Mapping[str, str],
        retry: RetryPolicy,
        sleep: Sleeper,
        backchannel: Backchannel | None = None,
        on_change: ChangeCallback = lambda _s, _e, _p: None,
        on_activity: Callable[[], None] = lambda: None,
        max_result_bytes: int = 64 << 20,
        auth_for: AuthFor = lambda _id, _config: None,
        connect_concurrency: int | None = None,
        sandbox: SandboxSite | None = None,
    ) -> None:
        self._connect_limit = anyio.CapacityLimiter(connect_concurrency or math.inf)
        """Shared by every supervisor: how many connections are being made at once."""
        self._sandbox = sandbox
        self._max_result_bytes = max_result_bytes
        self._auth_for = auth_for
        self.supervisors: dict[str, ServerSupervisor] = {}
        self.ids: dict[str, str] = {}
        self._env = env
        self._retry = retry
        self._sleep = sleep
        self._backchannel = backchannel
        self._on_change = on_change
        self._on_activity = on_activity
        self._settled: dict[str, anyio.Event] = {}
        self._crowded = False
        self._tg: TaskGroup | None = None

    def bind(self, tg: TaskGroup) -> None:
        self._tg = tg

    def __contains__(self, name: object) -> bool:
        return name in self.supervisors

    async def start(self, server_id: str, config: ServerConfig, *, connect: bool) -> ServerSupervisor:
        """Supervise one server (its first connection attempt starts now if ``connect``)."""
        if self._tg is None:
            raise RuntimeError("the upstream set is not bound to a task group")
        supervisor = ServerSupervisor(
            config,
            env=self._env,
            retry=self._retry,
            sleep=self._sleep,
            on_change=self._changed,
            on_activity=self._on_activity,
            backchannel=self._backchannel,
            max_result_bytes=self._max_result_bytes,
            auth=self._auth_for(server_id, config),
            connect_limit=self._connect_limit,
            sandbox=self._sandbox,
        )
        self.supervisors[config.name] = supervisor
        self.ids[config.name] = server_id
        self._settled[config.name] = anyio.Event()
        await self._tg.start(supervisor.run)
        if connect:
            supervisor.request_connect()
            self._crowded = self._crowded or self.unsettled > self._connect_limit.total_tokens
        else:
            self._settled[config.name].set()
        return supervisor

    def _changed(self, sup: ServerSupervisor, event: ServerEvent | None, persist: bool) -> None:
        if sup.name not in self.ids:
            return
        if sup.status in (ServerStatus.CONNECTED, ServerStatus.ERROR):
            self._settled[sup.name].set()
            self._crowded = self._crowded and not self.settled()
        self._on_change(sup, event, persist)

    async def remove(self, name: str, *, drain_timeout: float) -> None:
        """Stop supervising ``name``: drain its calls, close its session, forget it."""
        sup = self.supervisor(name)
        if sup.status is ServerStatus.CONNECTED:
            await sup.disconnect(drain_timeout=drain_timeout)
        await sup.stop()
        self.supervisors.pop(name, None)
        self.ids.pop(name, None)
        self._settled.pop(name, None)

    async def reconcile(self, desired: Mapping[str, DesiredServer], *, drain_timeout: float) -> Reconciled:
        """Make the supervised set match ``desired`` (by name); returns what changed."""
        stopped = [name for name in self.supervisors if name not in desired]
        restarted = [
            name
            for name, want in desired.items()
            if name in self.supervisors
            and (self.supervisors[name].config != want.config or self.ids[name] != want.server_id)
        ]
        started = [name for name in desired if name not in self.supervisors]
        for name in [*stopped, *restarted]:
            await self.remove(name, drain_timeout=drain_timeout)
        for name in [*restarted, *started]:
            want = desired[name]
            await self.start(want.server_id, want.config, connect=want.connect)
        connected, disconnected = await self._apply_intents(desired, set(restarted) | set(started), drain_timeout)
        if stopped or restarted or started or connected or disconnected:
            logger.info(
                "reconciled upstreams: started %s, stopped %s, restarted %s, connected %s, disconnected %s",
                started,
                stopped,
                restarted,
                connected,
                disconnected,
            )
        return Reconciled(tuple(started), tuple(stopped), tuple(restarted), tuple(connected), tuple(disconnected))

    async def _apply_intents(
        self, desired: Mapping[str, DesiredServer], fresh: set[str], drain_timeout: float
    ) -> tuple[list[str], list[str]]:
        """Connect or disconnect kept servers whose connect intent changed (set elsewhere)."""
        connect = [
            name
            for name, want in desired.items()
            if name not in fresh and want.connect and self.supervisors[name].status is ServerStatus.DISCONNECTED
        ]
        disconnect = [
            name
            for name, want in desired.items()
            if name not in fresh and not want.connect and self.supervisors[name].status is ServerStatus.CONNECTED
        ]
        for name in connect:
            self.supervisors[name].request_connect()

        async def drain(sup: ServerSupervisor) -> None:
            # It may have left CONNECTED meanwhile (lost, or disconnected by an admin call here).
            with contextlib.suppress(StateError):
                await sup.disconnect(drain_timeout=drain_timeout)

        async with anyio.create_task_group() as tg:
            for name in disconnect:
                tg.start_soon(drain, self.supervisors[name])
        return connect, disconnect

    async def stop_all(self) -> None:
        for supervisor in list(self.supervisors.values()):
            await supervisor.stop()

    def supervisor(self, name: str) -> ServerSupervisor:
        try:
            return self.supervisors[name]
        except KeyError:
            raise ServerNotFoundError(name) from None

    def supervisor_by_id(self, server_id: str) -> ServerSupervisor:
        for name, known in self.ids.items():
            if known == server_id:
                return self.supervisors[name]
        raise ServerNotFoundError(server_id)

    def connection(self, name: str) -> UpstreamConnection:
        """The live connection of ``name`` if its state allows calls (BR-005)."""
        return self.supervisor(name).require_connection()

    def serving(self) -> list[str]:
        """Servers whose session is up and whose state allows calls (CONNECTED, DEGRADED), sorted."""
        return sorted(
            name for name, sup in self.supervisors.items() if is_exposed(sup.status) and sup.connection is not None
        )

    async def relist_url_checked(self, timeout_secs: float, phase: int | None = None) -> list[str]:
        """Re-list every serving upstream whose health check is its ``health_check_url`` (that
        check lists nothing); the ones that changed. The session health check re-lists the rest.
        With ``phase``, only those whose slot of the health interval it is (``phase_of``)."""
        changed: list[str] = []

        async def one(name: str, sup: ServerSupervisor) -> None:
            connection = sup.connection
            if connection is None:
                return
            try:
                if await connection.relist(timeout_secs):
                    changed.append(name)
            except UpstreamError as exc:
                logger.info("re-listing %s failed: %s", name, exc)

        async with anyio.create_task_group() as tg:
            for name in self.serving():
                sup = self.supervisors[name]
                if sup.config.health_check_url is None:
                    continue
                if phase is None or phase_of(self.ids.get(name, name)) == phase:
                    tg.start_soon(one, name, sup)
        return sorted(changed)

    async def relist_loop(
        self, interval_secs: float, timeout_secs: float, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """``relist_url_checked`` once per health interval, until cancelled: each server in
        its own slot of the interval, as the health monitor checks them (not in one burst)."""
        task_status.started()
        slot = interval_secs / PHASES
        while True:
            started = anyio.current_time()
            for phase in range(PHASES):
                due = (phase + 1) * slot - (anyio.current_time() - started)
                await self._sleep(min(slot, max(0.0, due)))
                await self.relist_url_checked(timeout_secs, phase)

    def settled(self) -> bool:
        """Whether every server asked to connect has had its first attempt resolved."""
        return all(event.is_set() for event in self._settled.values())

    @property
    def unsettled(self) -> int:
        """Servers whose first connection attempt has not resolved yet."""
        return sum(1 for event in self._settled.values() if not event.is_set())

    @property
    def crowded(self) -> bool:
        """Whether the first connections being made began as more than are made at once (a
        large start, or many servers registered together), until every one of them resolved:
        the tail of such a start is as far from whole for a client as its queue was."""
        return self._crowded

    @property
    def queued_connects(self) -> int:
        """Connections waiting for their turn (``connect_concurrency`` are being made)."""
        return self._connect_limit.statistics().tasks_waiting

    async def wait_settled(self, timeout_secs: float) -> None:
        """Wait (up to ``timeout_secs``) until every server's first connection attempt resolved."""
        with anyio.move_on_after(timeout_secs):
            for event in list(self._settled.values()):
                await event.wait()
