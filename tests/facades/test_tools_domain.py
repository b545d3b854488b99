from mcp_aggregator.facades import build_tools_domain

from .conftest import FakeCatalog


async def test_search_returns_ranked_hits_with_count(catalog: FakeCatalog) -> None:
    envelope = await build_tools_domain(catalog).dispatch({"cmd": "search", "params": {"query": "commit log"}})
    assert envelope["ok"] is True
    assert envelope["count"] == 1
    assert envelope["data"] == [
        {
            "name": "git__git_log",
            "server": "git",
            "description": "Show the commit log of a repository.",
            "score": 1.0,
        }
    ]


async def test_search_filters_by_server_and_skill_and_honours_k(catalog: FakeCatalog) -> None:
    domain = build_tools_domain(catalog)
    show = await domain.dispatch({"cmd": "search", "detail": "minimal", "params": {"query": "show", "k": 1}})
    assert show["data"] == [{"name": "git__git_log", "server": "git"}]
    by_skill = await domain.dispatch({"cmd": "search", "params": {"query": "search docs", "skill": "research"}})
    assert [hit["name"] for hit in by_skill["data"]] == ["docs__search"]
    by_server = await domain.dispatch({"cmd": "search", "params": {"query": "show", "server": "docs"}})
    assert by_server == {"ok": True, "cmd": "search", "data": [], "count": 0}


async def test_search_validates_query_and_k(catalog: FakeCatalog) -> None:
    domain = build_tools_domain(catalog)
    empty = await domain.dispatch({"cmd": "search", "params": {"query": ""}})
    assert empty["error"] == "params.query: must have at least 1 characters"
    too_many = await domain.dispatch({"cmd": "search", "params": {"query": "x", "k": 51}})
    assert too_many["error"] == "params.k: must be <= 50"


async def test_list_pages_with_a_cursor(catalog: FakeCatalog) -> None:
    domain = build_tools_domain(catalog)
    first = await domain.dispatch({"cmd": "list", "detail": "minimal", "params": {"limit": 2}})
    assert first == {
        "ok": True,
        "cmd": "list",
        "data": {
            "items": [{"name": "docs__search", "server": "docs"}, {"name": "flaky__fail", "server": "flaky"}],
            "nextCursor": "2",
        },
        "count": 2,
    }
    rest = await domain.dispatch({"cmd": "list", "detail": "minimal", "params": {"limit": 5, "cursor": "2"}})
    assert [item["name"] for item in rest["data"]["items"]] == [
        "flaky__hang",
        "git__git_log",
        "git__git_status",
    ]
    assert "nextCursor" not in rest["data"]


async def test_list_by_server_and_bad_cursor(catalog: FakeCatalog) -> None:
    domain = build_tools_domain(catalog)
    git = await domain.dispatch({"cmd": "list", "params": {"server": "git"}})
    assert git["count"] == 2
    bad = await domain.dispatch({"cmd": "list", "params": {"cursor": "zzz"}})
    assert bad == {"ok": False, "cmd": "list", "error": "params.cursor: invalid cursor 'zzz'"}


async def test_get_includes_the_input_schema_only_at_full(catalog: FakeCatalog) -> None:
    domain = build_tools_domain(catalog)
    standard = await domain.dispatch({"cmd": "get", "params": {"name": "docs__search"}})
    assert standard["data"] == {
        "name": "docs__search",
        "server": "docs",
        "skill": "research",
        "description": "Search the documentation. Returns the best matching pages with excerpts.",
        "args": "query, limit?",
    }
    full = await domain.dispatch({"cmd": "get", "detail": "full", "params": {"name": "docs__search"}})
    assert full["data"]["inputSchema"]["required"] == ["query"]
    assert full["data"]["originalName"] == "search"


async def test_get_unknown_tool_fails_with_the_catalog_error(catalog: FakeCatalog) -> None:
    envelope = await build_tools_domain(catalog).dispatch({"cmd": "get", "params": {"name": "nope"}})
    assert envelope == {"ok": False, "cmd": "get", "error": "Tool not found: nope"}


async def test_execute_calls_the_tool_and_returns_its_text(catalog: FakeCatalog) -> None:
    envelope = await build_tools_domain(catalog).dispatch(
        {"cmd": "execute", "params": {"name": "docs__search", "arguments": {"query": "hooks"}}}
    )
    assert envelope == {"ok": True, "cmd": "execute", "data": 'search ran with {"query": "hooks"}'}
    assert catalog.calls == [("docs__search", {"query": "hooks"})]


async def test_execute_at_full_returns_the_whole_result(catalog: FakeCatalog) -> None:
    envelope = await build_tools_domain(catalog).dispatch(
        {"cmd": "execute", "detail": "full", "params": {"name": "git__git_log"}}
    )
    assert envelope["data"]["content"] == [{"type": "text", "text": "git_log ran with {}"}]


async def test_execute_refuses_bad_arguments_before_calling(catalog: FakeCatalog) -> None:
    envelope = await build_tools_domain(catalog).dispatch(
        {"cmd": "execute", "params": {"name": "docs__search", "arguments": {"limit": 0}}}
    )
    assert envelope == {
        "ok": False,
        "cmd": "execute",
        "error": "params.arguments.limit: must be >= 1 (and 1 more)",
    }
    assert catalog.calls == []


async def test_execute_reports_tool_errors_and_upstream_failures(catalog: FakeCatalog) -> None:
    domain = build_tools_domain(catalog)
    failed = await domain.dispatch({"cmd": "execute", "params": {"name": "flaky__fail"}})
    assert failed == {"ok": False, "cmd": "execute", "error": "disk full"}
    timeout = await domain.dispatch({"cmd": "execute", "params": {"name": "flaky__hang"}})
    assert timeout == {"ok": False, "cmd": "execute", "error": "flaky: call timed out after 3s"}


async def test_validate_checks_arguments_without_calling(catalog: FakeCatalog) -> None:
    domain = build_tools_domain(catalog)
    bad = await domain.dispatch({"cmd": "validate", "params": {"name": "docs__search", "arguments": {"limit": "ten"}}})
    assert bad == {
        "ok": True,
        "cmd": "validate",
        "data": {
            "valid": False,
            "errors": [
                {"field": "arguments.limit", "message": "must be of type integer"},
                {"field": "arguments.query", "message": "is required"},
            ],
        },
    }
    good = await domain.dispatch({"cmd": "validate", "params": {"name": "docs__search", "arguments": {"query": "q"}}})
    assert good["data"] == {"valid": True, "errors": []}
    assert catalog.calls == []


async def test_a_domain_with_chosen_commands_refuses_the_others_and_says_what_it_does(catalog: FakeCatalog) -> None:
    domain = build_tools_domain(catalog, commands=("search", "get"))
    assert [command.name for command in domain.commands] == ["search", "get"]
    assert domain.description == "Find and inspect the tools of all connected servers."
    refused = await domain.dispatch({"cmd": "execute", "params": {"name": "x"}})
    assert not refused["ok"]
