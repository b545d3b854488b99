"""REST services behind the gateway from their own OpenAPI documents, through the SDK client
in both eras: a FastAPI service's generated document (fetched by URL, 3.1) and the
published Swagger Petstore document (a YAML file, 3.0) in front of a service that follows it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.health.server_state import ServerStatus
from mcp_aggregator.settings import ServerConfig
from tests.bridges.asgi_serving import serve_asgi
from tests.bridges.books_api import TOKEN, build_books_app
from tests.bridges.petstore_app import API_KEY, Petstore, build_petstore_app
from tests.conftest import running_gateway, settings_for

PETSTORE = Path(__file__).parent / "fixtures" / "petstore-openapi.yaml"
ERAS = pytest.mark.parametrize("mode", ["auto", "legacy"])


def books(base: str, **extra: Any) -> ServerConfig:
    return ServerConfig.model_validate(
        {
            "name": "books",
            "transport": "openapi",
            "spec": f"{base}/openapi.json",
            "headers": {"Authorization": "Bearer ${BOOKS_TOKEN}"},
            **extra,
        }
    )


@asynccontextmanager
async def books_gateway(mode: str = "auto", **extra: Any) -> AsyncIterator[tuple[Gateway, Client]]:
    """The books service, and a gateway in front of it with a client of era ``mode``."""
    async with (
        serve_asgi(build_books_app()) as base,
        running_gateway(settings_for(books(base, **extra)), mode=mode) as (gateway, client),
    ):
        yield gateway, client


def by_name(tools: list[Any]) -> dict[str, Any]:
    return {tool.name.split("__", 1)[-1]: tool for tool in tools if tool.name.startswith("books__")}


@ERAS
async def test_a_fastapi_services_operations_become_tools_with_its_schemas_and_annotations(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOOKS_TOKEN", TOKEN)
    async with books_gateway(mode) as (_, client):
        tools = by_name((await client.list_tools()).tools)
    assert set(tools) == {"listBooks", "getBook", "addBook", "deleteBook", "goElsewhere"}
    get_book = tools["getBook"]
    assert get_book.input_schema["required"] == ["book_id"]
    assert get_book.input_schema["properties"]["book_id"]["type"] == "integer"
    assert get_book.description.startswith("Get a book")
    assert get_book.annotations.read_only_hint is True
    assert tools["deleteBook"].annotations.destructive_hint is True
    assert tools["addBook"].annotations.read_only_hint is False
    add = tools["addBook"].input_schema
    assert set(add["properties"]) == {"title", "author", "year"}
    assert add["required"] == ["title", "author"]
    assert tools["getBook"].output_schema["properties"]["title"]["type"] == "string"
    assert tools["listBooks"].output_schema["properties"]["result"]["type"] == "array"
    assert "$ref" not in str(tools["listBooks"].output_schema)


@ERAS
async def test_a_call_places_path_query_and_body_arguments_and_answers_json_as_structured_content(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOOKS_TOKEN", TOKEN)
    async with books_gateway(mode) as (_, client):
        got = await client.call_tool("books__getBook", {"book_id": 1})
        added = await client.call_tool("books__addBook", {"title": "Emma", "author": "Jane Austen", "year": 1815})
        listed = await client.call_tool("books__listBooks", {"author": "Jane Austen", "limit": 5})
    assert not got.is_error
    assert got.structured_content == {"id": 1, "title": "Dune", "author": "Frank Herbert", "year": 1965}
    assert '"Dune"' in got.content[0].text
    assert added.structured_content == {"id": 2, "title": "Emma", "author": "Jane Austen", "year": 1815}
    assert listed.structured_content == {"result": [added.structured_content]}


@ERAS
async def test_a_404_and_a_422_are_tool_errors_with_the_status_and_an_excerpt(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BOOKS_TOKEN", TOKEN)
    async with books_gateway(mode) as (_, client):
        missing = await client.call_tool("books__getBook", {"book_id": 99})
        invalid = await client.call_tool("books__addBook", {"title": "", "author": "Nobody"})
    assert missing.is_error
    assert missing.content[0].text == 'HTTP 404 Not Found: {"detail":"no book 99"}'
    assert invalid.is_error
    assert invalid.content[0].text.startswith("HTTP 422 Unprocessable")
    assert "string_too_short" in invalid.content[0].text


async def test_the_configured_bearer_header_is_what_lets_calls_through(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKS_TOKEN", "not-the-token")
    async with books_gateway() as (_, client):
        refused = await client.call_tool("books__getBook", {"book_id": 1})
    assert refused.is_error
    assert refused.content[0].text.startswith("HTTP 401")


async def test_a_redirect_to_another_host_is_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKS_TOKEN", TOKEN)
    async with books_gateway() as (_, client):
        answer = await client.call_tool("books__goElsewhere", {})
    assert answer.is_error
    assert "redirect to another host (http://example.invalid) not followed" in answer.content[0].text


async def test_operations_selects_the_tools_by_operation_id_or_method_and_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKS_TOKEN", TOKEN)
    async with books_gateway(operations=["getBook", "POST /books"]) as (_, client):
        tools = by_name((await client.list_tools()).tools)
    assert set(tools) == {"getBook", "addBook"}


async def test_an_operation_the_document_lacks_puts_the_server_in_error_naming_the_entry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BOOKS_TOKEN", TOKEN)
    async with books_gateway(operations=["getBook", "renameBook"]) as (gateway, _):
        # The gateway settles once the first attempt resolved: the error is there already.
        supervisor = gateway.supervisors["books"]
    assert supervisor.status is not ServerStatus.CONNECTED
    assert "operations[1]: 'renameBook' is no operationId or 'METHOD /path' of the document" in supervisor.error_message


def petstore_config(base: str) -> ServerConfig:
    return ServerConfig.model_validate(
        {
            "name": "pets",
            "transport": "openapi",
            "spec": str(PETSTORE),
            "base_url": f"{base}/api/v3",
            "headers": {"api_key": API_KEY},
            # The document asks for its oauth2 scheme on the /pet operations: a token, given.
            "security": {"petstore_auth": "an-access-token"},
        }
    )


@ERAS
async def test_the_published_petstore_document_serves_its_operations(mode: str) -> None:
    store = Petstore()
    async with (
        serve_asgi(build_petstore_app(store)) as base,
        running_gateway(settings_for(petstore_config(base)), mode=mode) as (_, client),
    ):
        tools = {t.name.removeprefix("pets__"): t for t in (await client.list_tools()).tools}
        added = await client.call_tool("pets__addPet", {"name": "Kitty", "photoUrls": [], "status": "pending"})
        pending = await client.call_tool("pets__findPetsByStatus", {"status": "pending"})
        renamed = await client.call_tool("pets__updatePetWithForm", {"petId": 1, "name": "Rexy"})
        inventory = await client.call_tool("pets__getInventory", {})
        deleted = await client.call_tool("pets__deletePet", {"petId": 2, "api_key": "mine"})
        gone = await client.call_tool("pets__getPetById", {"petId": 2})
        login = await client.call_tool("pets__loginUser", {"username": "ann", "password": "pw"})
    # uploadFile sends application/octet-stream, which no argument can carry: left out, the rest load.
    assert "uploadFile" not in tools
    assert {"addPet", "updatePet", "getPetById", "findPetsByStatus", "deleteUser"} <= set(tools)
    assert tools["addPet"].input_schema["required"] == ["name", "photoUrls"]
    category = tools["addPet"].input_schema["properties"]["category"]
    assert category["properties"]["name"] == {"type": "string", "examples": ["Dogs"]}
    assert added.structured_content["name"] == "Kitty"
    assert [pet["name"] for pet in pending.structured_content["result"]] == ["Kitty"]
    assert renamed.structured_content["name"] == "Rexy"
    assert inventory.structured_content == {"available": 1, "sold": 1, "pending": 1}
    assert not deleted.is_error and deleted.content[0].text == "Pet deleted"
    assert store.deleted_with_key == ["mine"]
    assert gone.is_error and gone.content[0].text == "HTTP 404 Not Found: Pet not found"
    assert login.structured_content == {"result": "logged in user session:ann"}
