"""The ``mcp-aggregator`` command line."""

from __future__ import annotations

import logging
import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import anyio
import typer

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.runner import serve_http, serve_stdio
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


@app.command()
def serve(
    config: ConfigOption = None,
    transport: Annotated[TransportChoice, typer.Option(help="How MCP clients connect.")] = TransportChoice.HTTP,
    host: Annotated[str | None, typer.Option(help="Bind address (HTTP).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (HTTP); 0 picks a free one.")] = None,
    exposure: Annotated[Exposure | None, typer.Option(help="What clients see as tools.")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v")] = False,
) -> None:
    """Run the gateway."""
    settings = _load(config)
    updates = {k: v for k, v in {"host": host, "port": port, "exposure": exposure}.items() if v is not None}
    if updates:
        settings = settings.model_copy(update={"serve": settings.serve.model_copy(update=updates)})
    _setup_logging(verbose)
    try:
        if transport is TransportChoice.STDIO:
            anyio.run(serve_stdio, settings)
        else:
            anyio.run(serve_http, settings)
    except KeyboardInterrupt:
        pass


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
            for sup in list(gateway.supervisors.values()):
                await sup.stop()

    anyio.run(run)


def main() -> None:
    app()
