"""The conformance fixture's static content: resources, templates, prompts, completion, schemas.

Texts, URIs and schemas are the ones the suite's scenario descriptions prescribe.
"""

from __future__ import annotations

import json
import re
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

Context = ServerRequestContext[Any, Any]

# A 1x1 red PNG and a WAV header with two bytes of silence: the smallest valid media.
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
WAV_BASE64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

STATIC_TEXT_URI = "test://static-text"
STATIC_BINARY_URI = "test://static-binary"
WATCHED_URI = "test://watched-resource"
TEMPLATE_URI = "test://template/{id}/data"
_TEMPLATE = re.compile(r"^test://template/([^/]+)/data$")

JSON_SCHEMA_TOOL = "json_schema_2020_12_tool"
JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}

USER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}

DEFAULTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}

ENUMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}

# completion/complete offers these for test_prompt_with_arguments and the template's {id}.
COMPLETIONS: dict[str, tuple[str, ...]] = {
    "arg1": ("paris", "park", "party", "test", "testing"),
    "arg2": ("world", "word", "work"),
    "id": ("123", "124", "456"),
}


def string_args(*names: str) -> dict[str, Any]:
    return {"type": "object", "properties": {n: {"type": "string"} for n in names}, "required": list(names)}


def image() -> types.ImageContent:
    return types.ImageContent(type="image", data=PNG_BASE64, mime_type="image/png")


def related(ctx: Context) -> ServerMessageMetadata:
    """Sends a server→client request on the stream of the call that caused it."""
    return ServerMessageMetadata(related_request_id=ctx.request_id)


# -- resources -------------------------------------------------------------------------------


async def list_resources(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
    return types.ListResourcesResult(
        resources=[
            types.Resource(
                uri=STATIC_TEXT_URI, name="static-text", description="A static text resource", mime_type="text/plain"
            ),
            types.Resource(
                uri=STATIC_BINARY_URI, name="static-binary", description="A static 1x1 PNG image", mime_type="image/png"
            ),
            types.Resource(
                uri=WATCHED_URI,
                name="watched-resource",
                description="A resource clients can subscribe to",
                mime_type="text/plain",
            ),
        ]
    )


async def list_resource_templates(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template=TEMPLATE_URI, name="template-data", description="Data for an ID", mime_type="application/json"
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


def read_resource(uri: str) -> types.ReadResourceResult:
    """The contents of a static or templated resource; an unknown URI is -32602 with the URI."""
    contents: types.TextResourceContents | types.BlobResourceContents
    if uri == STATIC_TEXT_URI:
        contents = types.TextResourceContents(
            uri=uri, mime_type="text/plain", text="This is the content of the static text resource."
        )
    elif uri == STATIC_BINARY_URI:
        contents = types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG_BASE64)
    elif match := _TEMPLATE.match(uri):
        data = {"id": match[1], "templateTest": True, "data": f"Data for ID: {match[1]}"}
        contents = types.TextResourceContents(uri=uri, mime_type="application/json", text=json.dumps(data))
    else:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Resource not found: {uri}")
    return types.ReadResourceResult(contents=[contents])


# -- prompts ---------------------------------------------------------------------------------


def _argument(name: str, description: str) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=True)


async def list_prompts(ctx: Context, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
    return types.ListPromptsResult(
        prompts=[
            types.Prompt(name="test_simple_prompt", description="A simple prompt without arguments"),
            types.Prompt(
                name="test_prompt_with_arguments",
                description="A prompt with two required arguments",
                arguments=[_argument("arg1", "First test argument"), _argument("arg2", "Second test argument")],
            ),
            types.Prompt(
                name="test_prompt_with_embedded_resource",
                description="A prompt embedding a resource",
                arguments=[_argument("resourceUri", "URI of the resource to embed")],
            ),
            types.Prompt(name="test_prompt_with_image", description="A prompt with an image"),
        ]
    )


def _user(block: types.ContentBlock) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=block)


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _required(arguments: dict[str, str], *names: str) -> list[str]:
    missing = [name for name in names if name not in arguments]
    if missing:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Missing required arguments: {', '.join(missing)}")
    return [arguments[name] for name in names]


async def get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    arguments = params.arguments or {}
    if params.name == "test_simple_prompt":
        messages = [_user(_text("This is a simple prompt for testing."))]
    elif params.name == "test_prompt_with_arguments":
        arg1, arg2 = _required(arguments, "arg1", "arg2")
        messages = [_user(_text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"))]
    elif params.name == "test_prompt_with_embedded_resource":
        (uri,) = _required(arguments, "resourceUri")
        embedded = "Embedded resource content for testing."
        resource = types.TextResourceContents(uri=uri, mime_type="text/plain", text=embedded)
        messages = [
            _user(types.EmbeddedResource(type="resource", resource=resource)),
            _user(_text("Please process the embedded resource above.")),
        ]
    elif params.name == "test_prompt_with_image":
        messages = [_user(image()), _user(_text("Please analyze the image above."))]
    else:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
    return types.GetPromptResult(messages=messages)


# -- completion ------------------------------------------------------------------------------


async def complete(ctx: Context, params: types.CompleteRequestParams) -> types.CompleteResult:
    known = (isinstance(params.ref, types.PromptReference) and params.ref.name == "test_prompt_with_arguments") or (
        isinstance(params.ref, types.ResourceTemplateReference) and params.ref.uri == TEMPLATE_URI
    )
    candidates = COMPLETIONS.get(params.argument.name, ()) if known else ()
    values = [value for value in candidates if value.startswith(params.argument.value)]
    return types.CompleteResult(completion=types.Completion(values=values, total=len(values), has_more=False))
