"""Reading an OpenAPI document from a URL or a file (JSON or YAML), and where its API lives."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urljoin, urlsplit

import anyio
import httpx2
import yaml

from mcp_aggregator.errors import BridgeError


def is_url(spec: str) -> bool:
    return urlsplit(spec).scheme in ("http", "https")


def parse_document(text: str, source: str, *, server: str) -> dict[str, Any]:
    """The document as a mapping; raises ``BridgeError`` naming ``spec`` when it does not parse."""
    try:
        document = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise BridgeError(server, f"spec: {source} does not parse as JSON or YAML ({exc})") from exc
    if not isinstance(document, dict):
        raise BridgeError(server, f"spec: {source} is not an OpenAPI document (not an object)")
    version = str(document.get("openapi", ""))
    if not version.startswith("3."):
        found = f"swagger {document['swagger']}" if "swagger" in document else repr(document.get("openapi"))
        raise BridgeError(server, f"spec: {source} is not an OpenAPI 3.0 or 3.1 document (openapi: {found})")
    return document


async def read_document(spec: str, client: httpx2.AsyncClient, *, server: str) -> dict[str, Any]:
    """Fetches (URL) or reads (file) and parses the document; ``BridgeError`` says what failed."""
    if is_url(spec):
        try:
            response = await client.get(spec)
        except httpx2.HTTPError as exc:
            raise BridgeError(server, f"spec: could not fetch {spec} ({exc or type(exc).__name__})") from exc
        if response.status_code != 200:
            raise BridgeError(server, f"spec: fetching {spec} answered HTTP {response.status_code}")
        return parse_document(response.text, spec, server=server)
    path = await anyio.Path(spec).expanduser()
    try:
        text = await path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BridgeError(server, f"spec: cannot read the file {path} ({exc})") from exc
    return parse_document(text, str(path), server=server)


def api_base_url(document: Mapping[str, Any], spec: str, configured: str | None, *, server: str) -> str:
    """``base_url`` as configured, else the document's first server (its variables at their
    defaults, a relative URL taken relative to the document's own URL; no servers is ``/``)."""
    if configured:
        return configured
    servers = document.get("servers")
    # OpenAPI: no servers means one server at "/", i.e. where the document itself is served.
    first = servers[0] if isinstance(servers, list) and servers else {"url": "/"}
    if not isinstance(first, Mapping) or not isinstance(first.get("url"), str):
        raise BridgeError(server, "base_url: not set, and the document's servers[0] has no url to take it from")
    url: str = first["url"]
    variables = first.get("variables")
    if isinstance(variables, Mapping):
        for name, variable in variables.items():
            if isinstance(variable, Mapping) and "default" in variable:
                url = url.replace("{" + str(name) + "}", str(variable["default"]))
    if is_url(url):
        return url
    if is_url(spec):
        return urljoin(spec, url)
    raise BridgeError(
        server, f"base_url: not set, and the document's first server ({url!r}) is relative to a file: set base_url"
    )
