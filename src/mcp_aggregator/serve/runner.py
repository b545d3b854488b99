"""Running the gateway: build the parts, serve MCP on stdio or HTTP, stop cleanly."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TextIO

import anyio
import uvicorn
from starlette.routing import Mount

from mcp_aggregator.admin.admin_token import admin_token_in, sign_in_link
from mcp_aggregator.admin.app import build_admin_app
from mcp_aggregator.admin.auth import check_bind_allowed
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.identity import DEFAULT_PROFILE
from mcp_aggregator.registry.registry import utc_now
from mcp_aggregator.search.free_heap import freeze_heap
from mcp_aggregator.serve.addresses import local_name
from mcp_aggregator.serve.fast_call import FastCalls
from mcp_aggregator.serve.http_app import build_http_app, uvicorn_config
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.profile_gateway import profile_of
from mcp_aggregator.serve.profile_servers import ProfileServers
from mcp_aggregator.serve.secret_log_filter import scrubbed_logs
from mcp_aggregator.serve.start_listener import StartListener
from mcp_aggregator.serve.start_listener import bind_socket as bind_socket  # where callers find it
from mcp_aggregator.serve.stdio_face import stdio_streams
from mcp_aggregator.sessions import SessionBook
from mcp_aggregator.settings import Settings

logger = logging.getLogger(__name__)


async def serve_stdio(settings: Settings, *, profile: str = DEFAULT_PROFILE) -> None:
    """MCP over this process's stdin/stdout for one profile (``default``: the whole
    catalogue); logs go to stderr so the stream stays clean.

    Raises:
        ConfigError: no profile named ``profile``.
    """
    known = {DEFAULT_PROFILE, *(p.name for p in settings.profiles)}
    if profile not in known:
        raise ConfigError(f"no profile named {profile!r} (known: {', '.join(sorted(known))})", path="--profile")
    gateway = Gateway(settings)
    with scrubbed_logs(gateway.scrub):
        # The receiver outlives the gateway's stop, so that a signal coming while the gateway
        # stops its upstreams does not end the process half-way; it only ever cancels the
        # serving, never a scope around the gateway (whose stop must run in order).
        async with anyio.create_task_group() as signals:
            serving = anyio.CancelScope()
            signals.start_soon(_stop_on_signals, serving)
            async with gateway:
                freeze_heap()
                with serving:
                    await _serve_stdio(ProfileServers(gateway).get(profile))
            signals.cancel_scope.cancel()


async def _stop_on_signals(serving: anyio.CancelScope) -> None:
    """SIGTERM or SIGHUP stop the gateway as the end of its input does.

    A client that started the gateway over stdio ends it by closing its input and, when the
    gateway takes a moment to stop, SIGTERM to its process group. The default action would end
    the process on the spot, and the upstream servers it started, each leading a process group
    of its own, would live on as orphans; here the gateway stops them on its way out.
    """
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as signals:
        async for received in signals:
            logger.info("%s: stopping", signal.Signals(received).name)
            serving.cancel()


async def _serve_stdio(gateway_server: GatewayServer) -> None:
    async with anyio.create_task_group() as tg:
        await tg.start(gateway_server.run)
        server = gateway_server.server
        view = gateway_server.gateway
        calls = FastCalls(view, server.server_info_stamp, profile_of(view))
        async with calls.serving(), stdio_streams(calls) as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        tg.cancel_scope.cancel()


async def serve_http(
    settings: Settings,
    *,
    announce: Callable[[Gateway, str, str], None] | None = None,
    out: TextIO = sys.stderr,
    shutdown: anyio.Event | None = None,
    sock: socket.socket | None = None,
    start_listener: StartListener | None = None,
) -> None:
    """MCP over streamable HTTP at ``/mcp`` (plus ``/healthz``) until interrupted.

    ``sock``: a socket already bound (``bind_socket``) and served meanwhile by
    ``start_listener``, which is closed once the gateway can answer, before ``announce``;
    without them the socket is bound here.

    ``announce(gateway, mcp_url, sign_in_link)`` is called once listening; the link opens the
    web page signed in with the admin token (``serve.admin_token``, or the one kept in
    ``serve.data_dir``, made at first start). Setting ``shutdown`` stops serving gracefully,
    as a signal would.

    Raises:
        ConfigError: a non-loopback bind without client authentication for ``/mcp``.
    """
    serve = settings.serve
    check_bind_allowed(serve, named_clients=any(c.match is None for c in settings.clients))
    admin_token = serve.admin_token or admin_token_in(serve.data_dir)
    # Bind before starting so the announced URL is right even for port 0.
    sock = sock if sock is not None else bind_socket(serve.host, serve.port)
    gateway = Gateway(settings)
    server: _ClosingServer | None = None
    with sock, scrubbed_logs(gateway.scrub):
        async with gateway:
            freeze_heap()  # the gateway has just collected (``free_heap``) on its way in
            servers = ProfileServers(gateway)
            gateway_server = servers.default
            admin = Mount("/", app=build_admin_app(gateway, token=admin_token))
            sessions = await SessionBook.open(serve, gateway.registry, env=os.environ, clock=utc_now)
            port = sock.getsockname()[1]
            gateway.heartbeat.home = replica_home(serve.replica_url, serve.host, port)
            app = build_http_app(
                gateway_server,
                profiles=servers.named,
                host=serve.host,
                extra_routes=[admin],
                json_response=serve.http_json_response,
                stateless=serve.http_stateless,
                sessions=sessions,
                home=gateway.heartbeat.home,
            )
            # ``log_config=None``: uvicorn's lines go through the gateway's handler (format, scrubbing).
            config = uvicorn_config(app, log_level="warning", lifespan="on", log_config=None)
            server = _ClosingServer(config, gateway.events.close)
            base = f"http://{local_name(serve.host)}:{port}"
            url, link = f"{base}/mcp", sign_in_link(base, admin_token)
            gateway.credentials.public_base = base
            async with anyio.create_task_group() as tg:
                await tg.start(servers.run)
                await tg.start(sessions.keys.run)
                stopping = anyio.Event()
                _tell_on_exit(server, stopping)
                if shutdown is not None:
                    tg.start_soon(_exit_when_set, shutdown, server, stopping)
                tg.start_soon(_refuse_held_calls_at_exit, server, gateway, stopping)
                if start_listener is not None:
                    # From here connections wait in the backlog for uvicorn, a moment away.
                    await anyio.to_thread.run_sync(start_listener.close)
                if announce is not None:
                    announce(gateway, url, link)
                else:
                    print(f"mcp-aggregator: MCP endpoint {url}; admin page {link}", file=out, flush=True)
                await server.serve(sockets=[sock])
                tg.cancel_scope.cancel()
    # Only now, with the gateway stopped (upstreams ended, the audit's last batch and the
    # registry's write-behind written), may the signal that stopped it end the process as
    # its default would: the exit status still says SIGTERM/SIGINT to whoever started us.
    if server is not None:
        for sig in reversed(server.stopped_by):
            signal.raise_signal(sig)


class _ClosingServer(uvicorn.Server):
    """Ends the admin event streams as shutdown begins: uvicorn waits for every response in
    progress to finish, and an event stream to an open page never would."""

    def __init__(self, config: uvicorn.Config, before_shutdown: Callable[[], None]) -> None:
        super().__init__(config)
        self._before_shutdown = before_shutdown
        self.stopped_by: list[int] = []
        """The signals that stopped serving, in order, for the caller to raise again once the
        gateway has stopped."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        # uvicorn raises the signals it caught again as it leaves ``serve()``; with SIGTERM's
        # default action that ends the process there, before the gateway's own stop runs.
        # Taking them out of its list first defers that to ``serve_http``'s end.
        with super().capture_signals():
            try:
                yield
            finally:
                self.stopped_by.extend(self._captured_signals)
                self._captured_signals.clear()

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._before_shutdown()
        await super().shutdown(sockets)


async def _refuse_held_calls_at_exit(server: uvicorn.Server, gateway: Gateway, stopping: anyio.Event) -> None:
    """Once uvicorn is told to stop (``stopping``: a signal, or ``shutdown``), refuse the calls
    held for a person's approval: their clients are told, and uvicorn, which waits for every
    request in flight before it stops, is not kept waiting on a decision that will never come.
    Then the replica's heartbeat row goes, as the replica no longer takes calls."""
    await stopping.wait()
    await gateway.approvals.stop()
    await gateway.heartbeat.stop()


def _tell_on_exit(server: uvicorn.Server, stopping: anyio.Event) -> None:
    """Make uvicorn's signal handler set ``stopping`` too (it only sets a flag it polls)."""
    handle_exit = server.handle_exit

    def handled(sig: int, frame: FrameType | None) -> None:
        stopping.set()
        handle_exit(sig, frame)

    server.handle_exit = handled  # type: ignore[method-assign]


async def _exit_when_set(shutdown: anyio.Event, server: uvicorn.Server, stopping: anyio.Event) -> None:
    await shutdown.wait()
    stopping.set()
    server.should_exit = True


def replica_home(replica_url: str | None, host: str, port: int) -> str | None:
    """The base URL other replicas reach this one at: ``serve.replica_url``, else the bound
    address unless it is a wildcard (which names no one machine)."""
    if replica_url is not None:
        return replica_url
    if host in ("", "0.0.0.0", "::"):
        return None
    return f"http://{local_name(host)}:{port}"
