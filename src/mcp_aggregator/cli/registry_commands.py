"""``mcp-aggregator registry ...``: search the MCP Registries, install and update from them."""

from __future__ import annotations

import json as jsonlib
import sys
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from mcp_aggregator.cli.gateway_client import GatewayClient
from mcp_aggregator.cli.options import ConfigOption, GatewayOption, JsonOption, TokenOption, gateway_client, key_values
from mcp_aggregator.cli.output import EXIT_USAGE, fail, print_json, print_table, reported, spinner
from mcp_aggregator.errors import AdminClientError

INSTALL_SLACK_SECS = 600.0
"""What an install may take beyond the wait for CONNECTED (a virtual environment, pip)."""

registry_app = typer.Typer(help="Servers from MCP Registries (registries: in the configuration).", no_args_is_help=True)

WaitOption = Annotated[float, typer.Option("--wait", help="Seconds to wait for CONNECTED.")]
EnvOption = Annotated[list[str] | None, typer.Option("--env", help="K=V for an environment variable (repeat).")]
HeaderOption = Annotated[list[str] | None, typer.Option("--header", help="K=V for a remote's header (repeat).")]
ArgOption = Annotated[list[str] | None, typer.Option("--arg", help="K=V for an argument or variable (repeat).")]
AllowRuntimeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--allow-runtime-arg",
        help="An OCI runtimeArgument that widens the container's rights, allowed as its refusal names it (repeat).",
    ),
]
EnvFileOption = Annotated[
    Path | None,
    typer.Option("--env-file", help="KEY=VALUE lines of environment variables (kept out of shell history)."),
]

GIVE_HINT = (
    "give them with --env/--header/--arg K=V or --env-file PATH, or run on a terminal (without --json) to be asked"
)


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
        (e["name"], e["version"], _status(e["status"]), _runs(e), (e.get("description") or "")[:80])
        for e in answer["servers"]
    ]
    print_table(None, ["name", "version", "status", "runs", "description"], rows)


def _runs(entry: dict[str, Any]) -> str:
    """How it runs, with a container's runtimeArguments (they are its sandbox)."""
    runs = "; ".join(entry["runs"])
    extra = entry.get("runtime_arguments") or []
    return f"{runs} (runtimeArguments: {' '.join(extra)})" if extra else runs


def _status(status: str) -> str:
    return status.upper() if status != "active" else status


@registry_app.command("add")
def registry_add(
    entry: Annotated[str | None, typer.Argument(help="NAME or NAME@VERSION (namespace/name).")] = None,
    as_name: Annotated[str | None, typer.Option("--as", help="The local server name.")] = None,
    env: EnvOption = None,
    env_file: EnvFileOption = None,
    header: HeaderOption = None,
    arg: ArgOption = None,
    grant_read: Annotated[list[str] | None, typer.Option("--grant-read", help="A path it may read.")] = None,
    grant_write: Annotated[list[str] | None, typer.Option("--grant-write", help="A path it may write.")] = None,
    network: Annotated[
        str | None, typer.Option("--network", help="outbound | none | host | host:port[,host:port...]")
    ] = None,
    allow_runtime_arg: AllowRuntimeOption = None,
    file: Annotated[Path | None, typer.Option("--file", help="Install this server.json instead.")] = None,
    registry: Annotated[str | None, typer.Option("--registry", help="Install from this registry.")] = None,
    wait: WaitOption = 60.0,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Install a server from a registry (or a server.json file), connect it, wait until CONNECTED.

    On a terminal (without --json), required inputs not given are asked for (secrets hidden)."""
    if (entry is None) == (file is None):
        fail("give exactly one of NAME[@VERSION] or --file server.json", EXIT_USAGE)
    body: dict[str, Any] = {
        "server_name": as_name,
        **_given(env, env_file, header, arg),
        "grant_read": grant_read or [],
        "grant_write": grant_write or [],
        "network": _network(network),
        "allow_runtime_args": allow_runtime_arg or [],
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
    with reported(), client:
        result = _post_asking(client, "/registry/install", body, f"installing {entry or file}...", ask=_can_ask(json))
    _report(result, json)


@registry_app.command("update")
def registry_update(
    name: Annotated[str, typer.Argument(help="The local server name.")],
    version: Annotated[str | None, typer.Option("--version", help="Default: the latest.")] = None,
    env: EnvOption = None,
    env_file: EnvFileOption = None,
    header: HeaderOption = None,
    arg: ArgOption = None,
    allow_runtime_arg: AllowRuntimeOption = None,
    wait: WaitOption = 60.0,
    config: ConfigOption = None,
    gateway: GatewayOption = None,
    token: TokenOption = None,
    json: JsonOption = False,
) -> None:
    """Move an installed server to a newer version of its registry entry (its inputs kept;
    those given are added). On a terminal, what the new version asks for anew is asked for."""
    body = {
        "server_name": name,
        "version": version,
        "wait_secs": wait,
        "allow_runtime_args": allow_runtime_arg or [],
        **_given(env, env_file, header, arg),
    }
    client = gateway_client(config, gateway, token, timeout=wait + INSTALL_SLACK_SECS)
    with reported(), client:
        result = _post_asking(client, "/registry/update", body, f"updating {name}...", ask=_can_ask(json))
    _report(result, json)


def _given(
    env: list[str] | None, env_file: Path | None, header: list[str] | None, arg: list[str] | None
) -> dict[str, Any]:
    """The request's inputs; ``--env`` wins over the same name in ``--env-file``."""
    from_file = read_env_file(env_file) if env_file is not None else {}
    return {
        "env": {**from_file, **key_values(env, "--env")},
        "headers": key_values(header, "--header"),
        "arguments": key_values(arg, "--arg"),
    }


def read_env_file(path: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines (blank lines and ``#`` comments skipped, one pair of quotes around a
    value removed); a missing file or a bad line exits with code 2 naming it."""
    try:
        text = path.read_text()
    except OSError as exc:
        fail(f"--env-file {path}: {exc.strerror or exc}", EXIT_USAGE)
    except UnicodeDecodeError:
        fail(f"--env-file {path}: not a text file", EXIT_USAGE)
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        key, sep, value = stripped.removeprefix("export ").partition("=")
        key = key.strip()
        if not sep or not key or not key.replace("_", "a").isalnum() or key[0].isdigit():
            # The line is not quoted back: it may hold a secret.
            fail(f"--env-file {path}: line {number}: expected KEY=VALUE (KEY of letters, digits and _)", EXIT_USAGE)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[key] = value
    return out


def _can_ask(json: bool) -> bool:
    return not json and sys.stdin.isatty()


def _post_asking(client: GatewayClient, path: str, body: dict[str, Any], doing: str, *, ask: bool) -> Any:
    """POST ``body``; when the gateway answers that required inputs are missing (and nothing
    else is wrong), ask for them on the terminal and post once more, or fail saying how to give them."""
    try:
        with spinner(doing):
            return client.post(path, body)
    except AdminClientError as exc:
        missing = _only_missing(exc.detail)
        if missing is None:
            raise
        if not ask:
            fail(f"{exc}; {GIVE_HINT}")
    for item in missing:
        body[item["field"]][item["name"]] = _prompt(item)
    with spinner(doing):
        return client.post(path, body)


def _only_missing(detail: Any) -> list[dict[str, Any]] | None:
    """The missing inputs of a 422 whose problems are all missing inputs, else None."""
    if not isinstance(detail, dict) or not detail.get("missing"):
        return None
    missing: list[dict[str, Any]] = detail["missing"]
    return missing if len(missing) == len(detail.get("problems", ())) else None


def _prompt(item: dict[str, Any]) -> str:
    kind = {"env": "environment variable", "headers": "header", "arguments": "argument"}[item["field"]]
    about = f": {item['description']}" if item.get("description") else ""
    secret = ", secret, not shown" if item["secret"] else ""
    choices = click.Choice(item["choices"]) if item.get("choices") else None
    text = f"{item['name']} ({kind}{secret}){about}"
    value: str = click.prompt(text, hide_input=bool(item["secret"]), type=choices, err=True)
    return value


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
