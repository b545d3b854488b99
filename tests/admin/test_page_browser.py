"""The web page in a real headless Chromium (Playwright, Debian's ``/usr/bin/chromium``) over a real gateway."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, Route, async_playwright, expect

from mcp_aggregator.settings import ServerConfig, Transport
from tests.approvals.test_approvals_through_gateway import Calls, client_of, reached
from tests.caching.test_result_cache_through_gateway import tally_upstream
from tests.conftest import REPO, stdio_fixture
from tests.serve.http_face import API, Face, face_settings, http_face

CHROMIUM = "/usr/bin/chromium"
BROWSER = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
WAIT_MS = 30_000
SCREENSHOTS_ENV = "MCP_AGGREGATOR_SCREENSHOTS"
"""A folder to save the documentation's screenshots in (docs/images); unset, they go to tmp."""
expect.set_options(timeout=WAIT_MS)
QUICK_RECONNECT = {"health": {"reconnect_backoff_base_secs": 0.2}}


pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, so that they can share one browser."""


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Browser]:
    """One Chromium for the module: its start (and Playwright's driver) cost more CPU than most
    of these tests; each test still gets a fresh context of its own (cookies, storage)."""
    if BROWSER is None:
        message = f"{CHROMIUM} is missing; run ./scripts/bootstrap.sh as root, or apt-get install chromium"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=BROWSER,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-dev-shm-usage", "--no-first-run"],
        )  # fmt: skip
        try:
            yield browser
        finally:
            await browser.close()


@pytest_asyncio.fixture(loop_scope="module")
async def page(browser: Browser) -> AsyncIterator[Page]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    try:
        page = await context.new_page()
        page.set_default_timeout(WAIT_MS)
        yield page
    finally:
        await context.close()


async def sign_in(page: Page, face: Face) -> None:
    await page.goto(face.sign_in_link)
    await expect(page.locator("#state")).to_contain_text("servers:")
    await expect(page.locator("#live")).to_have_text("live")


async def go(page: Page, address: str) -> None:
    await page.evaluate("address => { location.hash = address; }", address)


async def calls(face: Face, *arguments: tuple[str, dict[str, object]]) -> None:
    async with face.admin() as http:
        for name, args in arguments:
            answer = await http.post(f"{API}/tools/call", json={"name": name, "arguments": args})
            assert answer.status_code == 200, answer.text


def screenshot_path(tmp_path: Path, name: str) -> Path:
    folder = os.environ.get(SCREENSHOTS_ENV)
    return (Path(folder) if folder else tmp_path) / name


async def test_the_printed_link_signs_in_opens_the_overview_and_leaves_no_token_in_the_address_bar(
    page: Page, tmp_path: Path
) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await sign_in(page, face)
        assert "#token" not in page.url and page.url.endswith("#/overview")
        assert await page.evaluate("localStorage.getItem('mcpAggregatorToken')") == face.admin_token
        await expect(page.locator("#attention")).to_contain_text("All 1 servers are serving.")
        await expect(page.locator("#updated")).to_contain_text("updated")
        await page.locator("#nav").get_by_role("link", name="Servers").click()
        await expect(page.locator("#servers tr[data-server=alpha]")).to_contain_text("CONNECTED")


async def test_every_view_has_its_address_and_the_back_button_returns_to_the_last_one(
    page: Page, tmp_path: Path
) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await sign_in(page, face)
        headings = {
            "servers": "Servers", "tools": "Tools", "playground": "Playground", "registry": "Install from a registry",
            "profiles": "Profiles and clients", "audit": "Audit", "guardrails": "Guardrails",
            "approvals": "Approvals", "settings": "Settings", "overview": "Overview",
        }  # fmt: skip
        for view, heading in headings.items():
            await page.locator(f"#nav a[data-view={view}]").click()
            assert page.url.endswith(f"#/{view}")
            visible = page.locator("section.view:not([hidden]) h1")
            await expect(visible).to_have_text(heading)
            await expect(page.locator(f"#nav a[data-view={view}]")).to_have_attribute("aria-current", "page")
        await page.go_back()
        await expect(page.locator("section.view:not([hidden]) h1")).to_have_text("Settings")
        await page.goto(f"{face.base_url}/#/servers/alpha")
        await expect(page.locator("#server-title")).to_have_text("alpha")
        await expect(page.locator("#server-status")).to_contain_text("CONNECTED")
        # The views are reachable from the keyboard alone, from a fresh load.
        await page.reload()
        await expect(page.locator("#server-status")).to_contain_text("CONNECTED")
        reached = []
        for _ in range(4):
            await page.keyboard.press("Tab")
            reached.append(await page.evaluate("document.activeElement.textContent"))
        assert "Skip to content" in reached and "Overview" in reached, reached
        for _ in range(6):
            await page.keyboard.press("Tab")
            if await page.evaluate("document.activeElement.textContent") == "Audit":
                break
        await page.keyboard.press("Enter")
        assert page.url.endswith("#/audit")
        await expect(page.locator("section.view:not([hidden]) h1")).to_have_text("Audit")


async def test_a_server_killed_and_restarted_shows_on_the_open_page_without_a_reload(
    page: Page, tmp_path: Path
) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"), sections=QUICK_RECONNECT)) as face:
        await face.gateway.wait_settled(30)
        await sign_in(page, face)
        connection = face.gateway.supervisors["alpha"].connection
        # The process the gateway started (in a sandbox the server sees another pid of its own).
        pid = connection.pipe.pid if connection is not None and connection.pipe is not None else None
        assert pid is not None
        navigations: list[str] = []
        page.on("framenavigated", lambda frame: navigations.append(frame.url))
        os.kill(pid, signal.SIGKILL)
        events = page.locator("#feed")
        await expect(events).to_contain_text(re.compile(r"alpha → (ERROR|CONNECTING|DEGRADED|DISCONNECTED)"))
        await expect(events).to_contain_text("alpha → CONNECTED")
        await expect(page.locator("#attention")).to_contain_text("All 1 servers are serving.")
        assert navigations == []  # no reload


async def test_the_calls_chart_grows_as_calls_are_made(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        await sign_in(page, face)
        chart = page.locator("#card-calls .chart-box")
        await expect(chart).to_have_attribute("data-total", "0")
        await calls(face, ("alpha.echo", {"text": "one"}), ("alpha.echo", {"text": "two"}))
        await expect(chart).to_have_attribute("data-total", "2")
        await expect(page.locator("#feed")).to_contain_text("alpha.echo ok")
        await calls(face, ("alpha.add", {"a": 1, "b": 2}))
        await expect(chart).to_have_attribute("data-total", "3")
        assert await chart.locator("svg rect").count() >= 1
        await page.screenshot(path=screenshot_path(tmp_path, "overview.png"), full_page=True)


async def test_a_registered_server_connects_and_its_tool_answers_in_the_playground(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        await sign_in(page, face)
        await go(page, "#/servers")
        await page.fill("#r-name", "beta")
        await page.fill("#r-target", sys.executable)
        await page.fill("#r-args", "-m\ntests.upstream.fixture_server\nstdio\n--name\nbeta")
        await page.fill("#r-cwd", str(REPO))
        await page.fill("#r-description", "A fixture server")
        await page.click("#register button[type=submit]")
        row = page.locator("#servers tr[data-server=beta]")
        await expect(row).to_contain_text("CONNECTED")  # the page updates by itself

        await row.get_by_role("link", name="beta").click()
        assert page.url.endswith("#/servers/beta")
        tools = page.locator("#detail-tools")
        await expect(tools.locator("tr[data-tool='beta.add']")).to_contain_text("Add two integers.")
        await expect(page.locator("#server-era")).to_contain_text("20")
        await tools.locator("tr[data-tool='beta.add']").get_by_role("button", name="Try").click()
        await expect(page.locator("#play-name")).to_have_text("beta.add")
        assert page.url.endswith("#/playground/beta.add")
        await page.fill("#play-a", "2")
        await page.fill("#play-b", "40")
        await page.click("#playground button[type=submit]")
        await expect(page.locator("#play-result")).to_contain_text('"total": 42')

        await page.reload()  # the address alone brings the tool back
        await expect(page.locator("#play-name")).to_have_text("beta.add")
        await go(page, "#/playground/beta.fail")
        await expect(page.locator("#play-name")).to_have_text("beta.fail")
        await page.fill("#play-message", "it broke")
        await page.click("#playground button[type=submit]")
        await expect(page.locator("#play-result")).to_contain_text("tool error")
        assert await page.locator("#play-result").get_attribute("class") == "is-error"


async def test_removing_a_server_asks_first_and_cancelling_keeps_it(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await sign_in(page, face)
        await go(page, "#/servers/alpha")
        await expect(page.locator("#server-status")).to_contain_text("CONNECTED")
        await page.locator("#server-actions").get_by_role("button", name="Remove").click()
        dialog = page.locator("#confirm")
        await expect(dialog).to_be_visible()
        await expect(dialog).to_contain_text("Remove alpha and its tools? This cannot be undone.")
        await dialog.get_by_role("button", name="Cancel").click()
        await expect(dialog).to_be_hidden()
        assert "alpha" in face.gateway.supervisors
        await page.locator("#server-actions").get_by_role("button", name="Remove").click()
        await dialog.get_by_role("button", name="Remove").click()
        await expect(page.locator("#message")).to_have_text("alpha removed")
        assert page.url.endswith("#/servers")
        await expect(page.locator("#servers tr[data-server=alpha]")).to_have_count(0)


async def test_a_failing_servers_view_shows_its_error_history_and_sandbox(page: Page, tmp_path: Path) -> None:
    broken = ServerConfig(
        name="broken", transport=Transport.STDIO, command=sys.executable,
        args=("-c", "import sys; print('cannot open the database: permission denied', file=sys.stderr); sys.exit(3)"),
    )  # fmt: skip
    sections = {"health": {"reconnect_max_attempts": 1, "reconnect_backoff_base_secs": 0}}
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"), broken, sections=sections)) as face:
        await face.gateway.wait_settled(30)
        await sign_in(page, face)
        attention = page.locator("#attention")
        await expect(attention.locator("tr[data-server=broken]")).to_contain_text("ERROR")
        await attention.get_by_role("link", name="broken").click()
        await expect(page.locator("#server-status")).to_contain_text("ERROR")
        await expect(page.locator("#server-error")).not_to_have_text("none")
        await expect(page.locator("#server-history")).to_contain_text("ERROR")
        await expect(page.locator("#detail-sandbox")).to_contain_text("sandbox")
        await expect(page.locator("#server-stderr")).to_contain_text("cannot open the database: permission denied")
        await page.screenshot(path=screenshot_path(tmp_path, "failing-server.png"), full_page=True)


async def test_a_held_tool_is_shown_with_its_diff_and_approved_from_the_page(page: Page, tmp_path: Path) -> None:
    rug = ServerConfig(
        name="rug", transport=Transport.STDIO, command=sys.executable,
        args=("-m", "tests.upstream.rug_pull_server"), cwd=str(REPO),
    )  # fmt: skip
    async with http_face(face_settings(tmp_path, rug)) as face:
        await face.gateway.wait_settled(30)
        await calls(face, ("rug.rewrite", {"description": "Changed."}))
        await sign_in(page, face)
        await expect(page.locator("#card-held .big")).to_have_text("1")
        await go(page, "#/tools")
        held = page.locator("#held")
        await expect(held).to_contain_text("rug.weather: definition changed since it was approved")
        await expect(held.locator(".add")).to_contain_text('"description": "Changed."')
        await held.get_by_role("button", name="Approve weather").click()
        await expect(page.locator("#message")).to_have_text("approved: weather")
        await expect(held).to_have_text("none")


async def test_profiles_and_their_clients_are_listed(page: Page, tmp_path: Path) -> None:
    sections = {
        "profiles": [{"name": "timekeeper", "servers": ["alpha"]}],
        "clients": [{"name": "bot", "token": "bot-token-0123456789abcdef", "profiles": ["timekeeper"]}],
    }
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"), sections=sections)) as face:
        await sign_in(page, face)
        await go(page, "#/profiles")
        profiles = page.locator("#profiles")
        await expect(profiles).to_contain_text("/mcp/timekeeper")
        await expect(profiles.locator("table").nth(1)).to_contain_text("bot")
        assert "bot-token" not in await profiles.inner_text()
        await go(page, "#/settings")
        secret = page.locator("tr[data-setting='clients[0].token']")
        await expect(secret).to_contain_text("(secret)")
        await expect(secret).to_contain_text("file")
        await expect(page.locator("tr[data-setting='health.interval_secs']")).to_contain_text("default")
        assert "bot-token" not in await page.locator("#settings-table").inner_text()


async def test_the_audit_is_filtered_paged_exported_and_refuses_bad_filters(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        await calls(
            face, ("alpha.echo", {"text": "one"}), ("alpha.echo", {"text": "two"}), ("alpha.add", {"a": 1, "b": 2})
        )
        assert face.gateway.audit is not None
        await face.gateway.audit.flush()
        await sign_in(page, face)
        await go(page, "#/audit")
        rows = page.locator("#audit tr")
        await expect(rows).to_have_count(3)
        await page.fill("#audit-filters input[name=tool]", "add")
        await page.click("#audit-filters button[type=submit]")
        await expect(rows).to_have_count(1)
        assert page.url.endswith("#/audit?tool=add")
        await expect(rows.first).to_contain_text("alpha")
        await expect(rows.first).to_contain_text("ok")
        await rows.first.click()
        await expect(page.locator("#audit-detail-title")).to_have_text("tools/call alpha.add: ok")
        await page.screenshot(path=screenshot_path(tmp_path, "audit.png"), full_page=True)
        async with page.expect_download() as download_info:
            await page.click("#audit-export")
        download = await download_info.value
        exported = (await anyio.Path(await download.path()).read_text()).splitlines()
        assert len(exported) == 1 and '"tool":"add"' in exported[0]
        await page.go_back()
        await expect(rows).to_have_count(3)
        await page.fill("#audit-filters input[name=tool]", "nothing-like-this")
        await page.click("#audit-filters button[type=submit]")
        await expect(page.locator("#audit-note")).to_have_text("no calls match")

        await page.click("#audit-clear")
        await page.fill("#audit-filters input[name=outcome]", "fine")
        await page.click("#audit-filters button[type=submit]")
        note = page.locator("#audit-note")
        await expect(note).to_contain_text("refused: outcome")
        assert await note.get_attribute("class") == "error"
        await expect(rows).to_have_count(0)
        await go(page, "#/audit?since=2026-11-28T12:00:00Z&until=2026-11-28T11:00:00Z")
        await expect(note).to_contain_text("until must be later than since")


async def test_the_audit_view_says_when_the_gateway_keeps_no_audit_trail(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, sections={"audit": {"enabled": False}})) as face:
        await sign_in(page, face)
        await go(page, "#/audit")
        await expect(page.locator("#audit-note")).to_contain_text("the audit trail is off")
        await go(page, "#/approvals")
        await expect(page.locator("#approvals-note")).to_contain_text("approvals are not configured")


async def test_a_finding_shows_in_the_guardrails_view_by_rule_and_server(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        await sign_in(page, face)
        await go(page, "#/guardrails")
        await calls(face, ("alpha.echo", {"text": "key AKIAJ7Q3ZKXW5BNM2LPT"}))
        await expect(page.locator("#findings-feed")).to_contain_text("secrets (mask) on alpha.echo, results")
        await expect(page.locator("#findings-by-rule tr[data-key=secrets]")).to_contain_text("1")
        await expect(page.locator("#findings-by-server tr[data-key=alpha]")).to_contain_text("1")
        assert "AKIAJ7Q3ZKXW5BNM2LPT" not in await page.locator("main").inner_text()


async def test_the_page_fits_a_phone_and_switches_to_dark(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await page.set_viewport_size({"width": 390, "height": 844})
        await sign_in(page, face)
        for view in ("overview", "servers", "audit", "settings"):
            await go(page, f"#/{view}")
            await expect(page.locator(f"section.view[data-view={view}]")).to_be_visible()
            width = await page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, f"{view} is {width} px wide"
        await page.click("#theme")
        theme = await page.evaluate("document.documentElement.dataset.theme")
        assert theme in {"dark", "light"}
        background = await page.evaluate("getComputedStyle(document.body).backgroundColor")
        await page.click("#theme")
        assert await page.evaluate("getComputedStyle(document.body).backgroundColor") != background


async def test_a_server_that_wants_a_sign_in_gets_a_button_that_opens_the_authorization_link(
    page: Page, tmp_path: Path
) -> None:
    oauth_servers = pytest.importorskip("tests.upstream.oauth_servers", reason="upstream sign-in is not in this build")
    async with oauth_servers.oauth_world() as world:
        server = ServerConfig.model_validate(
            {"name": "protected", "transport": "http", "base_url": world.mcp_url, "auth": "oauth"}
        )
        async with http_face(face_settings(tmp_path, server)) as face:
            await face.gateway.wait_settled(30)
            opened: list[str] = []

            async def authorize(route: Route) -> None:
                opened.append(route.request.url)
                await route.fulfill(status=200, content_type="text/html", body="<p>sign in here</p>")

            await page.context.route(f"{world.issuer}/authorize**", authorize)
            await sign_in(page, face)
            await go(page, "#/servers")
            row = page.locator("#servers tr[data-server=protected]")
            await expect(row).to_contain_text("sign_in_required")
            async with page.expect_popup() as popup_info:
                await row.get_by_role("button", name="Sign in").click()
            popup = await popup_info.value
            await expect(popup.locator("p")).to_have_text("sign in here")
            assert opened and opened[0].startswith(f"{world.issuer}/authorize?")
            await expect(page.locator("#message")).to_contain_text("sign in to protected in the new tab")


STOP_TIMERS = "() => { const last = setTimeout(() => {}, 0); for (let id = 1; id <= last; id++) clearInterval(id); }"
"""Timer ids count up from 1 and clearInterval clears a timeout too, so this stops every timer."""
TALLIES = {"name": "tallies", "tools": ["tally.tally"], "ask": "admin", "timeout_secs": 300}


async def test_a_call_held_for_approval_shows_on_the_open_page_and_is_approved_or_denied_there(
    page: Page, tmp_path: Path
) -> None:
    """The seam between a held call and the page: a real client's call to a real upstream
    (which counts what reaches it) is held by a rule, the open page hears of it and of each
    decision through the event stream alone, and what a person clicks there decides the call."""
    settings = face_settings(tmp_path, tally_upstream(), sections={"approvals": [TALLIES]})
    async with http_face(settings) as face:
        await face.gateway.wait_settled(30)
        await sign_in(page, face)
        await go(page, "#/approvals")
        note = page.locator("#approvals-note")
        await expect(note).to_have_text("no calls wait for a decision")
        # Every timer the page set is stopped (its periodic refreshes and the view's slow poll),
        # so only the event stream can bring a change to the open page.
        await page.evaluate(STOP_TIMERS)
        await page.evaluate("window.sameDocument = true")  # a reload would lose it
        rows = page.locator("#approvals tr")
        async with client_of(face.mcp_url, None) as client:
            async with anyio.create_task_group() as tg:
                held_calls = Calls(client, tg)
                held_calls.start("ship-it")
                row = rows.filter(has_text='"label":"ship-it"')
                await expect(row).to_contain_text("pending")
                await expect(row).to_contain_text("tallies")
                await row.get_by_role("button", name="Approve").click()
                await expect(page.locator("#message")).to_have_text("approved: tally.tally")
                await expect(note).to_have_text("no calls wait for a decision")
            assert held_calls.answers == {"ship-it": "ship-it #1"}

            async with anyio.create_task_group() as tg:
                held_calls = Calls(client, tg)
                held_calls.start("drop-it")
                row = rows.filter(has_text='"label":"drop-it"')
                await expect(row).to_contain_text("pending")
                held = await row.get_attribute("data-approval")
                assert held is not None
                await go(page, f"#/approvals/{held}")  # a held call has an address of its own
                await expect(rows).to_have_count(1)
                await expect(rows.first).to_have_class(re.compile("selected"))
                await rows.first.get_by_role("button", name="Deny").click()
                await expect(page.locator("#confirm")).to_contain_text("Deny tally.tally for an anonymous client?")
                await page.fill("#confirm-reason", "not on main")
                await page.locator("#confirm").get_by_role("button", name="Deny").click()
                await expect(page.locator("#message")).to_have_text("denied: tally.tally")
                await expect(rows.first).to_contain_text("denied")
                await expect(rows.first).to_contain_text("by admin: not on main")
            assert "was denied: not on main" in held_calls.answers["drop-it"]
            assert await reached(client) == 1  # the upstream saw the approved call alone
        assert await page.evaluate("window.sameDocument") is True  # no reload
        async with face.admin() as http:
            decided = (await http.get(f"{API}/approvals", params={"status": "all"})).json()["approvals"]
        assert [(a["status"], a["arguments"], a["decided_by"], a["via"]) for a in decided] == [
            ("denied", {"label": "drop-it"}, "admin", "page"), ("approved", {"label": "ship-it"}, "admin", "page"),
        ]  # fmt: skip
        await go(page, "#/approvals/no-such-call")
        await expect(note).to_have_text("no held call no-such-call is known to this gateway")
        await expect(rows).to_have_count(0)
