"""A tool call as the HTTP request the document describes, and the answer as a tool result.

``request_parts`` and ``tool_result`` are pure; ``RestCaller`` sends, following a redirect
only while it stays on the same origin (a redirect elsewhere could carry the configured
credentials to a host nobody configured).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final
from urllib.parse import quote, urlsplit

import httpx2
import mcp_types as types
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from mcp_aggregator.bridges.openapi.operation import BodyKind, Location, Operation
from mcp_aggregator.bridges.security_schemes import Placement

EXCERPT_CHARS: Final = 2000
"""How much of a failed answer's body a tool error quotes."""
MAX_REDIRECTS: Final = 5


class ArgumentError(ValueError):
    """The call's arguments do not fit the operation (a missing or unknown argument)."""


@dataclass(frozen=True)
class RequestParts:
    method: str
    url: str
    params: list[tuple[str, str | int | float | bool | None]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    json_body: Any = None
    form: dict[str, str] | None = None
    content: bytes | None = None
    content_type: str | None = None


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


def request_parts(operation: Operation, base_url: str, arguments: Mapping[str, Any]) -> RequestParts:
    """Where each argument goes; raises ``ArgumentError`` for a missing required or unknown one."""
    known = set(operation.tool.input_schema.get("properties", {}))
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise ArgumentError(f"unknown argument(s): {', '.join(unknown)} (expected some of: {', '.join(sorted(known))})")
    missing = [name for name in operation.tool.input_schema.get("required", []) if arguments.get(name) is None]
    if missing:
        raise ArgumentError(f"missing required argument(s): {', '.join(missing)}")
    path = operation.path
    parts = RequestParts(operation.method, "")
    for parameter in operation.parameters:
        value = arguments.get(parameter.argument)
        if value is None:
            continue
        if parameter.location is Location.PATH:
            path = path.replace("{" + parameter.name + "}", quote(_text(value), safe=""))
        elif parameter.location is Location.QUERY:
            if isinstance(value, list) and parameter.explode:
                parts.params.extend((parameter.name, _text(item)) for item in value)
            elif isinstance(value, list):
                parts.params.append((parameter.name, ",".join(_text(item) for item in value)))
            else:
                parts.params.append((parameter.name, _text(value)))
        elif parameter.location is Location.HEADER:
            parts.headers[parameter.name] = ",".join(map(_text, value)) if isinstance(value, list) else _text(value)
        else:
            parts.cookies[parameter.name] = _text(value)
    url = base_url.rstrip("/") + path
    body = operation.body
    if body is None:
        return replace(parts, url=url)
    if body.argument is not None:
        payload = arguments.get(body.argument)
    else:
        spread = {name: arguments[arg] for arg, name in body.spread if arg in arguments}
        payload = spread if spread or body.kind is not BodyKind.TEXT else None
    extra: dict[str, Any] = {"url": url, "content_type": body.media_type}
    if payload is None:
        extra["content_type"] = None
    elif body.kind is BodyKind.JSON:
        extra["json_body"] = payload
    elif body.kind is BodyKind.FORM:
        if not isinstance(payload, Mapping):
            raise ArgumentError(f"{body.argument}: a form body must be an object")
        extra["form"] = {key: _text(value) for key, value in payload.items()}
    else:
        extra["content"] = _text(payload).encode()
    return replace(parts, **extra)


def _is_json(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return media == "application/json" or media.endswith("+json")


def _excerpt(text: str) -> str:
    text = text.strip()
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + f"... ({len(text)} characters)"


def error_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def tool_result(
    operation: Operation, response: httpx2.Response, validator: Draft202012Validator | None
) -> types.CallToolResult:
    """A 2xx answer as text (and structured content for JSON); anything else a tool error."""
    status = f"HTTP {response.status_code} {response.reason_phrase}".strip()
    content_type = response.headers.get("content-type", "")
    if not 200 <= response.status_code < 300:
        body = response.text if response.content else ""
        return error_result(f"{status}: {_excerpt(body)}" if body else status)
    if _is_json(content_type) and response.content:
        try:
            value = response.json()
        except ValueError:
            return error_result(f"{status}, but the body is not the JSON it claims to be: {_excerpt(response.text)}")
        structured = {"result": value} if operation.wraps_output or not isinstance(value, dict) else value
        if validator is not None:
            problem = best_match(validator.iter_errors(structured))
            if problem is not None:
                at = "/".join(str(p) for p in problem.absolute_path) or "(the body)"
                return error_result(
                    f"{status}, but the answer does not match the document's response schema at {at}: "
                    f"{problem.message}. Body: {_excerpt(response.text)}"
                )
        return types.CallToolResult(content=[types.TextContent(text=response.text)], structured_content=structured)
    if validator is not None:
        return error_result(
            f"{status}, but the answer is not the JSON the document describes ({content_type or 'no body'})"
        )
    if not response.content:
        return types.CallToolResult(content=[types.TextContent(text=status)])
    media = content_type.split(";")[0].strip().lower()
    if media.startswith("text/") or media in ("application/xml", "application/yaml", ""):
        return types.CallToolResult(content=[types.TextContent(text=response.text)])
    blob = base64.b64encode(response.content).decode()
    if media.startswith("image/"):
        return types.CallToolResult(content=[types.ImageContent(data=blob, mime_type=media)])
    resource = types.BlobResourceContents(uri=str(response.request.url), mime_type=media, blob=blob)
    return types.CallToolResult(content=[types.EmbeddedResource(resource=resource)])


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


class RestCaller:
    """Sends operations' requests with one HTTP client (the configured headers on it)."""

    def __init__(self, client: httpx2.AsyncClient, base_url: str) -> None:
        self._client = client
        self.base_url = base_url

    async def call(
        self,
        operation: Operation,
        arguments: Mapping[str, Any],
        validator: Draft202012Validator | None,
        credentials: Placement | None = None,
    ) -> types.CallToolResult:
        """``credentials``: the operation's security secrets, placed over the arguments'."""
        try:
            parts = request_parts(operation, self.base_url, arguments)
        except ArgumentError as exc:
            return error_result(str(exc))
        if credentials is not None and (credentials.headers or credentials.params or credentials.cookies):
            parts = replace(
                parts,
                params=[*[(k, v) for k, v in parts.params if k not in credentials.params], *credentials.params.items()],
                headers={**parts.headers, **credentials.headers},
                cookies={**parts.cookies, **credentials.cookies},
            )
        headers = dict(parts.headers)
        if parts.content_type and parts.content is not None:
            headers["content-type"] = parts.content_type
        request = self._client.build_request(
            parts.method,
            parts.url,
            params=parts.params or None,
            headers=headers,
            cookies=parts.cookies or None,
            json=parts.json_body,
            data=parts.form,
            content=parts.content,
        )
        try:
            response = await self._send(request)
        except httpx2.TimeoutException:
            return error_result(f"{parts.method} {urlsplit(parts.url).path}: the service did not answer in time")
        except httpx2.HTTPError as exc:
            return error_result(f"{parts.method} {urlsplit(parts.url).path}: could not reach the service ({exc})")
        return tool_result(operation, response, validator)

    async def _send(self, request: httpx2.Request) -> httpx2.Response:
        for _ in range(MAX_REDIRECTS + 1):
            response = await self._client.send(request)
            await response.aread()
            location = response.headers.get("location")
            if not (response.is_redirect and location):
                return response
            target = request.url.join(location)
            if _origin(target) != _origin(request.url):
                return httpx2.Response(
                    response.status_code,
                    text=f"redirect to another host ({target.scheme}://{target.host}) not followed",
                    request=request,
                )
            method = "GET" if response.status_code == 303 and request.method != "HEAD" else request.method
            body = None if method == "GET" and request.method != "GET" else request.content
            dropped = {"host", "content-length"} | ({"content-type"} if body is None else set())
            headers = {k: v for k, v in request.headers.items() if k.lower() not in dropped}
            request = self._client.build_request(method, target, headers=headers, content=body)
        return response
