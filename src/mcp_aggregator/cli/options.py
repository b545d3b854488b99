"""Options shared by the commands, and the configuration and gateway they point at."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from mcp_aggregator.cli.gateway_client import GatewayClient, GatewayTarget
from mcp_aggregator.cli.output import EXIT_USAGE, fail
from mcp_aggregator.errors import AdminClientError, ConfigError

if TYPE_CHECKING:
    from mcp_aggregator.settings import Settings

ConfigOption = Annotated[
    Path | None, typer.Option("--config", "-c", help="YAML or Claude Desktop JSON configuration file.")
]
GatewayOption = Annotated[
    str | None,
    typer.Option(
        "--gateway",
        "--url",
        help="The running gateway, e.g. http://127.0.0.1:8765 (default: --config's serve address).",
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        help="Admin token (default: $MCP_AGGREGATOR_TOKEN, serve.admin_token, the data dir's token file).",
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the API's JSON, for scripts.")]


def load_config(config: Path | None) -> Settings:
    """The settings of ``config`` (defaults without one); an invalid file exits with code 2."""
    # Imported here: the settings pull in every part's configuration model, which a command
    # that only talks to a running gateway without ``--config`` never needs.
    from mcp_aggregator.settings import Settings, load_settings

    if config is None:
        return Settings()
    try:
        return load_settings(config)
    except ConfigError as exc:
        typer.echo(f"mcp-aggregator: invalid configuration {config}:", err=True)
        typer.echo("\n".join(f"  {line}" for line in str(exc).splitlines()), err=True)
        raise typer.Exit(code=EXIT_USAGE) from None


def gateway_client(
    config: Path | None,
    gateway: str | None,
    token: str | None,
    *,
    exit_on_error: bool = True,
    timeout: float = 60.0,
) -> GatewayClient:
    """A client of the running gateway the options point at.

    No token anywhere, or a ``--gateway`` that is not an http(s) address, exits with 1, or
    raises ``AdminClientError`` without ``exit_on_error``.
    """
    settings = load_config(config) if config is not None else None
    try:
        return GatewayClient(GatewayTarget.resolve(settings, gateway=gateway, token=token), timeout=timeout)
    except AdminClientError as exc:
        if not exit_on_error:
            raise
        fail(str(exc))


def key_values(pairs: list[str] | None, option: str) -> dict[str, str]:
    """``["K=V", ...]`` as a mapping; a pair without ``=`` exits with code 2 naming the option."""
    out: dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"{option} {pair!r}: expected KEY=VALUE", EXIT_USAGE)
        out[key] = value
    return out
