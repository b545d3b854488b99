"""The ``mcp-aggregator`` command: its groups and commands, one module per group.

The commands are listed here, not imported: a command's module loads only when it runs
(``LazyGroup``), so ``servers list`` does not pay for ``serve`` or ``registry``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

import typer

from mcp_aggregator.cli.lazy_group import LazyCommand, LazyGroup

_CLI = "mcp_aggregator.cli."


class GatewayCommands(LazyGroup):
    """Every command, in the order ``--help`` lists them (Typer's: commands, then groups)."""

    LAZY: ClassVar[Mapping[str, LazyCommand]] = {
        "serve": LazyCommand(_CLI + "serve_command", "serve", "Run the gateway."),
        "check-config": LazyCommand(
            _CLI + "local_commands",
            "check_config",
            "Validate a configuration file and summarise it; warn of paths a server is given that\n"
            "its sandbox would hide, of granted paths that do not exist, and of an openapi or a2a\n"
            "server's operations or skills whose security scheme it gives no secret.",
        ),
        "query": LazyCommand(
            _CLI + "local_commands",
            "query",
            "Run the aggregator query against the configured servers and print the ranked answers.",
        ),
        "audit": LazyCommand(_CLI + "activity_commands", "audit", "The audit trail of calls, newest first."),
        "profiles": LazyCommand(
            _CLI + "activity_commands",
            "profiles",
            "The profiles the gateway serves, and the named clients that reach them.",
        ),
        "servers": LazyCommand(
            _CLI + "servers_commands",
            "servers_app",
            "The servers of a running gateway (with no command: connect once to the configured servers and report).",
        ),
        "tools": LazyCommand(_CLI + "tools_commands", "tools_app", "The tools of a running gateway."),
        "registry": LazyCommand(
            _CLI + "registry_commands",
            "registry_app",
            "Servers from MCP Registries (registries: in the configuration).",
        ),
        "approvals": LazyCommand(
            _CLI + "approvals_commands", "approvals_app", "Tool calls held for a person's approval."
        ),
    }


def _gateway_cli() -> None:
    """Typer makes a group only of an app with a callback or several registered commands;
    this app registers none (``GatewayCommands`` holds them)."""


app = typer.Typer(
    cls=GatewayCommands,
    callback=_gateway_cli,
    no_args_is_help=True,
    add_completion=False,
    help="An MCP gateway for many MCP servers.",
)


def main() -> None:
    app()
