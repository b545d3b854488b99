"""``mcp-aggregator tools ...``: list, search, call and approve the tools of a running gateway."""

from __future__ import annotations

import json as jsonlib
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import anyio
import typer

from mcp_aggregator.admin.api_headers import INCOMPLETE_HEADER
from mcp_aggregator.cli.local_commands import search_once
from mcp_aggregator.cli.options import (
    ConfigOption,
    GatewayOption,
    JsonOption,
    TokenOption,
    gateway_client,
    load_config,
)
from mcp_aggregator.cli.output import EXIT_USAGE, fail, print_json, print_table, reported
from mcp_aggregator.errors import AdminClientError, RegistryError

tools_app = typer.Typer(no_args_is_help=True, help="The tools of a running gateway.")


@tools_app.command("list")
def tools_list(
    server: Annotated[str | None, typer.Argument(help="Only this server's tools.")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Every registered tool (or one server's), with its pin state."""
    with reported(), gateway_client(config, gateway, token) as client:
        if server is not None:
            tools = client.get(f"/servers/{client.server(server)['id']}/tools")
        else:
            tools = [t for s in client.get("/servers", include_tools="true") for t in s.get("tools") or []]
    if json:
        print_json(tools)
        return
    rows = [(t["name"], t.get("pin_status") or "", (t.get("description") or "").split("\n")[0][:100]) for t in tools]
    print_table(None, ["tool", "pin", "description"], rows)


@tools_app.command("search")
def tools_search(
    text: Annotated[str, typer.Argument(help="What the tool should do.")],
    k: Annotated[int, typer.Option("-k", help="How many tools.")] = 10,
    server: Annotated[str | None, typer.Option(help="Only this server.")] = None,
    skill: Annotated[str | None, typer.Option(help="Only this skill.")] = None,
    timeout: Annotated[float, typer.Option(help="Seconds a one-off gateway may take to index.")] = 60.0,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Search the running gateway's tools; with --config and no gateway running, a one-off one's."""
    incomplete = None
    try:
        with gateway_client(config, gateway, token, exit_on_error=False) as client:
            hits = client.get("/tools/search", q=text, k=k, server=server, skill=skill)
            incomplete = client.last_headers.get(INCOMPLETE_HEADER)
    except AdminClientError as exc:
        reason = str(exc)
        if config is None or gateway is not None or not reason.startswith(("no gateway answers", "no admin token")):
            fail(reason)
        typer.echo(f"mcp-aggregator: {reason}; searching with a one-off gateway from {config}", err=True)
        hits = search_once(config, text, k, server=server, skill=skill, timeout=timeout)
    if incomplete is not None:
        # On stderr, so that --json output stays the list scripts parse.
        typer.echo(f"mcp-aggregator: {incomplete}", err=True)
    if json:
        print_json(hits)
        return
    for rank, hit in enumerate(hits, start=1):
        typer.echo(f"{rank:>2}. {hit['name']:<45} {hit['score']:.3f}  {hit['description'][:70]}")


def parse_arguments(pairs: list[str] | None, args_json: str | None) -> dict[str, Any]:
    """``--args-json`` then each ``--arg k=v`` (a value is JSON when it parses, else a string)."""
    arguments: dict[str, Any] = {}
    if args_json is not None:
        try:
            loaded = jsonlib.loads(args_json)
        except ValueError as exc:
            fail(f"--args-json: not JSON: {exc}", EXIT_USAGE)
        if not isinstance(loaded, dict):
            fail("--args-json: must be a JSON object", EXIT_USAGE)
        arguments.update(loaded)
    for pair in pairs or []:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            fail(f"--arg {pair!r}: expected NAME=VALUE", EXIT_USAGE)
        try:
            arguments[key] = jsonlib.loads(raw)
        except ValueError:
            arguments[key] = raw
    return arguments


@tools_app.command("call")
def tools_call(
    name: Annotated[str, typer.Argument(help="The tool, as server.tool.")],
    arg: Annotated[list[str] | None, typer.Option("--arg", help="NAME=VALUE (repeat); JSON values allowed.")] = None,
    args_json: Annotated[str | None, typer.Option("--args-json", help="All arguments as a JSON object.")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Call a tool through the gateway's pipeline; a tool error exits with 1."""
    arguments = parse_arguments(arg, args_json)
    with reported(), gateway_client(config, gateway, token) as client:
        result = client.post("/tools/call", {"name": name, "arguments": arguments})
    if json:
        print_json(result)
    else:
        for block in result.get("content") or []:
            typer.echo(block["text"] if block.get("type") == "text" else jsonlib.dumps(block, ensure_ascii=False))
        if not result.get("content") and result.get("structuredContent") is not None:
            print_json(result["structuredContent"])
    if result.get("isError"):
        raise typer.Exit(code=1)


@tools_app.command("approve")
def tools_approve(
    server: Annotated[str, typer.Argument(help="The server whose held tools to approve.")],
    tools: Annotated[list[str] | None, typer.Argument(help="Tool names; none approves every held tool.")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Approve tools held by definition pinning (their new definitions become the trusted ones)."""
    with reported(), gateway_client(config, gateway, token) as client:
        server_id = client.server(server)["id"]
        approved = client.post(f"/servers/{server_id}/tools/approve", {"tools": tools or []})["approved"]
    if json:
        print_json({"approved": approved})
    else:
        typer.echo(f"approved: {', '.join(approved)}" if approved else "nothing was held")


@tools_app.command("forget-uses")
def tools_forget_uses(
    older_than_days: Annotated[
        int | None, typer.Option("--older-than-days", min=1, help="Only the uses older than this; all by default.")
    ] = None,
    config: ConfigOption = None,
    json: JsonOption = False,
) -> None:
    """Delete the searches-then-calls search learns from (search.learn_from_use) from the
    registry's database. A running gateway stops using them within the hour."""
    from mcp_aggregator.registry import Registry
    from mcp_aggregator.search.use_store import UseStore

    settings = load_config(config)
    cutoff = None if older_than_days is None else datetime.now(UTC) - timedelta(days=older_than_days)

    async def run() -> int:
        # The registry brings the database's schema up to date before the store touches it.
        async with Registry(settings.registry), UseStore(settings.registry) as store:
            return await store.purge(cutoff)

    try:
        removed = anyio.run(run)
    except RegistryError as exc:
        fail(str(exc))
    if json:
        print_json({"forgotten": removed})
    else:
        typer.echo(f"forgot {removed} search use(s)")
