"""``LazyGroup``: a command group that imports a command's module only when that command runs.

Typer builds a click command from every function's signature, so an eager ``mcp-aggregator``
imports every command module (and what each imports) to run any one of them. Here the
group holds, for each command, where it is defined and the one-line help ``--help`` lists;
the command's module is imported when the command is resolved to run (or to print its own
help). ``tests/cli/test_lazy_group.py`` holds the table to what the modules define.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperCommand, TyperGroup

from mcp_aggregator.cli.plain_values import use_plain_values


@dataclass(frozen=True)
class LazyCommand:
    """Where a command is defined (a Typer app or a command function) and its one-line help."""

    module: str
    attribute: str
    summary: str

    def load(self, name: str) -> Any:
        """The click command Typer builds for the definition, named ``name``, converting its
        plain option values without pydantic (``use_plain_values``)."""
        found = getattr(importlib.import_module(self.module), self.attribute)
        holder = typer.Typer()
        if isinstance(found, typer.Typer):
            holder.add_typer(found, name=name)
        else:
            holder.command(name)(found)
        command = typer.main.get_group(holder).commands[name]
        use_plain_values(command)
        return command


class _Unloaded(TyperCommand):
    """Stands for a lazy command in ``commands``: its name and summary, nothing to run."""

    def __init__(self, name: str, lazy: LazyCommand) -> None:
        super().__init__(name, help=lazy.summary)
        self.lazy = lazy


class LazyGroup(TyperGroup):
    """A ``TyperGroup`` whose ``LAZY`` commands are imported on first resolution.

    Subclasses set ``LAZY`` (name to ``LazyCommand``, in the order ``--help`` lists them).
    While the group prints its help, ``get_command`` answers with stand-ins that carry the
    summary, so listing the commands imports none of them.
    """

    LAZY: ClassVar[Mapping[str, LazyCommand]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        use_plain_values(self)  # before the stand-ins join: they convert nothing
        for name, lazy in self.LAZY.items():
            self.commands.setdefault(name, _Unloaded(name, lazy))
        self._listing = False

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = self.commands.get(cmd_name)
        if isinstance(command, _Unloaded) and not self._listing:
            command = self.commands[cmd_name] = command.lazy.load(cmd_name)
        return command

    def format_help(self, ctx: Any, formatter: Any) -> None:
        with self._summaries_only():
            super().format_help(ctx, formatter)

    @contextmanager
    def _summaries_only(self) -> Iterator[None]:
        self._listing = True
        try:
            yield
        finally:
            self._listing = False
