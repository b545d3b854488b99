"""The faults, each under the running load: what is done, when the upstream could serve again,
and how long the bench watches afterwards."""

from __future__ import annotations

import os
import signal
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

import anyio
import httpx
from bench.chaos.harness import World
from bench.chaos.observe import FaultWindow, now, rss_kb
from mcp import Client
from mcp.client.stdio import StdioServerParameters


@dataclass(frozen=True)
class Timing:
    outage_s: float = 3.0
    """How long the HTTP upstream stays stopped, and stays hung."""
    watch_s: float = 12.0
    """How long after the upstream could serve again the bench keeps watching at most."""
    settle_s: float = 1.5
    """Quiet load before each fault (its baseline) and after recovery."""
    sessions: int = 200
    idle_s: float = 5.0
    """``serve.session_idle_secs`` of the bench's gateway."""


Fault = Callable[[World, Timing], Awaitable[FaultWindow]]


async def _recovered(here: World, upstream: str, since: float, deadline: float) -> None:
    """Until a call to ``upstream`` that started after ``since`` succeeded and no later one failed
    for a moment, or ``deadline``."""
    while now() < deadline:
        hit = [c for c in here.record.calls if c.upstream == upstream and c.started > since]
        good = [c for c in hit if c.ok]
        if good and all(c.ok for c in hit if c.started >= good[0].started) and now() - good[0].ended > 0.5:
            return
        await anyio.sleep(0.05)


async def _window(
    here: World, timing: Timing, fault: str, upstream: str, act: Callable[[], Awaitable[float]]
) -> FaultWindow:
    await anyio.sleep(timing.settle_s)
    before = rss_kb(here.gateway.pid)
    began = now()
    back = await act()
    await _recovered(here, upstream, back, back + timing.watch_s)
    await anyio.sleep(timing.settle_s)
    return FaultWindow(fault, upstream, began, back, now(), before, rss_kb(here.gateway.pid))


async def stdio_kill(here: World, timing: Timing) -> FaultWindow:
    """kill -9 of the stdio upstream; it can serve again at once (the gateway restarts it).

    The server's own start (spawn, handshake, first listing) is timed alone first: no
    gateway can bring it back faster than that."""
    floor = await _start_time(here.clock_command)

    async def act() -> float:
        os.kill(here.clock_pid(), signal.SIGKILL)
        return now()

    window = await _window(here, timing, "stdio kill -9", "clock", act)
    return replace(window, note=f"mcp-server-time alone takes {floor:.2f}s to start and list its tools here")


async def _start_time(command: str) -> float:
    started = now()
    async with Client(StdioServerParameters(command=command), cache=None) as client:
        await client.list_tools()
    return now() - started


async def http_restart(here: World, timing: Timing) -> FaultWindow:
    """kill -9 of the HTTP upstream; started again on its port after ``outage_s``."""

    async def act() -> float:
        here.stop_web()
        await anyio.sleep(timing.outage_s)
        await anyio.to_thread.run_sync(here.start_web)
        return now()

    return await _window(here, timing, f"http stop {timing.outage_s:g}s + restart", "web", act)


async def http_hang(here: World, timing: Timing) -> FaultWindow:
    """SIGSTOP of the HTTP upstream (it accepts connections and answers nothing) for ``outage_s``."""

    async def act() -> float:
        assert here.web is not None
        here.web.send_signal(signal.SIGSTOP)
        try:
            await anyio.sleep(timing.outage_s)
        finally:
            here.web.send_signal(signal.SIGCONT)
        return now()

    return await _window(here, timing, f"http hung {timing.outage_s:g}s", "web", act)


async def abandoned_sessions(here: World, timing: Timing) -> FaultWindow:
    """``sessions`` handshake-era clients initialize and vanish; the idle timer closes them."""
    await anyio.sleep(timing.settle_s)
    before = rss_kb(here.gateway.pid)
    began = now()
    reaped_before = here.log_count("idle timeout")
    base = here.mcp_url.removesuffix("/mcp")
    ids: list[str] = []
    limits = httpx.Limits(max_connections=8)
    async with httpx.AsyncClient(base_url=base, timeout=30, limits=limits) as http:
        for index in range(timing.sessions):
            ids.append(await _open_session(http, index))
        held = rss_kb(here.gateway.pid)
        opened = now()
        deadline = opened + timing.idle_s + 30
        while now() < deadline:
            if here.log_count("idle timeout") - reaped_before >= timing.sessions:
                break
            await anyio.sleep(0.1)  # the gateway's log is the only sign a session was closed
        reaped_at = now()
        gone = await http.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 9, "method": "tools/list"}, headers=_session(ids[0])
        )
    reaped = here.log_count("idle timeout") - reaped_before
    await anyio.sleep(timing.settle_s)
    after = rss_kb(here.gateway.pid)
    per_session = None if held is None or before is None else (held - before) / timing.sessions
    note = (
        f"{timing.sessions} sessions opened in {opened - began:.1f}s; held +{_kb(held, before)} KB "
        f"(~{per_session:.0f} KB each); {reaped} closed by the idle timer ({timing.idle_s:g}s) "
        f"{reaped_at - opened:.1f}s after the last opened; a late request got HTTP {gone.status_code}"
        if per_session is not None
        else "RSS unreadable"
    )
    return FaultWindow(f"{timing.sessions} abandoned sessions", "clock", began, began, now(), before, after, note)


def _kb(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b


def _session(ident: str) -> dict[str, str]:
    return {
        "mcp-session-id": ident,
        "mcp-protocol-version": "2025-11-25",
        "accept": "application/json, text/event-stream",
    }


async def _open_session(http: httpx.AsyncClient, index: int) -> str:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": f"vanishing-{index}", "version": "1"},
        },
    }
    accept = {"accept": "application/json, text/event-stream"}
    opened = await http.post("/mcp", json=initialize, headers=accept)
    ident = opened.headers["mcp-session-id"]
    await http.post("/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=_session(ident))
    return ident


FAULTS: dict[str, Fault] = {
    "stdio_kill": stdio_kill,
    "http_restart": http_restart,
    "http_hang": http_hang,
    "abandoned_sessions": abandoned_sessions,
}
