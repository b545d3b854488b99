"""The ``mcp-aggregator`` command: its groups and commands, one module per group."""

from __future__ import annotations

import typer

from mcp_aggregator.cli.activity_commands import audit, profiles
from mcp_aggregator.cli.approvals_commands import approvals_app
from mcp_aggregator.cli.local_commands import check_config, query
from mcp_aggregator.cli.registry_commands import registry_app
from mcp_aggregator.cli.serve_command import serve
from mcp_aggregator.cli.servers_commands import servers_app
from mcp_aggregator.cli.tools_commands import tools_app

app = typer.Typer(no_args_is_help=True, add_completion=False, help="An MCP gateway for many MCP servers.")
app.command()(serve)
app.command("check-config")(check_config)
app.command()(query)
app.add_typer(servers_app, name="servers")
app.add_typer(tools_app, name="tools")
app.add_typer(registry_app, name="registry")
app.add_typer(approvals_app, name="approvals")
app.command()(audit)
app.command()(profiles)


def main() -> None:
    app()
