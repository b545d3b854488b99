"""``Registry.write``: a blocking write in one transaction (on an SQLite file, in a worker thread)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session

from mcp_aggregator.registry import Registry, ServerSpec, TransportType
from mcp_aggregator.registry.tables import ExternalServerRow


async def test_a_write_lands_and_a_failing_one_leaves_nothing(registry: Registry) -> None:
    server = await registry.register_server(ServerSpec("git", TransportType.STDIO, {"command": "g"}, "old"))

    def describe(text: str) -> Callable[[Session], str]:
        def work(session: Session) -> str:
            statement = update(ExternalServerRow).where(ExternalServerRow.id == server.id).values(description=text)
            session.execute(statement)
            return text

        return work

    assert await registry.write(describe("new")) == "new"
    assert (await registry.get_server(server.id)).description == "new"

    def fail(session: Session) -> None:
        describe("lost")(session)
        raise ValueError("the work failed")

    with pytest.raises(ValueError, match="the work failed"):
        await registry.write(fail)
    assert (await registry.get_server(server.id)).description == "new"


async def test_a_write_on_a_closed_registry_says_so(registry: Registry) -> None:
    await registry.__aexit__(None, None, None)
    with pytest.raises(RuntimeError, match="closed, not open"):
        await registry.write(lambda session: None)
