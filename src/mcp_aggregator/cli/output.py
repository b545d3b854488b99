"""How the CLI prints: tables and spinners for people (rich), JSON for scripts, errors on stderr."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import typer

from mcp_aggregator.errors import AdminClientError

if TYPE_CHECKING:
    from rich.console import Console

EXIT_FAILED = 1
EXIT_USAGE = 2


def console() -> Console:
    """A console on the current stdout; wide when it is not a terminal, so pipes get whole lines."""
    # rich is imported where a table or a spinner is drawn: a command that prints JSON or an
    # error never needs it, and importing it is a sixth of such a command's run.
    from rich.console import Console

    width = None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "200"))
    return Console(file=sys.stdout, width=width, highlight=False, soft_wrap=False)


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def print_table(
    title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]], *, whole: Sequence[str] = ()
) -> None:
    """A table on stdout; the ``whole`` columns (an id a later command takes) keep their
    longest cell's width on a narrow terminal, where the others fold."""
    from rich import box
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    # Cells are text, never markup: a path or a grant (``[/srv/repo]``) would read as a tag.
    cells = [[Text("" if cell is None else str(cell)) for cell in row] for row in rows]
    for index, column in enumerate(columns):
        widest = max((len(row[index].plain) for row in cells), default=0) if column in whole else 0
        table.add_column(column, overflow="fold", min_width=min(widest, 64) or None)
    for row in cells:
        table.add_row(*row)
    console().print(table)


def fail(message: str, code: int = EXIT_FAILED) -> NoReturn:
    """Print ``message`` as the CLI's error and exit with ``code``."""
    typer.echo(f"mcp-aggregator: error: {message}", err=True)
    raise typer.Exit(code=code)


@contextmanager
def reported() -> Iterator[None]:
    """Turn an ``AdminClientError`` into its message on stderr and exit code 1."""
    try:
        yield
    except AdminClientError as exc:
        fail(str(exc))


@contextmanager
def spinner(message: str) -> Iterator[None]:
    """A spinner on stderr while waiting (only on a terminal; silent in pipes)."""
    from rich.console import Console

    err = Console(stderr=True)
    if not err.is_terminal:
        yield
        return
    with err.status(message):
        yield
