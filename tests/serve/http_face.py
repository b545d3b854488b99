"""The whole HTTP face as ``mcp-aggregator serve`` runs it (``serve_http``), on a loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.runner import serve_http
from mcp_aggregator.settings import ServerConfig, Settings
from tests.conftest import settings_for

API = "/api/v1/aggregator"
START_SECS = 60.0


@dataclass
class Face:
    gateway: Gateway
    mcp_url: str
    sign_in_link: str

    @property
    def base_url(self) -> str:
        return self.mcp_url.removesuffix("/mcp")

    @property
    def port(self) -> int:
        port = urlsplit(self.mcp_url).port
        assert port is not None
        return port

    @property
    def admin_token(self) -> str:
        return self.sign_in_link.split("#token=", 1)[1]

    def client(self, **headers: str) -> httpx.AsyncClient:
        """A plain client (no admin token unless given in ``headers``)."""
        return httpx.AsyncClient(base_url=self.base_url, headers=headers, timeout=30)

    def admin(self) -> httpx.AsyncClient:
        return self.client(Authorization=f"Bearer {self.admin_token}")


def face_settings(data_dir: Path, *servers: ServerConfig, **serve: Any) -> Settings:
    return settings_for(*servers, data_dir=str(data_dir), port=0, **serve)


@asynccontextmanager
async def http_face(settings: Settings) -> AsyncIterator[Face]:
    """``serve_http`` in this event loop until the block ends; yields once it listens."""
    ready, shutdown = anyio.Event(), anyio.Event()
    faces: list[Face] = []

    def announce(gateway: Gateway, url: str, link: str) -> None:
        faces.append(Face(gateway, url, link))
        ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(serve_http, settings, announce=announce, shutdown=shutdown))
        with anyio.fail_after(START_SECS):
            await ready.wait()
        try:
            yield faces[0]
        finally:
            shutdown.set()
