"""The page's registry catalogue in a real headless Chromium over a real gateway and a local registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from tests.admin.test_page_browser import browser, go, page, sign_in
from tests.installs.gateway_with_registry import npm_project
from tests.installs.local_registry import LocalRegistry, item, memory_version, npm_memory, serving, with_secrets
from tests.serve.http_face import face_settings, http_face

__all__ = ["browser", "page"]
pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The browser fixture lives on the module's event loop."""

MEMORY = "io.github.modelcontextprotocol/server-memory"


async def test_an_entry_is_found_and_installed_from_the_page(page: Page, tmp_path: Path) -> None:
    local = LocalRegistry()
    local.add(item(npm_memory(), updated=1))
    local.add(item(with_secrets(), updated=2))
    local.add(item(npm_memory("io.example/gone"), status="deleted", updated=3))
    async with serving(local) as served:
        settings = face_settings(
            npm_project(tmp_path), sections={"registries": [{"name": "official", "url": served.url}]}
        )
        async with http_face(settings) as face:
            await sign_in(page, face)
            await go(page, "#/registry")
            await page.fill("#c-q", "memory")
            await page.click("#catalogue-search button[type=submit]")
            memory = page.locator(f"tr[data-entry='{MEMORY}']")
            await expect(memory).to_contain_text(f"npm @modelcontextprotocol/server-memory@{memory_version()}")
            gone = page.locator("tr[data-entry='io.example/gone']")
            await expect(gone).to_contain_text("deleted")
            await expect(gone.get_by_role("button", name="Install")).to_have_count(0)

            await page.locator("tr[data-entry='io.example/memory-with-keys']").get_by_role("button").click()
            await expect(page.locator("#i-entry")).to_contain_text("io.example/memory-with-keys")
            await expect(page.locator("#i-input-0")).to_have_attribute("type", "password")

            await memory.get_by_role("button", name="Install").click()
            await page.fill("#i-name", "notes")
            async with page.expect_request(lambda r: r.url.endswith("/registry/install")) as sent:
                await page.click("#install button[type=submit]")
            body = (await sent.value).post_data_json
            assert body["registry"] == "official"
            assert "network" not in body, "the default leaves serve.sandbox's network in force"
            await go(page, "#/servers")
            row = page.locator("#servers tr[data-server=notes]")
            await expect(row).to_contain_text("CONNECTED")
            await expect(row).to_contain_text(f"official: {MEMORY}@{memory_version()}")
