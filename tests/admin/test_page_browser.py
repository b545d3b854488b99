"""The web page in a real headless Chromium (Playwright, Debian's ``/usr/bin/chromium``) over a real gateway."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, Route, async_playwright, expect

from mcp_aggregator.settings import ServerConfig, Transport
from tests.conftest import REPO, stdio_fixture
from tests.serve.http_face import API, Face, face_settings, http_face

CHROMIUM = "/usr/bin/chromium"
BROWSER = CHROMIUM if Path(CHROMIUM).exists() else shutil.which("chromium")
WAIT_MS = 30_000
expect.set_options(timeout=WAIT_MS)


@pytest.fixture
async def page() -> AsyncIterator[Page]:
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
            context = await browser.new_context()
            page = await context.new_page()
            page.set_default_timeout(WAIT_MS)
            yield page
        finally:
            await browser.close()


async def sign_in(page: Page, face: Face) -> None:
    await page.goto(face.sign_in_link)
    await expect(page.locator("#state")).to_contain_text("servers:")


async def test_the_printed_link_signs_in_and_leaves_no_token_in_the_address_bar(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await sign_in(page, face)
        assert "#token" not in page.url
        assert await page.evaluate("localStorage.getItem('mcpAggregatorToken')") == face.admin_token
        await expect(page.locator("tr[data-server=alpha]")).to_contain_text("CONNECTED")
        await expect(page.locator("#updated")).to_contain_text("updated")


async def test_a_registered_server_connects_and_its_tool_answers_in_the_playground(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        await sign_in(page, face)
        await page.fill("#r-name", "beta")
        await page.fill("#r-target", sys.executable)
        await page.fill("#r-args", "-m\ntests.upstream.fixture_server\nstdio\n--name\nbeta")
        await page.fill("#r-cwd", str(REPO))
        await page.fill("#r-description", "A fixture server")
        await page.click("#register button[type=submit]")
        row = page.locator("tr[data-server=beta]")
        await expect(row).to_contain_text("CONNECTED")  # the page updates by itself

        await row.get_by_role("button", name="beta").click()
        tools = page.locator("#detail-tools")
        await expect(tools.locator("tr[data-tool='beta.add']")).to_contain_text("Add two integers.")
        await tools.locator("tr[data-tool='beta.add']").get_by_role("button", name="Try").click()
        await expect(page.locator("#play-name")).to_have_text("beta.add")
        await page.fill("#play-a", "2")
        await page.fill("#play-b", "40")
        await page.click("#playground button[type=submit]")
        await expect(page.locator("#play-result")).to_contain_text('"total": 42')

        await tools.locator("tr[data-tool='beta.fail']").get_by_role("button", name="Try").click()
        await page.fill("#play-message", "it broke")
        await page.click("#playground button[type=submit]")
        await expect(page.locator("#play-result")).to_contain_text("tool error")
        assert await page.locator("#play-result").get_attribute("class") == "is-error"


async def test_a_held_tool_is_shown_with_its_diff_and_approved_from_the_page(page: Page, tmp_path: Path) -> None:
    rug = ServerConfig(
        name="rug", transport=Transport.STDIO, command=sys.executable,
        args=("-m", "tests.upstream.rug_pull_server"), cwd=str(REPO),
    )  # fmt: skip
    async with http_face(face_settings(tmp_path, rug)) as face:
        await face.gateway.wait_settled(30)
        async with face.admin() as http:
            rewritten = await http.post(
                f"{API}/tools/call", json={"name": "rug.rewrite", "arguments": {"description": "Changed."}}
            )
            assert rewritten.status_code == 200, rewritten.text
        await sign_in(page, face)
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
        profiles = page.locator("#profiles")
        await expect(profiles).to_contain_text("/mcp/timekeeper")
        await expect(profiles.locator("table").nth(1)).to_contain_text("bot")
        assert "bot-token" not in await profiles.inner_text()


async def test_the_audit_is_filtered_from_the_page(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, stdio_fixture("alpha"))) as face:
        await face.gateway.wait_settled(30)
        async with face.admin() as http:
            for text in ("one", "two"):
                await http.post(f"{API}/tools/call", json={"name": "alpha.echo", "arguments": {"text": text}})
            await http.post(f"{API}/tools/call", json={"name": "alpha.add", "arguments": {"a": 1, "b": 2}})
        assert face.gateway.audit is not None
        await face.gateway.audit.flush()
        await sign_in(page, face)
        rows = page.locator("#audit tr")
        await expect(rows).to_have_count(3)
        await page.fill("#audit-filters input[name=tool]", "add")
        await page.click("#audit-filters button[type=submit]")
        await expect(rows).to_have_count(1)
        await expect(rows.first).to_contain_text("alpha")
        await expect(rows.first).to_contain_text("ok")
        await page.fill("#audit-filters input[name=tool]", "nothing-like-this")
        await page.click("#audit-filters button[type=submit]")
        await expect(page.locator("#audit-note")).to_have_text("no calls match")


async def test_the_audit_view_says_when_the_gateway_keeps_no_audit_trail(page: Page, tmp_path: Path) -> None:
    async with http_face(face_settings(tmp_path, sections={"audit": {"enabled": False}})) as face:
        await sign_in(page, face)
        await expect(page.locator("#audit-note")).to_contain_text("the audit trail is off")


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
            row = page.locator("tr[data-server=protected]")
            await expect(row).to_contain_text("sign_in_required")
            async with page.expect_popup() as popup_info:
                await row.get_by_role("button", name="Sign in").click()
            popup = await popup_info.value
            await expect(popup.locator("p")).to_have_text("sign in here")
            assert opened and opened[0].startswith(f"{world.issuer}/authorize?")
            await expect(page.locator("#message")).to_contain_text("sign in to protected in the new tab")
