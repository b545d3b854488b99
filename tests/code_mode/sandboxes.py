"""A running ``CodeSandbox`` for tests, and a host ``call_tool`` that answers without a gateway."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from mcp_aggregator.code_mode import CodeModeSettings, CodeSandbox


@asynccontextmanager
async def running_sandbox(**settings: Any) -> AsyncIterator[CodeSandbox]:
    sandbox = CodeSandbox(CodeModeSettings.model_validate(settings))
    async with anyio.create_task_group() as tg:
        await tg.start(sandbox.run)
        yield sandbox
        tg.cancel_scope.cancel()


class EchoTools:
    """Answers ``call_tool`` like a tiny server: ``double`` doubles ``n``, ``fail`` raises."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def __call__(self, name: str, arguments: dict[str, Any]) -> Any:
        self.calls.append((name, arguments))
        if name == "double":
            return {"value": 2 * arguments["n"]}
        if name == "fail":
            raise RuntimeError("fail: the tool failed on purpose")
        raise LookupError(f"Tool not found: {name}")
