from mcp_aggregator.facades import build_servers_domain

from .conftest import FakeServers


async def test_list_at_each_detail_level(servers: FakeServers) -> None:
    domain = build_servers_domain(servers)
    minimal = await domain.dispatch({"cmd": "list", "detail": "minimal"})
    assert minimal == {"ok": True, "cmd": "list", "data": [{"name": "docs"}, {"name": "git"}], "count": 2}
    standard = await domain.dispatch({"cmd": "list"})
    assert standard["data"][1] == {
        "name": "git",
        "status": "DEGRADED",
        "transport": "stdio",
        "toolCount": 2,
        "description": "Git for the repo.",
    }
    full = await domain.dispatch({"cmd": "list", "detail": "full"})
    assert full["data"][1]["lastError"] == "slow answers"
    assert full["data"][1]["tools"] == ["git_log", "git_status"]


async def test_list_filters_by_status_ignoring_case(servers: FakeServers) -> None:
    envelope = await build_servers_domain(servers).dispatch(
        {"cmd": "list", "detail": "minimal", "params": {"status": "connected"}}
    )
    assert envelope["data"] == [{"name": "docs"}]


async def test_get_one_server_and_an_unknown_one(servers: FakeServers) -> None:
    domain = build_servers_domain(servers)
    docs = await domain.dispatch({"cmd": "get", "detail": "minimal", "params": {"name": "docs"}})
    assert docs == {"ok": True, "cmd": "get", "data": {"name": "docs"}}
    missing = await domain.dispatch({"cmd": "get", "params": {"name": "ghost"}})
    assert missing == {"ok": False, "cmd": "get", "error": "Server not found: ghost"}
    unnamed = await domain.dispatch({"cmd": "get"})
    assert unnamed["error"] == "params.name: is required"


async def test_status_of_one_server_and_of_all(servers: FakeServers) -> None:
    domain = build_servers_domain(servers)
    one = await domain.dispatch({"cmd": "status", "params": {"name": "git"}})
    assert one == {
        "ok": True,
        "cmd": "status",
        "data": {
            "name": "git",
            "state": "DEGRADED",
            "since": "2026-01-01T00:00:00Z",
            "lastError": "slow answers",
        },
    }
    every = await domain.dispatch({"cmd": "status", "detail": "minimal"})
    assert every["data"] == [{"name": "docs", "state": "CONNECTED"}, {"name": "git", "state": "DEGRADED"}]
    assert every["count"] == 2
