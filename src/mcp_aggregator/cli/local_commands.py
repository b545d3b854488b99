"""Commands that start a one-off gateway of their own for one answer, then stop it."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from mcp_aggregator.cli.options import ConfigOption, load_config
from mcp_aggregator.cli.output import EXIT_USAGE, fail
from mcp_aggregator.errors import AggregationFailedError, InvalidQueryError, QueryError
from mcp_aggregator.gateway import Gateway


def check_config(config: Annotated[Path, typer.Argument(help="The file to validate.")]) -> None:
    """Validate a configuration file and summarise it."""
    settings = load_config(config)
    typer.echo(f"{config}: OK, {len(settings.servers)} server(s)")
    for server in settings.servers:
        target = server.command or server.url or server.base_url
        typer.echo(f"  {server.name:<20} {server.transport.value:<6} {target}")


def report_servers_once(config: Path | None, timeout: float) -> None:
    """Connect to every configured server once and print status and tool counts."""
    settings = load_config(config)

    async def run() -> None:
        async with Gateway(settings) as gateway:
            await gateway.wait_settled(timeout)
            for name, sup in sorted(gateway.supervisors.items()):
                count = len(sup.connection.tools) if sup.connection else 0
                detail = f"  ({sup.error_message})" if sup.error_message else ""
                typer.echo(f"{name:<20} {sup.status.value:<12} {count:>4} tools{detail}")
            await _stop_all(gateway)

    anyio.run(run)


def query(
    text: Annotated[str, typer.Argument(help="The question to ask every selected server.")],
    config: ConfigOption = None,
    max_results: Annotated[int | None, typer.Option("--max-results", "-n", help="10-100.")] = None,
    server: Annotated[list[str] | None, typer.Option("--server", "-s", help="Only these servers.")] = None,
    timeout: float = 30.0,
) -> None:
    """Run the aggregator query against the configured servers and print the JSON answer."""
    settings = load_config(config)
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
        fail(f"invalid query: {answer.field}: {answer.reason}", EXIT_USAGE)
    if isinstance(answer, AggregationFailedError):
        fail(f"{answer}: " + "; ".join(answer.errors), EXIT_USAGE)
    assert not isinstance(answer, QueryError)
    typer.echo(json.dumps(answer, indent=2, ensure_ascii=False))


def search_once(
    config: Path, text: str, k: int, *, server: str | None, skill: str | None, timeout: float
) -> list[dict[str, Any]]:
    """Connect the configured servers, index their tools and search them; hits as the API gives them."""
    settings = load_config(config)

    async def run() -> list[dict[str, Any]]:
        async with Gateway(settings) as gateway:
            await gateway.wait_settled(timeout)
            with anyio.move_on_after(timeout) as waited:
                await gateway.wait_until(gateway.index_ready, timeout_secs=math.inf)
            if waited.cancelled_caught:
                typer.echo(f"mcp-aggregator: indexing took over {timeout:g}s; results may be partial", err=True)
            try:
                hits = await gateway.search_tools(text, k, server=server, skill=skill)
            finally:
                await _stop_all(gateway)
        return [{"name": h.key, "server": h.server, "score": h.score, "description": h.description} for h in hits]

    return anyio.run(run)


async def _stop_all(gateway: Gateway) -> None:
    for supervisor in list(gateway.supervisors.values()):
        await supervisor.stop()
