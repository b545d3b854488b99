"""``serve --workers N``: N replicas on consecutive ports, supervised, stopped cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.to_thread
import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.replicas import check_workers, replica_commands
from mcp_aggregator.settings import Settings
from tests.conftest import REPO
from tests.ports import free_port_block
from tests.processes import children
from tests.replicas.cluster import Spawned, child_env, poll, replica_config, wait_healthy

PG = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


@pytest.mark.parametrize(
    ("registry", "port", "workers", "message"),
    [
        ("sqlite+aiosqlite:///x.db", 8765, 2, "registry.database_url: --workers 2 needs a registry the replicas share"),
        (PG, 0, 3, "serve.port: --workers 3 needs a fixed base port"),
        (PG, 65535, 2, "serve.port: replica ports 65535..65536 go past 65535"),
        (PG, 8765, 0, "--workers: must be at least 1, got 0"),
    ],
)
def test_a_worker_count_the_settings_cannot_support_is_refused_naming_the_field(
    registry: str, port: int, workers: int, message: str
) -> None:
    settings = Settings.model_validate({"registry": {"database_url": registry}, "serve": {"port": port}})
    with pytest.raises(ConfigError) as refused:
        check_workers(settings, workers)
    assert str(refused.value).startswith(message)


def test_one_worker_on_sqlite_is_the_plain_gateway() -> None:
    check_workers(Settings(), 1)


def test_replicas_get_consecutive_ports_and_the_same_arguments() -> None:
    commands = replica_commands(3, 9000, ["--config", "c.yaml"], python="py")
    assert [r.port for r in commands] == [9000, 9001, 9002]
    assert commands[2].argv == ("py", "-m", "mcp_aggregator", "serve", "--config", "c.yaml", "--port", "9002")


def test_the_cli_refuses_several_workers_on_sqlite_with_a_clear_error(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"registry:\n  database_url: sqlite+aiosqlite:///{tmp_path / 'r.db'}\n")
    result = subprocess.run(
        [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config), "--workers", "2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=child_env(),
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "registry.database_url" in result.stderr and "PostgreSQL" in result.stderr, result.stderr


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes (its parent has not reaped it yet).
    return "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]


@pytest.mark.postgres
async def test_workers_serve_on_consecutive_ports_restart_a_crashed_replica_and_stop_on_sigterm(
    tmp_path: Path, pg_schema: str
) -> None:
    base = free_port_block(2)
    config = replica_config(tmp_path / "w", pg_schema, base)
    pool = Spawned(
        [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config), "--workers", "2"],
        tmp_path / "pool.log",
    )
    pool.start()
    try:
        for port in (base, base + 1):
            await wait_healthy(f"http://127.0.0.1:{port}", within=60, proc=pool)
        first = children(pool.pid)
        assert len(first) == 2, first

        victim = min(first)
        os.kill(victim, signal.SIGKILL)

        async def replaced() -> set[int] | None:
            now = children(pool.pid)
            return now if len(now) == 2 and victim not in now else None

        second = await poll(replaced, within=30, what="the crashed replica restarted")
        for port in (base, base + 1):
            await wait_healthy(f"http://127.0.0.1:{port}", within=60, proc=pool)

        # SIGTERM to the pool alone: it stops its replicas and exits.
        assert pool.process is not None
        os.kill(pool.pid, signal.SIGTERM)
        with anyio.fail_after(60):
            code = await anyio.to_thread.run_sync(pool.process.wait)
        assert code == 0, pool.tail()
        assert not any(_alive(pid) for pid in second), pool.tail()
    finally:
        await pool.stop()
