"""``/series``, ``/events`` (with its tickets), ``/settings`` and the audit's time range, over a
real gateway and a real HTTP upstream."""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import anyio.lowlevel
import httpx
import orjson

from mcp_aggregator.admin.event_tickets import TICKET_SECS, issue_ticket, ticket_valid
from tests.admin.conftest import API, TEST_ADMIN_TOKEN, AdminClient, admin_settings, http_server, serve_admin
from tests.registry.conftest import Database

WAIT_SECS = 30


async def call(admin: AdminClient, text: str) -> None:
    answer = await admin.http.post(f"{API}/tools/call", json={"name": "web.echo", "arguments": {"text": text}})
    assert answer.status_code == 200, answer.text


async def test_the_series_counts_each_call_for_its_server_and_tool(sqlite_db: Database, upstream_url: str) -> None:
    async with serve_admin(admin_settings(sqlite_db, http_server("web", upstream_url))) as admin:
        await admin.settle()
        for text in ("one", "two", "three"):
            await call(admin, text)
        whole = (await admin.http.get(f"{API}/series", params={"minutes": 5})).json()
        assert whole["minutes"] == 5 and whole["minute_secs"] == 60
        assert sum(whole["total"]["calls"]) == 3
        assert sum(whole["servers"]["web"]["calls"]) == 3
        assert whole["total"]["p95_ms"][-1] > 0
        assert whole["states"]["CONNECTED"][-1] == 1
        one = (await admin.http.get(f"{API}/series", params={"server": "web", "minutes": 1})).json()
        assert one["tools"]["echo"]["calls"] == [3]


async def test_the_series_refuses_a_bad_window_and_an_unknown_server(sqlite_db: Database) -> None:
    async with serve_admin(admin_settings(sqlite_db)) as admin:
        for minutes in ("0", "61", "an hour"):
            answer = await admin.http.get(f"{API}/series", params={"minutes": minutes})
            assert answer.status_code == 422, answer.text
            assert "minutes" in answer.text
        missing = await admin.http.get(f"{API}/series", params={"server": "nope"})
        assert missing.status_code == 404
        assert "no server named 'nope'" in missing.text
        assert (await admin.http.get(f"{API}/series", headers={"Authorization": "Bearer wrong"})).status_code == 401


def test_a_ticket_is_good_for_a_minute_under_its_own_token_only() -> None:
    ticket = issue_ticket(TEST_ADMIN_TOKEN, now=lambda: 1000.0)
    assert ticket_valid(ticket, TEST_ADMIN_TOKEN, now=lambda: 1000.0 + TICKET_SECS)
    assert not ticket_valid(ticket, TEST_ADMIN_TOKEN, now=lambda: 1001.0 + TICKET_SECS)
    assert not ticket_valid(ticket, "another-admin-token-0123456789", now=lambda: 1000.0)
    forged = f"{2000 + TICKET_SECS}.{ticket.split('.')[1]}"
    assert not ticket_valid(forged, TEST_ADMIN_TOKEN, now=lambda: 1000.0)
    for junk in ("", ".", "abc.def", "1e99.00"):
        assert not ticket_valid(junk, TEST_ADMIN_TOKEN)


async def events_of(http: httpx.AsyncClient, params: dict[str, str]) -> AsyncIterator[tuple[str, dict[str, object]]]:
    async with http.stream("GET", f"{API}/events", params=params) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
        kind = ""
        async for line in stream.aiter_lines():
            if line.startswith("event: "):
                kind = line.removeprefix("event: ")
            elif line.startswith("data: "):
                yield kind, orjson.loads(line.removeprefix("data: "))


async def test_the_event_stream_opens_with_a_ticket_and_carries_calls_and_state_changes(
    sqlite_db: Database, upstream_url: str
) -> None:
    async with serve_admin(admin_settings(sqlite_db, http_server("web", upstream_url))) as admin:
        await admin.settle()
        ticket = (await admin.http.post(f"{API}/events/ticket")).json()
        assert ticket["expires_in"] == TICKET_SECS
        async with httpx.AsyncClient(base_url=str(admin.http.base_url), timeout=WAIT_SECS) as browser:
            seen: list[tuple[str, dict[str, object]]] = []
            with anyio.fail_after(WAIT_SECS):
                async with anyio.create_task_group() as tg:

                    async def watch() -> None:
                        async for kind, data in events_of(browser, {"ticket": ticket["ticket"]}):
                            seen.append((kind, data))
                            if kind == "state" and data["status"] == "DISCONNECTED":
                                tg.cancel_scope.cancel()

                    tg.start_soon(watch)
                    while not admin.gateway.events.watched:
                        await anyio.lowlevel.checkpoint()
                    await call(admin, "live")
                    server_id = await admin.server_id("web")
                    gone = await admin.http.post(f"{API}/servers/{server_id}/disconnect", json={"force": True})
                    assert gone.status_code == 200, gone.text
        calls = [data for kind, data in seen if kind == "call"]
        assert calls and calls[0]["server"] == "web" and calls[0]["tool"] == "echo" and calls[0]["outcome"] == "ok"
        assert "live" not in str(seen)  # arguments never travel on the stream
        assert ("state", "DISCONNECTED") in [(kind, data.get("status")) for kind, data in seen]


async def test_the_event_stream_refuses_a_missing_or_bad_ticket(sqlite_db: Database) -> None:
    async with (
        serve_admin(admin_settings(sqlite_db)) as admin,
        httpx.AsyncClient(base_url=str(admin.http.base_url)) as browser,
    ):
        for params in ({}, {"ticket": "123.abc"}, {"ticket": issue_ticket("not-the-admin-token-0123456789")}):
            assert (await browser.get(f"{API}/events", params=params)).status_code == 401
        ticket = (await admin.http.post(f"{API}/events/ticket")).json()["ticket"]
        # A ticket opens the stream only: not the rest of the API.
        assert (await browser.get(f"{API}/servers", params={"ticket": ticket})).status_code == 401
        assert (await browser.post(f"{API}/events/ticket", params={"ticket": ticket})).status_code == 401


async def test_the_audit_refuses_an_unknown_outcome_and_a_reversed_time_range(sqlite_db: Database) -> None:
    async with serve_admin(admin_settings(sqlite_db)) as admin:
        for path in ("/audit", "/audit/export"):
            unknown = await admin.http.get(f"{API}{path}", params={"outcome": "fine"})
            assert unknown.status_code == 422
            assert "outcome" in unknown.text and "'ok', 'error' or 'denied'" in unknown.text
            reversed_range = await admin.http.get(
                f"{API}{path}", params={"since": "2026-11-28T12:00:00Z", "until": "2026-11-28T11:00:00Z"}
            )
            assert reversed_range.status_code == 422
            assert "until must be later than since" in reversed_range.text


async def test_the_audit_keeps_calls_inside_the_time_range(sqlite_db: Database, upstream_url: str) -> None:
    async with serve_admin(admin_settings(sqlite_db, http_server("web", upstream_url))) as admin:
        await admin.settle()
        await call(admin, "ranged")
        assert admin.gateway.audit is not None
        await admin.gateway.audit.flush()
        items = (await admin.http.get(f"{API}/audit")).json()["items"]
        stamp = items[0]["time"]
        inside = await admin.http.get(f"{API}/audit", params={"since": stamp, "until": "2999-01-01T00:00:00Z"})
        assert [i["tool"] for i in inside.json()["items"]] == ["echo"]
        before = await admin.http.get(f"{API}/audit", params={"until": stamp})
        assert before.json()["items"] == []


async def test_settings_show_their_source_and_hide_secrets(sqlite_db: Database) -> None:
    settings = admin_settings(sqlite_db, admin_token="a-configured-admin-token-0123456789")
    async with serve_admin(settings) as admin:
        body = (await admin.http.get(f"{API}/settings")).json()
    rows = {row["path"]: row for row in body["settings"]}
    assert rows["serve.admin_token"] == {
        "path": "serve.admin_token",
        "value": "(secret)",
        "source": "file",
        "secret": True,
    }
    assert rows["registry.database_url"]["source"] == "file"
    assert rows["health.interval_secs"]["source"] == "default"
    assert "a-configured-admin-token" not in str(body)
