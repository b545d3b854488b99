from typing import Any

import pytest

from mcp_aggregator.errors import FacadeError
from mcp_aggregator.facades import Command, Detail, Domain, Listing
from mcp_aggregator.facades.param_schema import object_schema


async def _echo(params: dict[str, Any], detail: Detail) -> Any:
    return {"params": params, "detail": detail.value}


async def _many(params: dict[str, Any], detail: Detail) -> Any:
    return ["a", "b", "c"]


async def _paged(params: dict[str, Any], detail: Detail) -> Any:
    return Listing(["a", "b"], next_cursor="2")


async def _refuse(params: dict[str, Any], detail: Detail) -> Any:
    raise FacadeError("params.id: no such item")


async def _bug(params: dict[str, Any], detail: Detail) -> Any:
    raise ZeroDivisionError("division by zero")


def make_domain() -> Domain:
    echo_params = object_schema(
        {
            "id": {"type": "integer", "minimum": 1, "maximum": 9},
            "kind": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        required=["id"],
    )
    return Domain(
        "demo",
        "A demo domain.",
        [
            Command("echo", "repeat the params", _echo, echo_params),
            Command("many", "three letters", _many),
            Command("paged", "a page", _paged),
            Command("refuse", "always refuses", _refuse),
            Command("bug", "a handler bug", _bug),
        ],
    )


async def test_success_echoes_cmd_as_sent_and_defaults_detail_to_standard() -> None:
    envelope = await make_domain().dispatch({"cmd": "ECHO", "params": {"id": 3}})
    assert envelope == {"ok": True, "cmd": "ECHO", "data": {"params": {"id": 3}, "detail": "standard"}}


async def test_list_result_carries_count() -> None:
    assert await make_domain().dispatch({"cmd": "many"}) == {
        "ok": True,
        "cmd": "many",
        "data": ["a", "b", "c"],
        "count": 3,
    }


async def test_page_result_carries_items_cursor_and_count() -> None:
    assert await make_domain().dispatch({"cmd": "paged", "detail": "minimal"}) == {
        "ok": True,
        "cmd": "paged",
        "data": {"items": ["a", "b"], "nextCursor": "2"},
        "count": 2,
    }


async def test_detail_is_case_insensitive() -> None:
    envelope = await make_domain().dispatch({"cmd": "echo", "detail": "FULL", "params": {"id": 1}})
    assert envelope["data"]["detail"] == "full"


async def test_unknown_command_lists_valid_commands() -> None:
    envelope = await make_domain().dispatch({"cmd": "delete"})
    assert envelope == {
        "ok": False,
        "cmd": "delete",
        "error": "unknown command 'delete'; valid commands: echo, many, paged, refuse, bug",
    }


@pytest.mark.parametrize(
    ("arguments", "cmd", "error"),
    [
        ({}, "", "cmd: required string; valid commands: echo, many, paged, refuse, bug"),
        ({"cmd": 7}, "", "cmd: required string; valid commands: echo, many, paged, refuse, bug"),
        (
            {"cmd": "echo", "detail": "verbose", "params": {"id": 1}},
            "echo",
            "detail: must be one of minimal, standard, full, got 'verbose'",
        ),
        ({"cmd": "echo", "params": [1, 2]}, "echo", "params: must be an object, got list"),
        ({"cmd": "echo", "params": "id=1"}, "echo", "params: must be an object, got str"),
        ({"cmd": "echo", "id": 1}, "echo", "id: unexpected argument; put command arguments in params"),
        ({"cmd": "echo", "params": {}}, "echo", "params.id: is required"),
        ({"cmd": "echo", "params": {"id": "3"}}, "echo", "params.id: must be of type integer"),
        ({"cmd": "echo", "params": {"id": 10}}, "echo", "params.id: must be <= 9"),
        ({"cmd": "echo", "params": {"id": 0}}, "echo", "params.id: must be >= 1"),
        ({"cmd": "echo", "params": {"id": 1, "kind": "c"}}, "echo", "params.kind: must be one of a, b"),
        (
            {"cmd": "echo", "params": {"id": 1, "tags": ["x", 2]}},
            "echo",
            "params.tags[1]: must be of type string",
        ),
        ({"cmd": "echo", "params": {"id": 1, "idd": 2}}, "echo", "params.idd: is not an accepted field"),
        (
            {"cmd": "echo", "params": {"kind": "z"}},
            "echo",
            "params.id: is required (and 1 more)",
        ),
        ({"cmd": "refuse"}, "refuse", "params.id: no such item"),
        ({"cmd": "bug"}, "bug", "internal error (ZeroDivisionError): division by zero"),
    ],
)
async def test_every_bad_request_gets_a_failure_envelope_naming_the_problem(
    arguments: dict[str, Any], cmd: str, error: str
) -> None:
    assert await make_domain().dispatch(arguments) == {"ok": False, "cmd": cmd, "error": error}


async def test_non_object_arguments_fail_without_raising() -> None:
    envelope = await make_domain().dispatch(["echo"])  # type: ignore[arg-type]
    assert envelope == {"ok": False, "cmd": "", "error": "arguments: must be an object"}


async def test_missing_arguments_are_a_missing_cmd() -> None:
    envelope = await make_domain().dispatch(None)
    assert envelope["ok"] is False
    assert envelope["error"].startswith("cmd: required string")


def test_tool_definition_lists_each_command_on_one_line_in_declaration_order() -> None:
    tool = make_domain().tool_definition()
    assert tool.name == "demo"
    assert tool.description == (
        "A demo domain.\n"
        "Commands (cmd; args go in params):\n"
        "echo(id, kind?, tags?): repeat the params\n"
        "many(): three letters\n"
        "paged(): a page\n"
        "refuse(): always refuses\n"
        "bug(): a handler bug"
    )
    assert tool.input_schema == {
        "type": "object",
        "properties": {
            "cmd": {"type": "string"},
            "params": {"type": "object"},
            "detail": {"enum": ["minimal", "standard", "full"]},
        },
        "required": ["cmd"],
    }


def test_tool_definition_is_deterministic_and_callers_cannot_mutate_it() -> None:
    domain = make_domain()
    first = domain.tool_definition()
    first.input_schema["required"].append("params")
    assert domain.tool_definition() == make_domain().tool_definition()


@pytest.mark.parametrize("name", ["", "has.dot", "has space", "x" * 65])
def test_domain_name_must_be_a_client_safe_tool_name(name: str) -> None:
    with pytest.raises(ValueError, match="not a valid tool name"):
        Domain(name, "", [Command("a", "", _echo)])


def test_command_names_must_be_unique_ignoring_case() -> None:
    with pytest.raises(ValueError, match="duplicate command 'ECHO'"):
        Domain("d", "", [Command("echo", "", _echo), Command("ECHO", "", _echo)])


def test_a_domain_needs_commands() -> None:
    with pytest.raises(ValueError, match="has no commands"):
        Domain("d", "", [])
