"""Installing from a registry the tests serve, through a running gateway: search, install,
connect, call through ``/mcp``, update, remove; bad input; secrets never shown."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.installs.gateway_with_registry import (
    NPM_OFFLINE,
    admin,
    gateway_with_registry,
    json_of,
    mcp_client,
    npm_project,
    text_of,
)
from tests.installs.keyed_upstream import keyed_upstream
from tests.installs.local_registry import (
    LocalRegistry,
    closed_port_url,
    item,
    memory_version,
    npm_memory,
    pypi_time,
    remote,
    serving,
    with_secrets,
)

MEMORY = "io.github.modelcontextprotocol/server-memory"
OFFLINE = NPM_OFFLINE


def local_registry() -> LocalRegistry:
    local = LocalRegistry()
    local.add(item({**npm_memory(), "version": "1.0.0"}, updated=1))
    local.add(item(pypi_time(), updated=2))
    local.add(item(with_secrets(), updated=3))
    local.add(item(npm_memory("io.example/old-memory"), status="deprecated", updated=4))
    local.add(item(npm_memory("io.example/gone"), status="deleted", updated=5))
    return local


async def test_an_npm_server_is_found_installed_called_updated_and_removed(tmp_path: Path) -> None:
    async with (
        serving(local_registry()) as local,
        gateway_with_registry(local.url, npm_project(tmp_path)) as gw,
        admin(gw) as api,
    ):
        found = (await api.get("/registry/servers", params={"q": "memory"})).json()
        assert [(e["name"], e["status"]) for e in found["servers"]] == [
            ("io.example/gone", "deleted"),
            ("io.example/memory-with-keys", "active"),
            ("io.example/old-memory", "deprecated"),
            (MEMORY, "active"),
        ]
        entry = found["servers"][3]
        assert entry["runs"] == [f"npm @modelcontextprotocol/server-memory@{memory_version()}"]
        assert entry["inputs"][0]["name"] == "MEMORY_FILE_PATH"

        graph = tmp_path / "data/servers/server-memory/memory.jsonl"
        env = {**OFFLINE, "MEMORY_FILE_PATH": str(graph)}
        answer = await api.post("/registry/install", json={"name": f"{MEMORY}@1.0.0", "env": env})
        assert answer.status_code == 201, answer.text
        result = answer.json()
        assert (result["connected"], result["status"], result["warnings"]) == (True, "CONNECTED", [])
        assert result["origin"] == {"registry": "official", "name": MEMORY, "version": "1.0.0"}
        assert (tmp_path / "data/servers/server-memory").is_dir()

        async with mcp_client(gw) as client:
            created = await client.call_tool(
                "server-memory__create_entities",
                {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]},
            )
            assert "Ada" in text_of(created)
        assert "wrote programs" in graph.read_text()
        listed = (await api.get("/servers")).json()
        assert listed[0]["origin"] == {"registry": "official", "name": MEMORY, "version": "1.0.0"}

        local.add(item({**npm_memory(), "version": "1.1.0"}, updated=9))
        updated = (await api.post("/registry/update", json={"server_name": "server-memory"})).json()
        assert (updated["previous_version"], updated["origin"]["version"]) == ("1.0.0", "1.1.0")
        assert updated["connected"] is True
        again = (await api.post("/registry/update", json={"server_name": "server-memory"})).json()
        assert again["warnings"] == ["already at 1.1.0"]

        assert (await api.delete(f"/servers/{updated['server']['id']}")).status_code == 204
        assert (await api.get("/servers")).json() == []


async def test_a_pypi_server_gets_a_venv_of_its_own_without_uv(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No index: pip may only find what the gateway's own environment already has.
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    async with (
        serving(local_registry()) as local,
        gateway_with_registry(local.url, tmp_path / "data") as gw,
        admin(gw) as api,
    ):
        body = {"name": "io.github.modelcontextprotocol/server-time", "arguments": {"local-timezone": "UTC"}}
        answer = await api.post("/registry/install", json=body)
        assert answer.status_code == 201, answer.text
        assert answer.json()["connected"] is True
        assert (tmp_path / "data/servers/server-time/venv/bin/mcp-server-time").is_file()
        async with mcp_client(gw) as client:
            now = json_of(await client.call_tool("server-time__get_current_time", {"timezone": "UTC"}))
        assert now["timezone"] == "UTC"


async def test_a_remote_gets_its_secret_header_sealed_sent_and_never_shown(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret = "sk-remote-0123456789abcdef"
    caplog.set_level(logging.DEBUG)
    async with keyed_upstream(secret) as url:
        registry = local_registry()
        registry.add(item(remote(url), updated=6))
        async with (
            serving(registry) as local,
            gateway_with_registry(local.url, tmp_path / "data") as gw,
            admin(gw) as api,
        ):
            body = {"name": "io.example/fixture-remote", "arguments": {"api_key": secret}}
            answer = await api.post("/registry/install", json=body)
            assert answer.status_code == 201, answer.text
            assert answer.json()["connected"] is True, "the upstream took the opened secret"
            async with mcp_client(gw) as client:
                called = await client.call_tool("fixture-remote__forecast", {"city": "Oslo"})
                assert text_of(called) == "sunny in Oslo"
            server_id = answer.json()["server"]["id"]
            shown = [answer.text, (await api.get("/servers")).text, (await api.get(f"/servers/{server_id}")).text]
            detail = (await api.get(f"/servers/{server_id}")).json()
            assert detail["connection_config"]["headers"] == {"X-Api-Key": "***"}
            stored = (await gw.gateway.registry.get_server(server_id)).connection_config
            assert stored["headers"]["X-Api-Key"].startswith("${sealed:")
            assert stored["origin"]["arguments"] == {}

            wrong = {"name": "io.example/fixture-remote", "server_name": "wrong", "arguments": {"api_key": "nope"}}
            refused = (await api.post("/registry/install", json=wrong)).json()
            assert refused["connected"] is False and refused["error"]
    for text in [*shown, str(stored), caplog.text]:
        assert secret not in text


async def test_bad_input_is_refused_clearly_and_registers_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with (
        serving(local_registry()) as local,
        gateway_with_registry(local.url, npm_project(tmp_path)) as gw,
        admin(gw) as api,
    ):
        unknown = await api.post("/registry/install", json={"name": "io.example/nope"})
        assert (unknown.status_code, unknown.json()["detail"]) == (
            404,
            "no server 'io.example/nope' in registry 'official'",
        )
        gone = await api.post("/registry/install", json={"name": "io.example/gone"})
        assert gone.status_code == 409
        assert "is deleted in registry 'official'" in gone.json()["detail"]
        missing = await api.post("/registry/install", json={"name": "io.example/memory-with-keys"})
        assert missing.status_code == 422
        assert missing.json()["detail"]["problems"] == [
            "env WEATHER_API_KEY is required (API key)",
            "env REGION is required",
        ]
        assert missing.json()["detail"]["missing"] == [
            {"field": "env", "name": "WEATHER_API_KEY", "description": "API key", "secret": True, "choices": None},
            {"field": "env", "name": "REGION", "description": None, "secret": False, "choices": ["eu", "us"]},
        ]
        secret = "wk-env-secret-0123456789"
        keys = {"WEATHER_API_KEY": secret, "REGION": "eu", **OFFLINE}
        with_keys = await api.post("/registry/install", json={"name": "io.example/memory-with-keys", "env": keys})
        assert with_keys.status_code == 201, with_keys.text
        keys_id = with_keys.json()["server"]["id"]
        detail = (await api.get(f"/servers/{keys_id}")).json()
        assert detail["connection_config"]["env"]["WEATHER_API_KEY"] == "***"
        stored = (await gw.gateway.registry.get_server(keys_id)).connection_config["env"]
        assert stored["WEATHER_API_KEY"].startswith("${sealed:") and stored["REGION"] == "eu"
        shown = [with_keys.text, (await api.get(f"/servers/{keys_id}")).text, (await api.get("/servers")).text]
        assert secret not in "".join(shown) + str(stored)
        assert (await api.delete(f"/servers/{keys_id}")).status_code == 204

        invalid = await api.post("/registry/install", json={"server_json": {**npm_memory(), "name": "x"}})
        assert invalid.status_code == 422
        assert invalid.json()["detail"]["field"] == "name"
        assert (await api.get("/servers")).json() == []

        old = await api.post("/registry/install", json={"name": "io.example/old-memory", "env": OFFLINE})
        assert old.status_code == 201, old.text
        assert old.json()["warnings"] == [
            f"io.example/old-memory@{memory_version()} is deprecated in registry 'official'"
        ]
        taken = await api.post("/registry/install", json={"name": "io.example/old-memory"})
        assert (taken.status_code, taken.json()["detail"]) == (409, "Server already exists: old-memory")
    assert "memory-with-keys" in caplog.text, "the gateway's log of the install was captured"
    assert secret not in caplog.text


async def test_an_installed_npm_server_runs_sandboxed_writing_only_where_granted(tmp_path: Path) -> None:
    granted = tmp_path / "granted"
    granted.mkdir()
    elsewhere = tmp_path / "not-granted"
    elsewhere.mkdir()
    entities = {"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote programs"]}]}
    async with (
        serving(local_registry()) as local,
        gateway_with_registry(local.url, npm_project(tmp_path)) as gw,
        admin(gw) as api,
    ):
        body = {
            "name": MEMORY,
            "env": {**OFFLINE, "MEMORY_FILE_PATH": str(granted / "memory.jsonl")},
            "grant_write": [str(granted)],
            "network": "none",
        }
        answer = await api.post("/registry/install", json=body)
        assert answer.status_code == 201, answer.text
        assert answer.json()["connected"] is True
        sandbox = (await api.get(f"/servers/{answer.json()['server']['id']}")).json()["sandbox"]
        assert (sandbox["active"], sandbox["network"]) == (True, "none")
        assert str(granted) in sandbox["write"]

        # The same server told to keep its graph where no grant reaches: the sandbox stops the write.
        outside = {**body, "server_name": "outside", "env": {**OFFLINE, "MEMORY_FILE_PATH": str(elsewhere / "m.jsonl")}}
        assert (await api.post("/registry/install", json=outside)).json()["connected"] is True
        async with mcp_client(gw) as client:
            assert "Ada" in text_of(await client.call_tool("server-memory__create_entities", entities))
            refused = await client.call_tool("outside__create_entities", entities)
        assert "wrote programs" in (granted / "memory.jsonl").read_text()
        assert refused.is_error
        assert list(elsewhere.iterdir()) == []


async def test_a_registry_that_does_not_answer_registers_nothing(tmp_path: Path) -> None:
    async with gateway_with_registry(closed_port_url(), tmp_path / "data") as gw, admin(gw) as api:
        answer = await api.post("/registry/install", json={"name": MEMORY})
        assert answer.status_code == 502
        assert "registry 'official'" in answer.json()["detail"] and "did not answer" in answer.json()["detail"]
        search = (await api.get("/registry/servers", params={"q": "memory"})).json()
        assert search["servers"] == [] and "did not answer" in search["problems"][0]
        assert (await api.get("/servers")).json() == []


async def test_a_server_json_file_installs_with_the_file_as_its_origin(tmp_path: Path) -> None:
    async with gateway_with_registry(closed_port_url(), npm_project(tmp_path)) as gw, admin(gw) as api:
        body = {"server_json": npm_memory("io.example/from-file"), "env": OFFLINE, "server_name": "mine"}
        answer = await api.post("/registry/install", json=body)
        assert answer.status_code == 201, answer.text
        result = answer.json()
        assert result["connected"] is True
        assert result["origin"] == {"registry": "file", "name": "io.example/from-file", "version": memory_version()}
        refused = await api.post("/registry/update", json={"server_name": "mine"})
        assert refused.status_code == 409
        assert "was not installed from a registry" in refused.json()["detail"]

        # A version npm cannot give offline: the server is registered, and the answer says why it did not connect.
        absent = npm_memory("io.example/absent", version="0.0.0-absent")
        failed = (
            await api.post("/registry/install", json={"server_json": absent, "env": OFFLINE, "wait_secs": 30})
        ).json()
        assert (failed["connected"], failed["server"]["name"]) == (False, "absent")
        assert failed["status"] in ("ERROR", "CONNECTING") and failed["error"]
        assert failed["error"].endswith(
            "(it stays registered and is retried; to install it again, first: servers remove absent)"
        )


async def test_an_update_that_does_not_connect_keeps_the_old_version(tmp_path: Path) -> None:
    async with (
        serving(local_registry()) as local,
        gateway_with_registry(local.url, npm_project(tmp_path)) as gw,
        admin(gw) as api,
    ):
        graph = tmp_path / "data/servers/server-memory/memory.jsonl"
        env = {**OFFLINE, "MEMORY_FILE_PATH": str(graph)}
        installed = await api.post("/registry/install", json={"name": f"{MEMORY}@1.0.0", "env": env})
        assert installed.json()["connected"] is True, installed.text
        # A version npm cannot give offline: it never connects.
        local.add(item({**npm_memory(version="0.0.0-absent"), "version": "1.2.0"}, updated=9))
        refused = await api.post("/registry/update", json={"server_name": "server-memory", "wait_secs": 30})
        assert refused.status_code == 409, refused.text
        detail = refused.json()["detail"]
        assert detail.startswith(f"{MEMORY}@1.2.0 did not connect (")
        assert detail.endswith("); server 'server-memory' is kept at 1.0.0")
        [server] = (await api.get("/servers")).json()
        assert (server["name"], server["origin"]["version"]) == ("server-memory", "1.0.0")
        await gw.gateway.wait_until(
            lambda: gw.gateway.supervisors["server-memory"].status.value == "CONNECTED", timeout_secs=60
        )
        async with mcp_client(gw) as client:
            created = await client.call_tool(
                "server-memory__create_entities",
                {"entities": [{"name": "Ada", "entityType": "person", "observations": []}]},
            )
            assert "Ada" in text_of(created)
