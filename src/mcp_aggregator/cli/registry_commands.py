"""``mcp-aggregator registry ...``: search the MCP Registries, install and update from them."""

from __future__ import annotations

import json as jsonlib
from pathlib import Path
from typing import Annotated, Any

import typer

from mcp_aggregator.cli.options import ConfigOption, GatewayOption, JsonOption, TokenOption, gateway_client, key_values
from mcp_aggregator.cli.output import EXIT_USAGE, fail, print_json, print_table, reported, spinner

INSTALL_SLACK_SECS = 600.0
"""What an install may take beyond the wait for CONNECTED (a virtual environment, pip)."""

registry_app = typer.Typer(help="Servers from MCP Registries (registries: in the configuration).", no_args_is_help=True)

WaitOption = Annotated[float, typer.Option("--wait", help="Seconds to wait for CONNECTED.")]


@registry_app.command("search")
def registry_search(
    text: Annotated[str, typer.Argument(help="Words of the name or description (empty: everything).")] = "",
    registry: Annotated[str | None, typer.Option("--registry", help="Search only this registry.")] = None,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Entries of the registries (latest versions), from the gateway's stored copy, refreshed when stale."""
    params: dict[str, Any] = {"q": text, **({"registry": registry} if registry else {})}
    with reported(), gateway_client(config, gateway, token) as client:
        answer = client.get("/registry/servers", **params)
    for problem in answer["problems"]:
        typer.echo(f"warning: {problem}", err=True)
    if json:
        print_json(answer["servers"])
        return
    rows = [
        (e["name"], e["version"], _status(e["status"]), "; ".join(e["runs"]), (e.get("description") or "")[:80])
        for e in answer["servers"]
    ]
    print_table(None, ["name", "version", "status", "runs", "description"], rows)


def _status(status: str) -> str:
    return status.upper() if status != "active" else status


@registry_app.command("add")
def registry_add(
    entry: Annotated[str | None, typer.Argument(help="NAME or NAME@VERSION (namespace/name).")] = None,
    as_name: Annotated[str | None, typer.Option("--as", help="The local server name.")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", help="K=V for an environment variable (repeat).")] = None,
    header: Annotated[list[str] | None, typer.Option("--header", help="K=V for a remote's header (repeat).")] = None,
    arg: Annotated[list[str] | None, typer.Option("--arg", help="K=V for an argument or variable (repeat).")] = None,
    grant_read: Annotated[list[str] | None, typer.Option("--grant-read", help="A path it may read.")] = None,
    grant_write: Annotated[list[str] | None, typer.Option("--grant-write", help="A path it may write.")] = None,
    network: Annotated[
        str | None, typer.Option("--network", help="outbound | none | host | host:port[,host:port...]")
    ] = None,
    file: Annotated[Path | None, typer.Option("--file", help="Install this server.json instead.")] = None,
    registry: Annotated[str | None, typer.Option("--registry", help="Install from this registry.")] = None,
    wait: WaitOption = 60.0,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Install a server from a registry (or a server.json file), connect it, wait until CONNECTED."""
    if (entry is None) == (file is None):
        fail("give exactly one of NAME[@VERSION] or --file server.json", EXIT_USAGE)
    body: dict[str, Any] = {
        "server_name": as_name,
        "env": key_values(env, "--env"),
        "headers": key_values(header, "--header"),
        "arguments": key_values(arg, "--arg"),
        "grant_read": grant_read or [],
        "grant_write": grant_write or [],
        "network": _network(network),
        "registry": registry,
        "wait_secs": wait,
    }
    if file is not None:
        body["server_json"] = _read_server_json(file)
    else:
        assert entry is not None
        name, _, version = entry.partition("@")
        body.update(name=name, version=version or None)
    client = gateway_client(config, gateway, token, timeout=wait + INSTALL_SLACK_SECS)
    with reported(), client, spinner(f"installing {entry or file}..."):
        result = client.post("/registry/install", body)
    _report(result, json)


@registry_app.command("update")
def registry_update(
    name: Annotated[str, typer.Argument(help="The local server name.")],
    version: Annotated[str | None, typer.Option("--version", help="Default: the latest.")] = None,
    wait: WaitOption = 60.0,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Move an installed server to a newer version of its registry entry (its inputs kept)."""
    body = {"server_name": name, "version": version, "wait_secs": wait}
    client = gateway_client(config, gateway, token, timeout=wait + INSTALL_SLACK_SECS)
    with reported(), client, spinner(f"updating {name}..."):
        result = client.post("/registry/update", body)
    _report(result, json)


def _network(value: str | None) -> str | list[str] | None:
    if value is None or value.strip().lower() in ("outbound", "none", "host"):
        return value
    return [part.strip() for part in value.split(",") if part.strip()]


def _read_server_json(path: Path) -> Any:
    try:
        return jsonlib.loads(path.read_text())
    except OSError as exc:
        fail(f"--file {path}: {exc.strerror or exc}", EXIT_USAGE)
    except ValueError as exc:
        fail(f"--file {path}: not JSON: {exc}", EXIT_USAGE)


def _report(result: dict[str, Any], json: bool) -> None:
    for warning in result["warnings"]:
        typer.echo(f"warning: {warning}", err=True)
    if json:
        print_json(result)
    else:
        server, origin = result["server"], result["origin"]
        since = f" (was {result['previous_version']})" if result.get("previous_version") else ""
        typer.echo(
            f"{server['name']}: {result['status']}, {server['tool_count']} tools "
            f"({origin['name']}@{origin['version']} from {origin['registry']}){since}"
        )
    if not result["connected"]:
        fail(f"{result['server']['name']} did not connect: {result['error']}")
