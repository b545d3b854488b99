"""``RegistryClient``: the read side of one MCP Registry's v0.1 REST API, over httpx.

``GET /v0.1/servers`` (``search``, ``cursor``, ``limit``, ``updated_since``, ``version``)
pages with ``metadata.nextCursor``; ``GET /v0.1/servers/{name}/versions/{version}`` (the
name URL-encoded: it holds a ``/``; ``latest`` is a version) answers one item. Every
failure to get an answer becomes ``RegistryUnreachableError`` naming the registry.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from mcp_aggregator.errors import EntryInvalidError, EntryNotFoundError, RegistryUnreachableError
from mcp_aggregator.installs.config import McpRegistrySource
from mcp_aggregator.installs.server_json import RegistryItem, parse_item

PAGE_LIMIT = 100
MAX_PAGES = 1000
"""A registry whose cursors never end is cut off here rather than followed forever."""


class RegistryClient:
    """One registry's API; use as ``async with RegistryClient(source) as client``."""

    def __init__(self, source: McpRegistrySource, *, transport: httpx.AsyncBaseTransport | None = None) -> None:
        self.source = source
        self._http = httpx.AsyncClient(
            base_url=source.url,
            timeout=source.timeout_secs,
            transport=transport,
            headers={"Accept": "application/json"},
            follow_redirects=True,
        )

    async def __aenter__(self) -> RegistryClient:
        await self._http.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._http.__aexit__(*exc)  # type: ignore[arg-type]

    async def list_updates(self, since: datetime | None) -> tuple[list[RegistryItem], list[str]]:
        """Every item changed after ``since`` (all latest versions when ``since`` is None), and
        the problems of the items that did not parse (skipped, each named)."""
        params: dict[str, str] = {"limit": str(PAGE_LIMIT)}
        if since is None:
            params["version"] = "latest"
        else:
            params["updated_since"] = since.isoformat().replace("+00:00", "Z")
        items: list[RegistryItem] = []
        skipped: list[str] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await self._get_json("/v0.1/servers", {**params, **({"cursor": cursor} if cursor else {})})
            for index, raw in enumerate(_list(page, "servers")):
                try:
                    items.append(parse_item(raw))
                except EntryInvalidError as exc:
                    skipped.append(f"{_name_of(raw) or f'item {index}'}: {exc}")
            metadata = page.get("metadata")
            cursor = (metadata.get("nextCursor") or metadata.get("next_cursor")) if isinstance(metadata, dict) else None
            if not cursor:
                break
        return items, skipped

    async def get_version(self, name: str, version: str | None) -> RegistryItem:
        """One entry at ``version`` (``latest`` when None); ``EntryNotFoundError`` on 404."""
        path = f"/v0.1/servers/{quote(name, safe='')}/versions/{quote(version or 'latest', safe='')}"
        return parse_item(await self._get_json(path, {}, missing=(name, version)))

    async def _get_json(
        self, path: str, params: dict[str, str], *, missing: tuple[str, str | None] | None = None
    ) -> dict[str, Any]:
        where = f"registry {self.source.name!r} ({self.source.url})"
        try:
            response = await self._http.get(path, params=params)
        except httpx.HTTPError as exc:
            raise RegistryUnreachableError(f"{where} did not answer: {type(exc).__name__}: {exc}") from exc
        if response.status_code == 404 and missing is not None:
            raise EntryNotFoundError(missing[0], self.source.name, missing[1])
        if response.status_code != 200:
            raise RegistryUnreachableError(f"{where} answered {response.status_code} to GET {path}")
        try:
            body = response.json()
        except ValueError as exc:
            raise RegistryUnreachableError(f"{where} answered GET {path} with something that is not JSON") from exc
        if not isinstance(body, dict):
            raise RegistryUnreachableError(f"{where} answered GET {path} with JSON that is not an object")
        return body


def _list(page: dict[str, Any], key: str) -> list[Any]:
    value = page.get(key)
    return value if isinstance(value, list) else []


def _name_of(raw: Any) -> str | None:
    if isinstance(raw, dict) and isinstance(raw.get("server"), dict):
        name = raw["server"].get("name")
        return name if isinstance(name, str) else None
    return None
