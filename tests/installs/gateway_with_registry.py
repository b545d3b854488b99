"""A gateway served over HTTP whose ``registries:`` point at a local v0.1 registry."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.conftest import settings_for
from tests.http_serving import ServedGateway, served_over_http
from tests.installs.local_registry import REPO

ADMIN = "registry-test-admin-token-0123456789"
NPM_PACKAGES = (REPO / "upstreams/node_modules").resolve()
"""The npm packages of ``upstreams/`` (resolved: the sandbox mounts real paths)."""
NPM_OFFLINE = {"npm_config_offline": "true"}
"""npx fails rather than fetch anything: proof that the install needed no network."""


def npm_project(tmp_path: Path) -> Path:
    """A data dir inside a folder whose ``node_modules`` holds the npm packages of
    ``upstreams/``: npx finds an exact version there (npm's own local lookup) and
    fetches nothing, so an install runs offline as it would online."""
    # A folder of links, not one link: the sandbox mounts a granted path where it really is, so
    # the folder npm looks in must be real; the links inside lead to NPM_PACKAGES, granted too.
    (tmp_path / "node_modules").mkdir()
    for package in NPM_PACKAGES.iterdir():
        (tmp_path / "node_modules" / package.name).symlink_to(package)
    return tmp_path / "data"


@asynccontextmanager
async def gateway_with_registry(url: str, data_dir: Path) -> AsyncIterator[ServedGateway]:
    settings = settings_for(
        sections={"registries": [{"name": "official", "url": url, "timeout_secs": 5}]},
        data_dir=str(data_dir),
        admin_token=ADMIN,
        # The sandbox hides every folder it is not told of: the npm packages npx finds offline
        # (npm_project) are granted as a user grants what a server needs.
        sandbox={"read": [str(data_dir.parent / "node_modules"), str(NPM_PACKAGES)]}
        if (data_dir.parent / "node_modules").is_dir()
        else {},
    )
    async with served_over_http(settings, admin_token=ADMIN) as served:
        yield served


def admin(served: ServedGateway) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=f"{served.base}/api/v1/aggregator", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=300
    )


@asynccontextmanager
async def mcp_client(served: ServedGateway) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(timeout=60) as http,
        Client(streamable_http_client(served.mcp_url, http_client=http), cache=None) as client,  # type: ignore[arg-type]
    ):
        yield client


def text_of(result: types.CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def json_of(result: types.CallToolResult) -> Any:
    return json.loads(text_of(result))
