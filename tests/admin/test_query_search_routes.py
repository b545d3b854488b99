"""The aggregator query, tool search and skills over real HTTP."""

from __future__ import annotations

import json

import anyio
import anyio.to_thread
import httpx

from mcp_aggregator.admin import build_admin_app
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.search import ToolSearch
from mcp_aggregator.search.embedding_cache import EmbeddingCache
from tests.admin.conftest import (
    API,
    SETTLE_SECS,
    TEST_ADMIN_TOKEN,
    admin_settings,
    http_server,
    serve_admin,
    served_app,
)
from tests.cli.conftest import run_cli
from tests.registry.conftest import Database
from tests.test_gateway_search import GatedEmbedder


async def test_query_fans_out_and_answers_with_results_and_metadata(sqlite_db: Database, upstream_url: str) -> None:
    settings = admin_settings(sqlite_db, http_server("alpha", upstream_url), http_server("beta", upstream_url))
    async with serve_admin(settings) as admin:
        await admin.settle()
        answer = await admin.http.post(f"{API}/query", json={"query": "hello", "maxResults": 10})
        assert answer.status_code == 200
        body = answer.json()
        assert body["metadata"]["serversQueried"] == 2
        assert body["results"][0]["rank"] == 1
        assert "web results for hello" in body["results"][0]["content"]


async def test_query_reports_which_servers_could_not_be_asked_and_why(sqlite_db: Database, upstream_url: str) -> None:
    settings = admin_settings(
        sqlite_db, http_server("alpha", upstream_url), http_server("beta", upstream_url, enabled=False)
    )
    async with serve_admin(settings) as admin:
        await admin.settle()
        answer = await admin.http.post(f"{API}/query", json={"query": "hello", "servers": ["alpha", "beta"]})
        assert answer.status_code == 200
        metadata = answer.json()["metadata"]
        assert (metadata["serversQueried"], metadata["serversSucceeded"]) == (1, 1)
        assert metadata["failedServers"] == []
        assert metadata["skippedServers"] == [{"server": "beta", "reason": "unavailable"}]
        assert metadata["selection"] == "explicit"


async def test_invalid_query_is_422_naming_field_and_reason(sqlite_db: Database, upstream_url: str) -> None:
    async with serve_admin(admin_settings(sqlite_db, http_server("alpha", upstream_url))) as admin:
        too_many = await admin.http.post(f"{API}/query", json={"query": "x", "maxResults": 500})
        assert too_many.status_code == 422
        assert too_many.json() == {"detail": {"field": "maxResults", "reason": "Must be between 10 and 100, got 500"}}
        unknown = await admin.http.post(f"{API}/query", json={"query": "x", "servers": ["nope"]})
        assert unknown.json()["detail"]["field"] == "servers"
        missing = await admin.http.post(f"{API}/query", json={})
        assert missing.json() == {"detail": {"field": "query", "reason": "Required"}}


async def test_query_with_every_server_unavailable_is_502_listing_them(sqlite_db: Database, upstream_url: str) -> None:
    settings = admin_settings(sqlite_db, http_server("alpha", upstream_url, enabled=False))
    async with serve_admin(settings) as admin:
        failed = await admin.http.post(f"{API}/query", json={"query": "hello", "servers": ["alpha"]})
        assert failed.status_code == 502
        detail = failed.json()["detail"]
        assert detail["message"] == "Aggregation failed: all servers unavailable"
        assert detail["attemptedServers"] == ["alpha"]
        assert len(detail["errors"]) == 1


async def test_tool_search_returns_namespaced_hits_of_connected_servers(sqlite_db: Database, upstream_url: str) -> None:
    settings = admin_settings(sqlite_db, http_server("alpha", upstream_url), http_server("beta", upstream_url))
    async with serve_admin(settings) as admin:
        await admin.settle()
        await admin.gateway.flush()
        answer = await admin.http.get(f"{API}/tools/search", params={"q": "add two integers", "k": 5})
        hits = answer.json()
        assert {"alpha.add", "beta.add"} <= {hit["name"] for hit in hits}
        add = next(hit for hit in hits if hit["name"] == "alpha.add")
        assert (add["server"], add["original_name"]) == ("alpha", "add")
        assert set(add) == {"name", "server", "original_name", "description", "score", "skill_ids"}
        assert "X-Search-Incomplete" not in answer.headers

        only_beta = await admin.http.get(f"{API}/tools/search", params={"q": "add", "server": "beta"})
        assert {hit["server"] for hit in only_beta.json()} == {"beta"}
        assert (await admin.http.get(f"{API}/tools/search", params={"q": ""})).status_code == 422
        assert (await admin.http.get(f"{API}/tools/search", params={"q": "add", "k": 0})).status_code == 422


async def test_tool_search_made_before_the_index_is_complete_says_so_in_its_headers(
    sqlite_db: Database, upstream_url: str
) -> None:
    settings = admin_settings(sqlite_db, http_server("alpha", upstream_url), list_wait_secs=0)
    embedder = GatedEmbedder("integers")  # the text of alpha.add ("Add two integers.") blocks its embedding
    search = ToolSearch(settings.search, embedder, cache=EmbeddingCache(None))
    headers = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
    async with (
        Gateway(settings, search=search) as gateway,
        served_app(build_admin_app(gateway, token=TEST_ADMIN_TOKEN)) as base_url,
        httpx.AsyncClient(base_url=base_url, headers=headers, timeout=SETTLE_SECS) as http,
    ):
        try:
            await gateway.wait_settled(SETTLE_SECS)
            with anyio.fail_after(SETTLE_SECS):
                await anyio.to_thread.run_sync(lambda: embedder.entered.wait(SETTLE_SECS))
            early = await http.get(f"{API}/tools/search", params={"q": "add two integers", "k": 3})
            assert early.status_code == 200
            assert early.json()[0]["name"] == "alpha.add", "ranked by its words"
            pending = int(early.headers["X-Search-Pending"])
            assert pending > 0
            assert early.headers["X-Search-Incomplete"] == (
                f"search index incomplete: {pending} tools not indexed yet, ranked by words only; search again"
            )
            # The CLI passes the note on, on stderr, and keeps --json output a plain list.
            told = await run_cli(
                "tools", "search", "add two integers", "-k", "3", "--json",
                "--gateway", base_url, "--token", TEST_ADMIN_TOKEN,
            )  # fmt: skip
            assert told.exit_code == 0, told.stderr
            assert json.loads(told.stdout)[0]["name"] == "alpha.add"
            assert "search index incomplete:" in told.stderr and "search again" in told.stderr
            embedder.release.set()
            await gateway.wait_until(gateway.index_ready, timeout_secs=SETTLE_SECS)
            later = await http.get(f"{API}/tools/search", params={"q": "add two integers", "k": 3})
            assert "alpha.add" in {hit["name"] for hit in later.json()}
            assert "X-Search-Incomplete" not in later.headers
            assert "X-Search-Pending" not in later.headers
            quiet = await run_cli(
                "tools", "search", "add two integers", "--gateway", base_url, "--token", TEST_ADMIN_TOKEN
            )
            assert quiet.exit_code == 0 and "alpha.add" in quiet.stdout
            assert "incomplete" not in quiet.stderr
        finally:
            embedder.release.set()


async def test_skills_are_listed_with_their_tools(sqlite_db: Database, upstream_url: str) -> None:
    async with serve_admin(admin_settings(sqlite_db, http_server("alpha", upstream_url))) as admin:
        await admin.settle()
        skills = await admin.http.get(f"{API}/skills")
        assert skills.status_code == 200
        assert skills.json(), "the packaged default skills"
        skill_id = skills.json()[0]["id"]
        tools = await admin.http.get(f"{API}/skills/{skill_id}/tools")
        assert tools.status_code == 200
        assert all(skill_id in tool["skill_ids"] for tool in tools.json())
        unknown = await admin.http.get(f"{API}/skills/no_such_skill/tools")
        assert (unknown.status_code, unknown.json()) == (404, {"detail": "Skill not found: no_such_skill"})
