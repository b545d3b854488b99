"""``mcp-aggregator approvals``: the calls held for a person, and an admin's decision on one."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from mcp_aggregator.cli.options import ConfigOption, GatewayOption, JsonOption, TokenOption, gateway_client
from mcp_aggregator.cli.output import print_json, print_table, reported

approvals_app = typer.Typer(no_args_is_help=True, help="Tool calls held for a person's approval.")

_VIA = {"X-Approval-Via": "cli"}


@approvals_app.command("list")
def list_approvals(
    status: Annotated[
        str, typer.Option("--status", help="pending, approved, denied, expired, cancelled or all.")
    ] = "pending",
    server: Annotated[str | None, typer.Option("--server", help="Only this server's calls.")] = None,
    tool: Annotated[str | None, typer.Option("--tool", help="Only this tool (its name at the server).")] = None,
    client: Annotated[str | None, typer.Option("--client", help="Only this client's calls.")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """The held calls, newest first (pending ones unless --status says otherwise)."""
    with reported(), gateway_client(config, gateway, token) as api:
        listed = api.get("/approvals", status=status, server=server, tool=tool, client=client)
    if json:
        print_json(listed)
        return
    columns = ["id", "status", "rule", "client", "server", "tool", "arguments", "expires", "decided by", "reason"]
    print_table(None, columns, [_row(item) for item in listed.get("approvals", [])])


def _row(item: dict[str, Any]) -> tuple[Any, ...]:
    keys = ("id", "status", "rule", "client", "server", "tool", "arguments", "expires_at", "decided_by", "reason")
    return tuple(item.get(key) for key in keys)


@approvals_app.command("approve")
def approve(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The held call's id (approvals list).")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why (recorded in the audit).")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Let one held call run (once)."""
    _decide(approval_id, "approve", reason, config, gateway, token, json)


@approvals_app.command("deny")
def deny(
    approval_id: Annotated[str, typer.Argument(metavar="ID", help="The held call's id (approvals list).")],
    reason: Annotated[str | None, typer.Option("--reason", help="Why: the calling client is told.")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Refuse one held call: it never reaches its server, and its client is told why."""
    _decide(approval_id, "deny", reason, config, gateway, token, json)


def _decide(
    approval_id: str,
    decision: str,
    reason: str | None,
    config: Path | None,
    gateway: str | None,
    token: str | None,
    json: bool,
) -> None:
    with reported(), gateway_client(config, gateway, token) as api:
        decided = api.request(
            "POST", f"/approvals/{approval_id}", body={"decision": decision, "reason": reason}, headers=_VIA
        )
    if json:
        print_json(decided)
        return
    typer.echo(f"{decided['id']}: {decided['status']} ({decided['server']}.{decided['tool']})")
