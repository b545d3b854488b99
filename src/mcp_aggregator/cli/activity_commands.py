"""``mcp-aggregator audit`` and ``profiles``: what happened, and who sees what."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from mcp_aggregator.cli.options import ConfigOption, GatewayOption, JsonOption, TokenOption, gateway_client
from mcp_aggregator.cli.output import print_json, print_table, reported


def audit(
    client: Annotated[str | None, typer.Option("--client", help="Only this client's calls.")] = None,
    profile: Annotated[str | None, typer.Option("--profile", help="Only calls through this profile.")] = None,
    tool: Annotated[str | None, typer.Option("--tool", help="Only this tool.")] = None,
    server: Annotated[str | None, typer.Option("--server", help="Only this server.")] = None,
    outcome: Annotated[str | None, typer.Option("--outcome", help="ok, error, denied...")] = None,
    request_id: Annotated[
        str | None, typer.Option("--request-id", help="Only the calls of this HTTP request (its X-Request-Id).")
    ] = None,
    since: Annotated[str | None, typer.Option("--since", help="ISO time, e.g. 2026-11-25T10:00:00Z.")] = None,
    limit: Annotated[int, typer.Option("--limit", "-n", help="How many records.", min=1, max=1000)] = 50,
    before: Annotated[str | None, typer.Option("--before", help="Page from this record id (older).")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """The audit trail of calls, newest first."""
    filters = {
        "client": client,
        "profile": profile,
        "tool": tool,
        "server": server,
        "outcome": outcome,
        "request_id": request_id,
    }
    with reported(), gateway_client(config, gateway, token) as api:
        page = api.get("/audit", **filters, since=since, limit=limit, before=before)
    if json:
        print_json(page)
        return
    columns = ["time", "client", "profile", "method", "server", "tool", "outcome", "ms", "error", "request id"]
    print_table(None, columns, [_audit_row(item) for item in page.get("items", [])])
    if page.get("next_before") is not None:
        typer.echo(f"older: --before {page['next_before']}")


def _audit_row(item: dict[str, Any]) -> tuple[Any, ...]:
    keys = ("time", "client", "profile", "method", "server", "tool", "outcome", "duration_ms", "error", "request_id")
    return tuple(item.get(key) for key in keys)


def profiles(
    config: ConfigOption = None, gateway: GatewayOption = None, token: TokenOption = None, json: JsonOption = False
) -> None:
    """The profiles the gateway serves, and the named clients that reach them."""
    with reported(), gateway_client(config, gateway, token) as api:
        listed = api.get("/profiles")
        clients = api.get("/clients")
    if json:
        print_json({"profiles": listed, "clients": clients})
        return
    print_table(
        "profiles",
        ["name", "endpoint", "exposure", "servers", "tools"],
        [(p["name"], p.get("endpoint"), p.get("exposure"), _selection(p.get("servers")), _selection(p.get("tools")))
         for p in listed],
    )  # fmt: skip
    print_table("clients", ["name", "profiles"], [(c["name"], ", ".join(c.get("profiles") or [])) for c in clients])


def _selection(value: Any) -> str:
    """A profile's selection: no list or an empty one selects everything."""
    if not value:
        return "all"
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
