"""The CLI against a gateway served as ``mcp-aggregator serve`` serves it, over real HTTP.

The CLI is synchronous; it runs in a worker thread (typer's ``CliRunner``) while the
gateway serves in the test's event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import anyio
from click.testing import Result
from typer.testing import CliRunner

from mcp_aggregator.cli import app
from tests.serve.http_face import Face


@dataclass(frozen=True)
class Cli:
    """Runs commands at one face, with its address and admin token."""

    face: Face

    async def __call__(self, *args: str, auth: bool = True) -> Result:
        extra = ["--gateway", self.face.base_url, "--token", self.face.admin_token] if auth else []
        return await run_cli(*args, *extra)


async def run_cli(*args: str, env: dict[str, str] | None = None) -> Result:
    runner = CliRunner()
    invoke = partial(runner.invoke, app, list(args), env={"MCP_AGGREGATOR_TOKEN": "", **(env or {})})
    return await anyio.to_thread.run_sync(invoke)
