"""``mcp-aggregator servers ...``: list, show, add, remove, connect, disconnect, sign in."""

from __future__ import annotations

import time
import webbrowser
from typing import Annotated, Any

import typer

from mcp_aggregator.cli.gateway_client import GatewayClient
from mcp_aggregator.cli.local_commands import report_servers_once
from mcp_aggregator.cli.options import (
    ConfigOption,
    GatewayOption,
    JsonOption,
    TokenOption,
    gateway_client,
    key_values,
)
from mcp_aggregator.cli.output import fail, print_json, print_table, reported, spinner
from mcp_aggregator.errors import AdminClientError

POLL_SECS = 0.2
LIST_STDERR_CHARS = 80
SETTLED = {"CONNECTED", "DEGRADED"}
SIGN_IN_NEEDED = {"sign_in_required", "refresh_failed"}

servers_app = typer.Typer(
    help="The servers of a running gateway (with no command: connect once to the configured servers and report).",
    invoke_without_command=True,
)

WaitOption = Annotated[float, typer.Option("--wait", help="Seconds to wait for CONNECTED.")]


@servers_app.callback()
def servers_report(
    ctx: typer.Context,
    config: ConfigOption = None,
    timeout: Annotated[float, typer.Option(help="Seconds to wait for the servers to settle.")] = 30.0,
    json: JsonOption = False,
) -> None:
    """Without a command: start the configured servers once, report status and tool counts, stop."""
    if ctx.invoked_subcommand is not None:
        return
    if config is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(code=0)
    report_servers_once(config, timeout, as_json=json)


@servers_app.command("list")
def servers_list(
    config: ConfigOption = None, gateway: GatewayOption = None, token: TokenOption = None, json: JsonOption = False
) -> None:
    """Every registered server with its live status."""
    with reported(), gateway_client(config, gateway, token) as client:
        servers = client.get("/servers")
    if json:
        print_json(servers)
        return
    rows = [(s["name"], s["status"], s["transport_type"], s["tool_count"], _origin(s), _error(s)) for s in servers]
    print_table(None, ["name", "status", "transport", "tools", "origin", "error"], rows)


def _error(server: dict[str, Any]) -> str:
    """The error, and the last line the server wrote to stderr, shortened for a table."""
    error = server.get("error_message") or ""
    tail = server.get("stderr_tail") or []
    if error and tail:
        error = f"{error} (stderr: {_short(tail[-1], LIST_STDERR_CHARS)})"
    return error


def _short(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


def _origin(server: dict[str, Any]) -> str:
    origin = server.get("origin")
    return f"{origin['registry']}: {origin['name']}@{origin['version']}" if origin else ""


@servers_app.command("show")
def servers_show(
    name: str,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """One server: configuration (secrets redacted), status, health, last error, tools."""
    with reported(), gateway_client(config, gateway, token) as client:
        detail = client.get(f"/servers/{client.server(name)['id']}")
        tools = client.get(f"/servers/{detail['id']}/tools")
    if json:
        print_json({**detail, "tools": tools})
        return
    fields = [
        "name", "status", "auth_status", "transport_type", "description", "connection_config", "health_check_url",
        "registered_at", "connected_at", "last_health_check", "response_time_ms", "consecutive_failures",
        "last_error", "source",
    ]  # fmt: skip
    shown = [(f, detail[f]) for f in fields if detail.get(f) not in (None, "")]
    if detail.get("origin"):
        shown.append(("origin", _origin(detail)))
    shown += _sandbox_rows(detail.get("sandbox"))
    shown += [
        ("sandbox.hidden", f"{hint['path']} ({hint['given_as']}): add {hint['grant']}")
        for hint in detail.get("sandbox_hints") or []
    ]
    shown += [("stderr", line) for line in detail.get("stderr_tail") or []]
    print_table(None, ["field", "value"], shown)
    print_table(f"{len(tools)} tools", ["tool", "pin", "description"], _tool_rows(tools))


def _sandbox_rows(sandbox: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """``sandbox``: on/off (and whether the running process is), grants, network, limits, and
    the limit that ended the server."""
    if sandbox is None:
        return []
    state = "on" if sandbox.get("enabled") else "off (unsandboxed)"
    if sandbox.get("enabled") and sandbox.get("active") is False:
        state = "on, but this start ran unsandboxed"
    rows: list[tuple[str, Any]] = [("sandbox", state)]
    if sandbox.get("enabled"):
        limits = ", ".join(
            f"{key} {sandbox[key]}" for key in ("memory_mb", "processes", "cpu_secs") if sandbox.get(key) is not None
        )
        rows += [
            ("sandbox.read", ", ".join(sandbox.get("read") or []) or "-"),
            ("sandbox.write", ", ".join(sandbox.get("write") or []) or "-"),
            *([("sandbox.cwd", f"{sandbox['cwd']} (read-only)")] if sandbox.get("cwd") else []),
            ("sandbox.network", sandbox.get("network")),
            ("sandbox.limits", limits or "-"),
        ]
    rows += [("sandbox.warning", text) for text in sandbox.get("warnings") or []]
    if sandbox.get("limit_hit"):
        rows.append(("sandbox.limit_hit", f"ended by its {sandbox['limit_hit']} limit"))
    return rows


def _tool_rows(tools: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(t["name"], t.get("pin_status") or "", (t.get("description") or "")[:100]) for t in tools]


@servers_app.command("add")
def servers_add(
    name: str,
    command: Annotated[str | None, typer.Option("--command", help="A stdio server's command.")] = None,
    arg: Annotated[list[str] | None, typer.Option("--arg", help="An argument of --command (repeat).")] = None,
    env: Annotated[list[str] | None, typer.Option("--env", help="K=V for --command (repeat).")] = None,
    cwd: Annotated[str | None, typer.Option("--cwd", help="Working directory of --command.")] = None,
    read: Annotated[
        list[str] | None, typer.Option("--read", help="A path --command's sandbox may read (repeat).")
    ] = None,
    write: Annotated[
        list[str] | None, typer.Option("--write", help="A path --command's sandbox may write (repeat).")
    ] = None,
    network: Annotated[
        str | None, typer.Option("--network", help="--command's network: outbound, none, host or host:port,...")
    ] = None,
    no_sandbox: Annotated[
        bool, typer.Option("--no-sandbox", help="Run --command unsandboxed (shown as such).")
    ] = False,
    http: Annotated[str | None, typer.Option("--http", help="A streamable HTTP server's URL.")] = None,
    sse: Annotated[str | None, typer.Option("--sse", help="An SSE server's URL.")] = None,
    openapi: Annotated[
        str | None, typer.Option("--openapi", help="A REST API's OpenAPI document (URL or file).")
    ] = None,
    a2a: Annotated[str | None, typer.Option("--a2a", help="An A2A agent's base URL (its card is read there).")] = None,
    base_url: Annotated[
        str | None, typer.Option("--base-url", help="--openapi: where the API lives (default: the document's server).")
    ] = None,
    operation: Annotated[
        list[str] | None,
        typer.Option("--operation", help="--openapi: an operation to offer, operationId or 'METHOD /path' (repeat)."),
    ] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", help="K=V sent to --http/--sse/--openapi/--a2a.")
    ] = None,
    security: Annotated[
        list[str] | None,
        typer.Option("--security", help="SCHEME=SECRET for a security scheme of --openapi/--a2a (repeat)."),
    ] = None,
    description: Annotated[str | None, typer.Option("--description")] = None,
    health_check_url: Annotated[str | None, typer.Option("--health-check-url")] = None,
    no_connect: Annotated[bool, typer.Option("--no-connect", help="Register without connecting.")] = False,
    wait: WaitOption = 60.0,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Register a server (exactly one of --command, --http, --sse, --openapi, --a2a) and wait until it is CONNECTED."""
    kinds = (("--command", command), ("--http", http), ("--sse", sse), ("--openapi", openapi), ("--a2a", a2a))
    chosen = [flag for flag, value in kinds if value]
    if len(chosen) != 1:
        listed = ", ".join(flag for flag, _ in kinds)
        fail(f"give exactly one of {listed}" + (f" (got {', '.join(chosen)})" if chosen else ""), 2)
    if (base_url or operation) and not openapi:
        fail("--base-url and --operation apply to --openapi only", 2)
    if security and not (openapi or a2a):
        fail("--security applies to --openapi and --a2a only", 2)
    connection: dict[str, Any]
    if command:
        connection = {"command": command, "args": arg or [], "env": key_values(env, "--env"), "cwd": cwd}
        sandbox = _sandbox_flags(read, write, network, no_sandbox)
        if sandbox:
            connection["sandbox"] = sandbox
        transport = "STDIO"
    elif openapi:
        connection = {"spec": openapi, "base_url": base_url, "operations": operation or None}
        transport = "OPENAPI"
    elif a2a:
        connection = {"base_url": a2a}
        transport = "A2A"
    else:
        connection = {"url": sse} if sse else {"base_url": http}
        transport = "SSE" if sse else "HTTP"
    if header:
        connection["headers"] = key_values(header, "--header")
    if security:
        connection["security"] = key_values(security, "--security")
    body = {
        "name": name,
        "transport_type": transport,
        "description": description,
        "health_check_url": health_check_url,
        "connection_config": {k: v for k, v in connection.items() if v is not None},
        "auto_connect": not no_connect,
    }
    if not command and (read or write or network or no_sandbox):
        fail("--read, --write, --network and --no-sandbox apply to --command only", 2)
    with reported(), gateway_client(config, gateway, token) as client:
        created = client.post("/servers", body)
        final = created if no_connect else _wait_connected(client, created["id"], name, wait)
    _report_connected(final, json)


def _sandbox_flags(
    read: list[str] | None, write: list[str] | None, network: str | None, no_sandbox: bool
) -> dict[str, Any]:
    sandbox: dict[str, Any] = {}
    if no_sandbox:
        sandbox["enabled"] = False
    if read:
        sandbox["read"] = read
    if write:
        sandbox["write"] = write
    if network:
        sandbox["network"] = network if ":" not in network else [item.strip() for item in network.split(",")]
    return sandbox


@servers_app.command("remove")
def servers_remove(
    name: str,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Remove a server and its tools (a live session is closed first)."""
    with reported(), gateway_client(config, gateway, token) as client:
        server_id = client.server(name)["id"]
        client.delete(f"/servers/{server_id}")
    if json:
        print_json({"removed": name, "id": server_id})
    else:
        typer.echo(f"removed {name}")


@servers_app.command("connect")
def servers_connect(
    name: str,
    wait: WaitOption = 60.0,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Connect a server and wait until it is CONNECTED (or say why not)."""
    with reported(), gateway_client(config, gateway, token) as client:
        server_id = client.server(name)["id"]
        client.post(f"/servers/{server_id}/connect")
        final = _wait_connected(client, server_id, name, wait)
    _report_connected(final, json)


@servers_app.command("disconnect")
def servers_disconnect(
    name: str,
    force: Annotated[bool, typer.Option("--force", help="Cancel running calls instead of draining them.")] = False,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Disconnect a server after its running calls finish (or cancel them with --force)."""
    with reported(), gateway_client(config, gateway, token) as client:
        answer = client.post(f"/servers/{client.server(name)['id']}/disconnect", {"force": force})
    if json:
        print_json(answer)
    else:
        typer.echo(f"{name}: {answer['status']} ({answer['pending_requests']} running calls waited for)")


@servers_app.command("login")
def servers_login(
    name: str,
    no_browser: Annotated[bool, typer.Option("--no-browser", help="Print the link only.")] = False,
    wait: Annotated[float, typer.Option("--wait", help="Seconds to wait for the sign-in; 0: do not wait.")] = 300.0,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Sign the gateway in to an upstream that wants OAuth: open the authorization link, wait for it."""
    with reported(), gateway_client(config, gateway, token) as client:
        server_id = client.server(name)["id"]
        url = client.post(f"/servers/{server_id}/oauth/start")["authorization_url"]
        if json:
            print_json({"authorization_url": url})
        else:
            typer.echo(f"Open this link to sign in to {name}:\n  {url}")
        if not no_browser:
            webbrowser.open(url)
        if wait > 0:
            _wait_signed_in(client, server_id, name, wait)
            typer.echo(f"{name}: signed in", err=json)


def _wait_connected(client: GatewayClient, server_id: str, name: str, wait: float) -> dict[str, Any]:
    """The server's detail once CONNECTED; an ``AdminClientError`` saying why when it will not be."""
    deadline = time.monotonic() + wait
    with spinner(f"connecting {name}..."):
        while True:
            detail: dict[str, Any] = client.get(f"/servers/{server_id}")
            status = detail["status"]
            if status in SETTLED:
                return detail
            why = detail.get("last_error") or detail.get("error_message")
            if why and detail.get("stderr_tail"):
                why += "\n  its stderr ended with:\n" + "\n".join(f"    {line}" for line in detail["stderr_tail"][-5:])
            if detail.get("auth_status") in SIGN_IN_NEEDED:
                raise AdminClientError(f"{name} wants a sign-in: run `mcp-aggregator servers login {name}`")
            if status in ("ERROR", "DISCONNECTED") and why:
                raise AdminClientError(f"{name} did not connect: {status}: {why}")
            if time.monotonic() >= deadline:
                raise AdminClientError(f"{name} is still {status} after {wait:g} s" + (f": {why}" if why else ""))
            time.sleep(POLL_SECS)


def _wait_signed_in(client: GatewayClient, server_id: str, name: str, wait: float) -> None:
    deadline = time.monotonic() + wait
    with spinner(f"waiting for the sign-in to {name}..."):
        while client.get(f"/servers/{server_id}").get("auth_status") != "signed_in":
            if time.monotonic() >= deadline:
                raise AdminClientError(f"{name}: no sign-in within {wait:g} s")
            time.sleep(POLL_SECS)


def _report_connected(detail: dict[str, Any], json: bool) -> None:
    if json:
        print_json(detail)
    else:
        typer.echo(f"{detail['name']}: {detail['status']}, {detail['tool_count']} tools")
