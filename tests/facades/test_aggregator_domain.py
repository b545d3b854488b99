from mcp_aggregator.facades import build_aggregator_domain

from .conftest import FakeRunner


async def test_query_at_standard_excerpts_content_and_keeps_key_metadata(runner: FakeRunner) -> None:
    envelope = await build_aggregator_domain(runner).dispatch(
        {"cmd": "query", "params": {"query": "react hooks", "maxResults": 20}}
    )
    assert envelope["ok"] is True
    assert envelope["count"] == 2
    first = envelope["data"]["results"][0]
    assert (first["rank"], first["server"], first["relevanceScore"]) == (1, "docs", 0.9)
    assert len(first["content"]) <= 300
    assert envelope["data"]["metadata"] == {
        "serversQueried": 2,
        "serversSucceeded": 2,
        "resultsReturned": 2,
        "processingTimeMs": 12,
    }
    assert runner.seen == [{"query": "react hooks", "maxResults": 20}]


async def test_query_minimal_and_full(runner: FakeRunner) -> None:
    domain = build_aggregator_domain(runner)
    minimal = await domain.dispatch({"cmd": "query", "detail": "minimal", "params": {"query": "q"}})
    assert minimal["data"] == {"results": [{"rank": 1, "server": "docs"}, {"rank": 2, "server": "git"}]}
    full = await domain.dispatch({"cmd": "query", "detail": "full", "params": {"query": "q"}})
    assert full["data"]["metadata"]["serverDiversity"] == 1.0
    assert full["data"]["results"][0]["content"].count("useState") == 40


async def test_query_params_follow_the_aggregator_contract(runner: FakeRunner) -> None:
    domain = build_aggregator_domain(runner)
    out_of_range = await domain.dispatch({"cmd": "query", "params": {"query": "q", "maxResults": 500}})
    assert out_of_range == {"ok": False, "cmd": "query", "error": "params.maxResults: must be <= 100"}
    bad_servers = await domain.dispatch({"cmd": "query", "params": {"query": "q", "servers": "docs"}})
    assert bad_servers["error"] == "params.servers: must be of type array"
    assert runner.seen == []


async def test_query_failure_of_every_server_is_an_envelope(runner: FakeRunner) -> None:
    envelope = await build_aggregator_domain(runner).dispatch({"cmd": "query", "params": {"query": "nothing answers"}})
    assert envelope == {"ok": False, "cmd": "query", "error": "Aggregation failed: all servers unavailable"}
