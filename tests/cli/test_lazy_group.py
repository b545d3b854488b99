"""The lazy command table says what the command modules define, so ``--help`` cannot drift."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import typer
from typer.testing import CliRunner

import mcp_aggregator.cli
from mcp_aggregator.cli import app
from mcp_aggregator.cli.app import GatewayCommands


def _eager_app() -> typer.Typer:
    """The app as it was built before commands loaded lazily: every module imported, each
    command and group registered from the table's homes."""
    eager = typer.Typer(no_args_is_help=True, add_completion=False, help=app.info.help)
    for name, lazy in GatewayCommands.LAZY.items():
        found = getattr(importlib.import_module(lazy.module), lazy.attribute)
        if isinstance(found, typer.Typer):
            eager.add_typer(found, name=name)
        else:
            eager.command(name)(found)
    return eager


def test_each_summary_is_the_first_paragraph_of_its_commands_help() -> None:
    for name, lazy in GatewayCommands.LAZY.items():
        command = lazy.load(name)
        assert lazy.summary == inspect.cleandoc(command.help or "").split("\n\n")[0], name


def test_help_lists_the_same_commands_with_the_same_words_as_the_eager_app() -> None:
    runner = CliRunner()
    lazy = runner.invoke(app, ["--help"], env={"COLUMNS": "100"})
    eager = runner.invoke(_eager_app(), ["--help"], env={"COLUMNS": "100"})
    assert lazy.exit_code == eager.exit_code == 0
    assert "servers" in lazy.output
    assert lazy.output == eager.output


def test_every_command_group_a_cli_module_defines_is_in_the_table() -> None:
    listed = {(lazy.module, lazy.attribute) for lazy in GatewayCommands.LAZY.values()}
    defined = set()
    for module_info in pkgutil.iter_modules(mcp_aggregator.cli.__path__, "mcp_aggregator.cli."):
        module = importlib.import_module(module_info.name)
        defined |= {
            (module.__name__, attribute)
            for attribute, value in vars(module).items()
            if isinstance(value, typer.Typer) and value is not app
        }
    assert defined
    assert defined <= listed


def test_a_group_runs_its_command_and_prints_its_own_help() -> None:
    runner = CliRunner()
    shown = runner.invoke(app, ["servers", "--help"], env={"COLUMNS": "100"})
    assert shown.exit_code == 0
    assert "Every registered server with its live status." in shown.output


def test_a_mistyped_command_is_refused_with_the_nearest_names() -> None:
    result = CliRunner().invoke(app, ["servrs"])
    assert result.exit_code == 2
    assert "No such command 'servrs'. Did you mean 'servers', 'serve'?" in result.output
