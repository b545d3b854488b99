"""``mcp-aggregator serve``: run the gateway (one process, or ``--workers`` replicas)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import sys
from collections.abc import Callable
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import anyio
import typer

from mcp_aggregator.cli.options import ConfigOption, load_config
from mcp_aggregator.cli.output import EXIT_USAGE, fail
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.logs.log_format import LogFormat
from mcp_aggregator.settings.exposure import Exposure

# The gateway's parts are imported by the command that runs them, not at the top: every
# command of the CLI is built (its options read) for any one of them, even ``--help``.
if TYPE_CHECKING:
    from mcp_aggregator.gateway import Gateway
    from mcp_aggregator.settings import Settings

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"
"""The MCP Inspector the banner and the README name (``npx -y``: no install prompt)."""


class TransportChoice(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


def _announce(
    config: Path | None, transport: TransportChoice, *, as_json: bool = False
) -> Callable[[Gateway, str, str], None]:
    def announce(gateway: Gateway, url: str, sign_in: str) -> None:
        base = url.removesuffix("/mcp")
        exe = shutil.which("mcp-aggregator") or sys.argv[0]
        args = ["serve", "--transport", "stdio"]
        if config is not None:
            args += ["--config", str(config.resolve())]
        entry = {"command": exe, "args": args, "env": {"PATH": os.environ.get("PATH", "")}}
        desktop = {"mcpServers": {"aggregator": entry}}
        if as_json:
            # One line on stdout, so that a script that started ``--port 0`` learns where.
            started = {
                "mcp_url": url,
                "admin_sign_in": sign_in,
                "rest_api": f"{base}/api/v1/aggregator",
                "servers": sorted(gateway.supervisors),
                "claude_desktop": desktop,
            }
            typer.echo(json.dumps(started, ensure_ascii=False))
            return
        names = ", ".join(sorted(gateway.supervisors)) or "none configured"
        lines = [
            "",
            "mcp-aggregator is running (Ctrl-C stops it).",
            f"  MCP endpoint (streamable HTTP): {url}",
            f"  Admin page (this link signs you in; keep it private): {sign_in}",
            f"  REST API: {base}/api/v1/aggregator/servers (Authorization: Bearer <admin token>)",
            f"  OpenAPI: {base}/docs",
            f"  Upstream servers (connecting in the background): {names}",
            "",
            "Connect a client:",
            f"  MCP Inspector:  npx -y {INSPECTOR} --cli {url} --transport http --method tools/list",
            "  Claude Desktop: add this to claude_desktop_config.json (it starts the gateway over stdio):",
            "    " + json.dumps(desktop),
            "",
        ]
        typer.echo("\n".join(lines), err=True)

    return announce


def serve(
    config: ConfigOption = None,
    transport: Annotated[TransportChoice, typer.Option(help="How MCP clients connect.")] = TransportChoice.HTTP,
    host: Annotated[str | None, typer.Option(help="Bind address (HTTP).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (HTTP); 0 picks a free one.")] = None,
    exposure: Annotated[Exposure | None, typer.Option(help="What clients see as tools.")] = None,
    workers: Annotated[
        int,
        typer.Option(help="Replicas on this host, on ports port..port+N-1 (HTTP; N > 1 needs a PostgreSQL registry)."),
    ] = 1,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Log at DEBUG: per-item detail.")] = False,
    log_format: Annotated[
        LogFormat,
        typer.Option(
            "--log-format",
            help="text, or json: one object a line (time, level, logger, message, request_id, client, server, tool).",
        ),
    ] = LogFormat.TEXT,
    profile: Annotated[
        str | None, typer.Option(help="stdio: serve this profile's slice (HTTP serves each at /mcp/<name>).")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="HTTP: announce the addresses as one JSON line on stdout, for scripts.")
    ] = False,
) -> None:
    """Run the gateway."""
    from mcp_aggregator.logs.log_format import configure_logging

    if as_json and transport is TransportChoice.STDIO:
        fail("--json: over --transport stdio, stdout is the MCP stream; there is nothing else to print", EXIT_USAGE)
    settings = load_config(config)
    updates = {k: v for k, v in {"host": host, "port": port, "exposure": exposure}.items() if v is not None}
    if updates:
        settings = settings.model_copy(update={"serve": settings.serve.model_copy(update=updates)})
    configure_logging(logging.DEBUG if verbose else logging.INFO, log_format)
    if profile is not None and transport is not TransportChoice.STDIO:
        fail("--profile: only with --transport stdio; over HTTP each profile is served at /mcp/<name>", EXIT_USAGE)
    if workers != 1:
        _serve_workers(
            settings,
            workers,
            config,
            transport,
            exposure,
            [*(["--verbose"] if verbose else []), "--log-format", log_format.value],
            as_json=as_json,
        )
        return
    try:
        if transport is TransportChoice.STDIO:
            _serve_stdio(settings, profile)
        else:
            _serve_http(settings, config, transport, as_json=as_json)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    except OSError as exc:
        fail(f"cannot serve on {settings.serve.host}:{settings.serve.port}: {exc.strerror}", EXIT_USAGE)
    except KeyboardInterrupt:
        pass


def _serve_stdio(settings: Settings, profile: str | None) -> None:
    from mcp_aggregator.identity import DEFAULT_PROFILE
    from mcp_aggregator.serve.runner import serve_stdio

    anyio.run(partial(serve_stdio, settings, profile=profile or DEFAULT_PROFILE), backend_options={"use_uvloop": True})


def _serve_http(settings: Settings, config: Path | None, transport: TransportChoice, *, as_json: bool) -> None:
    """Binds and answers ``/healthz`` first, then loads the gateway and hands it the socket."""
    from mcp_aggregator.admin.auth import check_bind_allowed
    from mcp_aggregator.serve.start_listener import StartListener, bind_socket

    check_bind_allowed(settings.serve, named_clients=any(c.match is None for c in settings.clients))
    sock = bind_socket(settings.serve.host, settings.serve.port)
    with sock, StartListener(sock) as start_listener:
        # Imported only now, while the listener answers: these imports alone are seconds of
        # CPU on a busy machine, and a health check would see a dead process meanwhile.
        from mcp_aggregator.replicas.worker_pool import REPLICA_ENV
        from mcp_aggregator.serve.runner import serve_http

        # A replica of ``--workers`` says one line; the pool announced the whole set.
        announce = None if os.environ.get(REPLICA_ENV) else _announce(config, transport, as_json=as_json)
        run = partial(serve_http, settings, announce=announce, sock=sock, start_listener=start_listener)
        anyio.run(run, backend_options={"use_uvloop": True})


def _serve_workers(
    settings: Settings,
    workers: int,
    config: Path | None,
    transport: TransportChoice,
    exposure: Exposure | None,
    log_args: list[str],
    *,
    as_json: bool = False,
) -> None:
    from mcp_aggregator.replicas import WorkerPool, check_workers, replica_commands

    if transport is not TransportChoice.HTTP:
        fail("--workers: replicas serve HTTP; stdio has one client and one process", EXIT_USAGE)
    try:
        check_workers(settings, workers)
    except ConfigError as exc:
        fail(str(exc), EXIT_USAGE)
    args = ["--host", settings.serve.host]
    if config is not None:
        args += ["--config", str(config.resolve())]
    if exposure is not None:
        args += ["--exposure", exposure.value]
    args += log_args
    replicas = replica_commands(workers, settings.serve.port, args)
    first, last = replicas[0].port, replicas[-1].port
    if as_json:
        urls = [f"http://{settings.serve.host}:{r.port}/mcp" for r in replicas]
        typer.echo(json.dumps({"replicas": urls}))
    typer.echo(
        f"mcp-aggregator: {workers} replicas on http://{settings.serve.host}:{first}..{last}/mcp "
        "(put a load balancer in front: deploy/haproxy.cfg); Ctrl-C stops them",
        err=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(WorkerPool(replicas).run)
