"""``registry add/update`` on a real pseudo-terminal: required inputs not given are asked
for, secrets with hidden input, and the typed values show nowhere."""

from __future__ import annotations

import fcntl
import logging
import os
import select
import subprocess
import sys
import termios
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from tests.installs.gateway_with_registry import ADMIN, admin, gateway_with_registry, npm_project
from tests.installs.local_registry import LocalRegistry, item, npm_memory, serving, with_secrets

DEADLINE_SECS = 120.0
KEYS = "io.example/memory-with-keys"


@dataclass
class Terminal:
    """What a CLI process printed on its pseudo-terminal, and how it ended."""

    output: str
    exit_code: int


def _take_terminal() -> None:
    """In the child, after its new session began: make stdin (the pty) its controlling
    terminal, so getpass turns echo off there as it would for a person."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def _read(fd: int, until: float) -> bytes | None:
    """What the terminal has next; b"" once the process closed it; None at the deadline."""
    ready, _, _ = select.select([fd], [], [], max(0.0, until - time.monotonic()))
    if not ready:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:  # EIO: every writer of the pty has closed it
        return b""


def _spawn(args: Sequence[str], terminal: int, cwd: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_aggregator", *args],
        stdin=terminal,
        stdout=terminal,
        stderr=terminal,
        cwd=cwd,
        env={**os.environ, "MCP_AGGREGATOR_TOKEN": "", "COLUMNS": "200"},
        start_new_session=True,
        preexec_fn=_take_terminal,
    )


async def on_terminal(args: Sequence[str], answers: Sequence[tuple[str, str]], cwd: Path) -> Terminal:
    """Run ``mcp-aggregator ARGS`` on a pty; type each answer once its prompt text has shown."""
    master, slave = os.openpty()
    proc = _spawn(args, slave, cwd)
    os.close(slave)
    seen = b""
    until = time.monotonic() + DEADLINE_SECS
    try:
        pending = list(answers)
        while True:
            if pending and pending[0][0].encode() in seen:
                os.write(master, pending.pop(0)[1].encode() + b"\n")
            chunk = await anyio.to_thread.run_sync(_read, master, until)
            assert chunk is not None, f"no end within {DEADLINE_SECS} s: {seen.decode(errors='replace')}"
            if not chunk:
                break
            seen += chunk
        assert not pending, f"never asked for {pending[0][0]}: {seen.decode(errors='replace')}"
        code = await anyio.to_thread.run_sync(proc.wait, max(1.0, until - time.monotonic()))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return Terminal(seen.decode(errors="replace"), code)


def with_a_new_secret() -> dict[str, object]:
    """A later version of ``with_secrets`` that asks for one more secret."""
    variables = [
        *with_secrets()["packages"][0]["environmentVariables"],  # type: ignore[index]
        {"name": "EXTRA_TOKEN", "description": "Token of version 9", "isRequired": True, "isSecret": True},
    ]
    return {**npm_memory(KEYS, environmentVariables=variables), "version": "9.0.0"}


async def test_a_terminal_is_asked_for_missing_secrets_hidden_and_they_show_nowhere(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    secret, extra = "wk-typed-secret-0123456789", "xt-typed-extra-0123456789"
    caplog.set_level(logging.DEBUG)
    inputs = tmp_path / "inputs.env"
    inputs.write_text("# what is not secret\nREGION=eu\nnpm_config_offline='true'\n")
    local = LocalRegistry()
    local.add(item(with_secrets(), updated=1))
    async with (
        serving(local) as served_registry,
        gateway_with_registry(served_registry.url, npm_project(tmp_path)) as gw,
        admin(gw) as api,
    ):
        at = ["--gateway", gw.base, "--token", ADMIN]
        scripted = await on_terminal(["registry", "add", KEYS, "--json", *at], [], tmp_path)
        assert scripted.exit_code == 1, "--json never asks"
        assert "env WEATHER_API_KEY is required (API key); env REGION is required; give them with" in scripted.output
        added = await on_terminal(
            ["registry", "add", KEYS, "--env-file", str(inputs), *at], [("WEATHER_API_KEY", secret)], tmp_path
        )
        assert added.exit_code == 0, added.output
        assert "WEATHER_API_KEY (environment variable, secret, not shown): API key:" in added.output
        assert "memory-with-keys: CONNECTED" in added.output

        local.add(item(with_a_new_secret(), updated=2))
        updated = await on_terminal(["registry", "update", "memory-with-keys", *at], [("EXTRA_TOKEN", extra)], tmp_path)
        assert updated.exit_code == 0, updated.output
        assert "EXTRA_TOKEN (environment variable, secret, not shown): Token of version 9:" in updated.output
        assert "WEATHER_API_KEY" not in updated.output, "a kept input is not asked again"
        assert f"({KEYS}@9.0.0 from official)" in updated.output

        listed = await api.get("/servers")
        server_id = listed.json()[0]["id"]
        detail = await api.get(f"/servers/{server_id}")
        env = detail.json()["connection_config"]["env"]
        assert (env["WEATHER_API_KEY"], env["EXTRA_TOKEN"]) == ("***", "***")
        stored = (await gw.gateway.registry.get_server(server_id)).connection_config["env"]
        assert (stored["REGION"], stored["npm_config_offline"]) == ("eu", "true"), "from --env-file"
        opened = [gw.gateway.env[stored[name][2:-1]] for name in ("WEATHER_API_KEY", "EXTRA_TOKEN")]
        assert opened == [secret, extra], "the typed values are what the server gets"
        shown = [listed.text, detail.text, str(stored)]
    for text in [added.output, updated.output, *shown, caplog.text]:
        assert secret not in text and extra not in text
