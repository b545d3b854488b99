"""The ``mcp-aggregator`` command line."""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import shutil
import sys
from collections.abc import Callable
from enum import StrEnum
from functools import partial
from pathlib import Path
from typing import Annotated

import anyio
import httpx
import typer

from mcp_aggregator.admin.admin_token import ADMIN_TOKEN_FILE, read_admin_token
from mcp_aggregator.errors import AggregationFailedError, ConfigError, InvalidQueryError, QueryError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.identity import DEFAULT_PROFILE
from mcp_aggregator.replicas import WorkerPool, check_workers, replica_commands
from mcp_aggregator.replicas.worker_pool import REPLICA_ENV
from mcp_aggregator.search import SearchHit
from mcp_aggregator.serve.runner import local_name, serve_http, serve_stdio
from mcp_aggregator.settings import Exposure, Settings, load_settings

app = typer.Typer(no_args_is_help=True, add_completion=False, help="An MCP gateway for many MCP servers.")

ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="YAML or Claude Desktop JSON configuration file.")
]


class TransportChoice(StrEnum):
    STDIO = "stdio"
    HTTP = "http"


def _fail(message: str) -> typer.Exit:
    typer.echo(f"mcp-aggregator: error: {message}", err=True)
    return typer.Exit(code=2)


def _load(config: Path | None) -> Settings:
    if config is None:
        return Settings()
    try:
        return load_settings(config)
    except ConfigError as exc:
        typer.echo(f"mcp-aggregator: invalid configuration {config}:", err=True)
        typer.echo("\n".join(f"  {line}" for line in str(exc).splitlines()), err=True)
        raise typer.Exit(code=2) from None


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _announce(config: Path | None, transport: TransportChoice) -> Callable[[Gateway, str, str], None]:
    def announce(gateway: Gateway, url: str, sign_in: str) -> None:
        base = url.removesuffix("/mcp")
        exe = shutil.which("mcp-aggregator") or sys.argv[0]
        args = ["serve", "--transport", "stdio"]
        if config is not None:
            args += ["--config", str(config.resolve())]
        entry = {"command": exe, "args": args, "env": {"PATH": os.environ.get("PATH", "")}}
        desktop = {"mcpServers": {"aggregator": entry}}
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
            f"  MCP Inspector:  npx @modelcontextprotocol/inspector --cli {url} --transport http --method tools/list",
            "  Claude Desktop: add this to claude_desktop_config.json (it starts the gateway over stdio):",
            "    " + json.dumps(desktop),
            "",
        ]
        typer.echo("\n".join(lines), err=True)

    return announce


@app.command()
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
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
    profile: Annotated[
        str | None, typer.Option(help="stdio: serve this profile's slice (HTTP serves each at /mcp/<name>).")
    ] = None,
) -> None:
    """Run the gateway."""
    settings = _load(config)
    updates = {k: v for k, v in {"host": host, "port": port, "exposure": exposure}.items() if v is not None}
    if updates:
        settings = settings.model_copy(update={"serve": settings.serve.model_copy(update=updates)})
    _setup_logging(verbose)
    if profile is not None and transport is not TransportChoice.STDIO:
        raise _fail("--profile: only with --transport stdio; over HTTP each profile is served at /mcp/<name>")
    if workers != 1:
        _serve_workers(settings, workers, config, transport, exposure, verbose)
        return
    try:
        if transport is TransportChoice.STDIO:
            anyio.run(
                partial(serve_stdio, settings, profile=profile or DEFAULT_PROFILE), backend_options={"use_uvloop": True}
            )
        else:
            # A replica of ``--workers`` says one line; the pool announced the whole set.
            announce = None if os.environ.get(REPLICA_ENV) else _announce(config, transport)
            anyio.run(
                partial(serve_http, settings, announce=announce),
                backend_options={"use_uvloop": True},
            )
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"cannot serve on {settings.serve.host}:{settings.serve.port}: {exc.strerror}") from None
    except KeyboardInterrupt:
        pass


def _serve_workers(
    settings: Settings,
    workers: int,
    config: Path | None,
    transport: TransportChoice,
    exposure: Exposure | None,
    verbose: bool,
) -> None:
    if transport is not TransportChoice.HTTP:
        raise _fail("--workers: replicas serve HTTP; stdio has one client and one process")
    try:
        check_workers(settings, workers)
    except ConfigError as exc:
        raise _fail(str(exc)) from None
    args = ["--host", settings.serve.host]
    if config is not None:
        args += ["--config", str(config.resolve())]
    if exposure is not None:
        args += ["--exposure", exposure.value]
    if verbose:
        args.append("--verbose")
    replicas = replica_commands(workers, settings.serve.port, args)
    first, last = replicas[0].port, replicas[-1].port
    typer.echo(
        f"mcp-aggregator: {workers} replicas on http://{settings.serve.host}:{first}..{last}/mcp "
        "(put a load balancer in front: deploy/haproxy.cfg); Ctrl-C stops them",
        err=True,
    )
    with contextlib.suppress(KeyboardInterrupt):
        anyio.run(WorkerPool(replicas).run)


@app.command("check-config")
def check_config(config: Annotated[Path, typer.Argument(help="The file to validate.")]) -> None:
    """Validate a configuration file and summarise it."""
    settings = _load(config)
    typer.echo(f"{config}: OK, {len(settings.servers)} server(s)")
    for server in settings.servers:
        target = server.command or server.url or server.base_url
        typer.echo(f"  {server.name:<20} {server.transport.value:<6} {target}")


@app.command("servers")
def servers(config: ConfigOption = None, timeout: float = 30.0) -> None:
    """Connect to every configured server once and report status and tool counts."""
    settings = _load(config)

    async def run() -> None:
        async with Gateway(settings) as gateway:
            await gateway.wait_settled(timeout)
            for name, sup in sorted(gateway.supervisors.items()):
                count = len(sup.connection.tools) if sup.connection else 0
                detail = f"  ({sup.error_message})" if sup.error_message else ""
                typer.echo(f"{name:<20} {sup.status.value:<12} {count:>4} tools{detail}")
            await _stop_all(gateway)

    anyio.run(run)


@app.command()
def query(
    text: Annotated[str, typer.Argument(help="The question to ask every selected server.")],
    config: ConfigOption = None,
    max_results: Annotated[int | None, typer.Option("--max-results", "-n", help="10-100.")] = None,
    server: Annotated[list[str] | None, typer.Option("--server", "-s", help="Only these servers.")] = None,
    timeout: float = 30.0,
) -> None:
    """Run the aggregator query against the configured servers and print the JSON answer."""
    settings = _load(config)
    arguments: dict[str, object] = {"query": text}
    if max_results is not None:
        arguments["maxResults"] = max_results
    if server:
        arguments["servers"] = server

    async def run() -> dict[str, object] | QueryError:
        async with Gateway(settings) as gateway:
            await gateway.wait_settled(timeout)
            try:
                return await gateway.query(arguments)
            except (InvalidQueryError, AggregationFailedError) as exc:
                # Returned, not raised: raised inside the gateway's task group it would
                # arrive wrapped in an ExceptionGroup.
                return exc
            finally:
                await _stop_all(gateway)

    answer = anyio.run(run)
    if isinstance(answer, InvalidQueryError):
        raise _fail(f"invalid query: {answer.field}: {answer.reason}")
    if isinstance(answer, AggregationFailedError):
        raise _fail(f"{answer}: " + "; ".join(answer.errors))
    assert not isinstance(answer, QueryError)
    typer.echo(json.dumps(answer, indent=2, ensure_ascii=False))


tools_app = typer.Typer(no_args_is_help=True, help="Search the upstream tools.")
app.add_typer(tools_app, name="tools")


@tools_app.command("search")
def tools_search(
    text: Annotated[str, typer.Argument(help="What the tool should do.")],
    config: ConfigOption = None,
    k: Annotated[int, typer.Option("-k", help="How many tools.")] = 10,
    server: Annotated[str | None, typer.Option(help="Only this server.")] = None,
    skill: Annotated[str | None, typer.Option(help="Only this skill.")] = None,
    timeout: float = 60.0,
) -> None:
    """Connect, index the tools (semantic + lexical) and print the best matches."""
    settings = _load(config)

    async def run() -> list[SearchHit]:
        async with Gateway(settings) as gateway:
            await gateway.wait_settled(timeout)
            with anyio.move_on_after(timeout) as waited:
                await gateway.wait_until(gateway.index_ready, timeout_secs=math.inf)
            if waited.cancelled_caught:
                typer.echo(f"mcp-aggregator: indexing took over {timeout:g}s; results may be partial", err=True)
            try:
                return await gateway.search_tools(text, k, server=server, skill=skill)
            finally:
                await _stop_all(gateway)

    for rank, hit in enumerate(anyio.run(run), start=1):
        typer.echo(f"{rank:>2}. {hit.key:<45} {hit.score:.3f}  {hit.description[:70]}")


@tools_app.command("approve")
def tools_approve(
    server: Annotated[str, typer.Argument(help="The server whose held tools to approve.")],
    tools: Annotated[list[str] | None, typer.Argument(help="Tool names; none approves every held tool.")] = None,
    config: ConfigOption = None,
    url: Annotated[str | None, typer.Option(help="The running gateway, e.g. http://127.0.0.1:8765.")] = None,
) -> None:
    """Approve tools held by definition pinning, on a running gateway (its admin token is read
    from serve.admin_token or the data dir)."""
    settings = _load(config)
    serve = settings.serve
    token = serve.admin_token or read_admin_token(serve.data_dir)
    if token is None:
        where = serve.data_dir / ADMIN_TOKEN_FILE
        raise _fail(f"no admin token in serve.admin_token or {where}; start the gateway first")
    base = url or f"http://{local_name(serve.host)}:{serve.port}"
    api = "/api/v1/aggregator/servers"
    try:
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            listed = http.get(api)
            listed.raise_for_status()
            ids = {s["name"]: s["id"] for s in listed.json()}
            if server not in ids:
                raise _fail(f"no server named {server!r} on {base}")
            answer = http.post(f"{api}/{ids[server]}/tools/approve", json={"tools": tools or []})
    except httpx.HTTPError as exc:
        raise _fail(f"cannot reach the gateway at {base}: {exc}") from None
    if answer.status_code != 200:
        raise _fail(f"{answer.status_code}: {answer.json().get('detail')}")
    approved = answer.json()["approved"]
    typer.echo(f"approved: {', '.join(approved)}" if approved else "nothing was held")


async def _stop_all(gateway: Gateway) -> None:
    for supervisor in list(gateway.supervisors.values()):
        await supervisor.stop()


def main() -> None:
    app()
