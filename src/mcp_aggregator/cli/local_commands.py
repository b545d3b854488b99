"""Commands that start a one-off gateway of their own for one answer, then stop it."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import anyio
import typer

from mcp_aggregator.cli.options import ConfigOption, JsonOption, load_config
from mcp_aggregator.cli.output import EXIT_USAGE, fail, print_json, print_table
from mcp_aggregator.errors import AggregationFailedError, InvalidQueryError, QueryError

if TYPE_CHECKING:
    from mcp_aggregator.gateway import Gateway


def check_config(
    file: Annotated[Path | None, typer.Argument(help="The file to validate (or --config).")] = None,
    config: ConfigOption = None,
    json: JsonOption = False,
) -> None:
    """Validate a configuration file and summarise it; warn of paths a server is given that
    its sandbox would hide, of granted paths that do not exist, and of an openapi or a2a
    server's operations or skills whose security scheme it gives no secret."""
    if (file is None) == (config is None):
        fail("give the file to validate, as an argument or with --config (one of them)", EXIT_USAGE)
    path = file or config
    assert path is not None
    settings = load_config(path)
    servers = [
        {"name": s.name, "transport": s.transport.value, "target": s.command or s.url or s.base_url}
        for s in settings.servers
    ]
    from mcp_aggregator.bridges.security_check import security_warnings
    from mcp_aggregator.upstreams.sandbox_preflight import sandbox_warnings

    warnings = sandbox_warnings(settings) + anyio.run(security_warnings, settings)
    if json:
        print_json({"config": str(path), "valid": True, "servers": servers, "warnings": warnings})
        return
    typer.echo(f"{path}: OK, {len(servers)} server(s)")
    for server in servers:
        typer.echo(f"  {server['name']:<20} {server['transport']:<6} {server['target']}")
    for warning in warnings:
        typer.echo(f"warning: {warning}")


def report_servers_once(config: Path | None, timeout: float, *, as_json: bool = False) -> None:
    """Connect to every configured server once and print status and tool counts."""
    settings = load_config(config)

    from mcp_aggregator.gateway import Gateway

    async def run() -> list[dict[str, Any]]:
        async with Gateway(settings) as gateway:
            await gateway.wait_settled(timeout)
            report = [
                {
                    "name": name,
                    "status": sup.status.value,
                    "tool_count": len(sup.connection.tools) if sup.connection else 0,
                    "error_message": sup.error_message,
                }
                for name, sup in sorted(gateway.supervisors.items())
            ]
            await _stop_all(gateway)
        return report

    report = anyio.run(run)
    if as_json:
        print_json(report)
        return
    for row in report:
        detail = f"  ({row['error_message']})" if row["error_message"] else ""
        typer.echo(f"{row['name']:<20} {row['status']:<12} {row['tool_count']:>4} tools{detail}")


def query(
    text: Annotated[str, typer.Argument(help="The question to ask every selected server.")],
    config: ConfigOption = None,
    max_results: Annotated[int | None, typer.Option("--max-results", "-n", help="10-100.")] = None,
    server: Annotated[list[str] | None, typer.Option("--server", "-s", help="Only these servers.")] = None,
    timeout: float = 30.0,
    json: JsonOption = False,
) -> None:
    """Run the aggregator query against the configured servers and print the ranked answers."""
    settings = load_config(config)
    arguments: dict[str, object] = {"query": text}
    if max_results is not None:
        arguments["maxResults"] = max_results
    if server:
        arguments["servers"] = server

    from mcp_aggregator.gateway import Gateway

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
    if json:
        print_json(answer)
        return
    _print_answer(answer)


def _print_answer(answer: dict[str, Any]) -> None:
    """The ranked results as a table, then what was asked of whom."""
    rows = [
        (r["rank"], r["server"], f"{r['relevanceScore']:.3f}", " ".join(str(r["content"]).split())[:100])
        for r in answer["results"]
    ]
    print_table(None, ["rank", "server", "score", "content"], rows)
    meta = answer["metadata"]
    typer.echo(
        f"{meta['resultsReturned']} of {meta['totalResultsDedup']} results "
        f"({meta['totalResultsRaw']} before dedup) from {meta['serversSucceeded']} of {meta['serversQueried']} servers"
    )


def search_once(
    config: Path, text: str, k: int, *, server: str | None, skill: str | None, timeout: float
) -> list[dict[str, Any]]:
    """Connect the configured servers, index their tools and search them; hits as the API gives them."""
    settings = load_config(config)

    from mcp_aggregator.gateway import Gateway

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
