"""The web page's Sign in button, in a real headless Chromium, against the test authorization server."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.admin.test_page_browser import browser as browser
from tests.admin.test_page_browser import go
from tests.admin.test_page_browser import page as page
from tests.admin.test_page_browser import sign_in as open_page
from tests.credentials.test_sign_in_flow import SETTLE, protected
from tests.serve.http_face import face_settings, http_face
from tests.upstream.oauth_servers import USERS, oauth_world

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The browser fixture lives on the module's event loop."""


async def test_the_sign_in_button_opens_the_authorization_server_and_the_row_turns_signed_in(
    page: Page, tmp_path: Path
) -> None:
    async with oauth_world() as world, http_face(face_settings(tmp_path, protected(world))) as face:
        await face.gateway.wait_settled(SETTLE)
        await open_page(page, face)
        await go(page, "#/servers")
        row = page.locator("#servers tr[data-server=protected]")
        await expect(row).to_contain_text("sign_in_required")
        async with page.context.expect_page() as opened:
            await row.get_by_role("button", name="Sign in").click()
        popup = await opened.value
        await popup.locator("input[name=username]").fill("alice")
        await popup.locator("input[name=password]").fill(USERS["alice"])
        await popup.get_by_role("button", name="Sign in").click()
        await expect(popup.locator("h1")).to_have_text("Signed in to protected")
        await expect(popup.locator("#message")).to_contain_text("connected protected")
        await expect(row).to_contain_text("signed_in")
        await expect(row).to_contain_text("CONNECTED")
