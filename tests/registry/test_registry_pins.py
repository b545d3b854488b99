"""Tool-definition pins in the registry: stored whole per server, gone with their server."""

from __future__ import annotations

from mcp_aggregator.registry import Registry, ServerSpec, ToolPinRecord, TransportType


def pin(server_id: str, name: str, fingerprint: str | None, pending: str | None = None) -> ToolPinRecord:
    return ToolPinRecord(
        server_id=server_id,
        tool_name=name,
        fingerprint=fingerprint,
        definition={"name": name, "description": fingerprint} if fingerprint else None,
        pending_fingerprint=pending,
        pending_definition={"name": name, "description": pending} if pending else None,
    )


def essentials(pins: list[ToolPinRecord]) -> list[tuple[str, str | None, str | None]]:
    return [(p.tool_name, p.fingerprint, p.pending_fingerprint) for p in pins]


async def test_saving_pins_replaces_the_servers_whole_set(registry: Registry) -> None:
    git = await registry.register_server(ServerSpec("git", TransportType.STDIO, {"command": "g"}))
    web = await registry.register_server(ServerSpec("web", TransportType.HTTP, {"base_url": "http://h/mcp"}))
    await registry.save_tool_pins(git.id, [pin(git.id, "log", "a"), pin(git.id, "diff", "b")])
    await registry.save_tool_pins(web.id, [pin(web.id, "fetch", "c")])

    await registry.save_tool_pins(git.id, [pin(git.id, "log", "a", pending="a2"), pin(git.id, "new", None, "n")])

    stored = await registry.list_tool_pins(git.id)
    assert essentials(stored) == [("log", "a", "a2"), ("new", None, "n")]
    assert stored[0].definition == {"name": "log", "description": "a"}
    assert stored[0].pending_definition == {"name": "log", "description": "a2"}
    assert stored[0].updated_at is not None and stored[0].updated_at.tzinfo is not None
    assert essentials(await registry.list_tool_pins(web.id)) == [("fetch", "c", None)]
    assert len(await registry.list_tool_pins()) == 3


async def test_pins_go_with_their_server_and_a_late_save_for_a_gone_server_is_dropped(registry: Registry) -> None:
    git = await registry.register_server(ServerSpec("git", TransportType.STDIO, {"command": "g"}))
    await registry.save_tool_pins(git.id, [pin(git.id, "log", "a")])
    await registry.delete_server(git.id)
    assert await registry.list_tool_pins() == []
    await registry.save_tool_pins(git.id, [pin(git.id, "log", "a")])
    assert await registry.list_tool_pins() == []
