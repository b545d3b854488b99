"""Plain option values convert without pydantic to what Typer's own conversion gives them,
and anything else, every error included, is Typer's."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
from typer.core import TyperGroup, _TyperParameter
from typer.testing import CliRunner

from mcp_aggregator.cli.plain_values import PlainValues, use_plain_values


class _PlainGroup(TyperGroup):
    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        use_plain_values(self)


def _probe_app(seen: dict[str, Any], *, plain: bool) -> typer.Typer:
    probe = typer.Typer(cls=_PlainGroup if plain else TyperGroup)

    @probe.command()
    def run(
        name: str,
        text: Annotated[str | None, typer.Option()] = None,
        count: Annotated[int, typer.Option()] = 3,
        ratio: Annotated[float, typer.Option()] = 30.0,
        where: Annotated[Path | None, typer.Option()] = None,
        must_exist: Annotated[Path | None, typer.Option(exists=True)] = None,
        pair: Annotated[list[str] | None, typer.Option()] = None,
        flag: Annotated[bool, typer.Option("--flag")] = False,
    ) -> None:
        seen.update(
            name=name, text=text, count=count, ratio=ratio, where=where, must_exist=must_exist, pair=pair, flag=flag
        )

    @probe.callback()
    def group() -> None:
        pass

    return probe


def _run(args: list[str], *, plain: bool) -> tuple[int, str, dict[str, Any]]:
    seen: dict[str, Any] = {}
    result = CliRunner().invoke(_probe_app(seen, plain=plain), args)
    return result.exit_code, result.output, seen


@pytest.mark.parametrize(
    "args",
    [
        ["run", "alpha"],
        ["run", "alpha", "--text", "t", "--count", "-4", "--ratio", "1.5", "--where", "a/b", "--flag"],
        ["run", "β", "--ratio", "7", "--pair", "x=1", "--pair", "y=2", "--count", "+12"],
        ["run", "alpha", "--ratio", "1e3", "--count", "1_0", "--text", ""],
        ["run", "alpha", "--ratio", " 2 ", "--where", ""],
        ["run", "alpha", "--ratio", "inf", "--must-exist", "."],
    ],
)
def test_a_value_converts_to_what_typer_gives_it(args: list[str]) -> None:
    assert _run(args, plain=True) == _run(args, plain=False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "a", "--ratio", "lots"], "Input should be a valid number, unable to parse string as a number"),
        (["run", "a", "--count", "1.5"], "Input should be a valid integer, unable to parse string as an integer"),
        (["run", "a", "--must-exist", "/no/such/path"], "'/no/such/path' does not exist."),
    ],
)
def test_a_bad_value_fails_with_typers_own_message(args: list[str], message: str) -> None:
    code, output, seen = _run(args, plain=True)
    assert (code, output) == _run(args, plain=False)[:2]
    assert code == 2
    assert message in " ".join(output.replace("│", " ").split())
    assert seen == {}


def test_only_plain_annotations_get_the_plain_conversion() -> None:
    command: Any = typer.main.get_command(_probe_app({}, plain=True))
    run = command.commands["run"]
    plain = {
        param.name
        for param in run.params
        if isinstance(param, _TyperParameter) and isinstance(param._runtime_param, PlainValues)
    }
    assert plain == {"name", "text", "count", "ratio", "where", "pair", "flag"}
    assert isinstance(run.get_help_option(typer.Context(run))._runtime_param, PlainValues)
