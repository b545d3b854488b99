"""A stdio server that cannot start leaves the last lines of its stderr in its status:
bounded, and scrubbed of its secrets by value."""

from __future__ import annotations

import sys

from mcp_aggregator.admin.server_views import server_detail
from mcp_aggregator.settings import ServerConfig
from mcp_aggregator.upstreams.stderr_tail import MAX_CHARS, MAX_LINES, StderrTail
from tests.conftest import HOST_PID, serving_gateway, settings_for

SECRET = "s3cret-value-for-the-tail"
SAYS = (
    "import os, sys\n"
    "for n in range(30): print(f'line {n}', file=sys.stderr)\n"
    "print('x' * 500, file=sys.stderr)\n"
    "print('token is', os.environ['TOKEN'], file=sys.stderr)\n"
    "sys.stderr.write('no newline at the end')\n"
    "sys.exit(3)\n"
)


def test_the_tail_keeps_the_last_lines_each_cut_to_its_most() -> None:
    tail = StderrTail()
    for n in range(MAX_LINES + 5):
        tail.add(f"line {n}\n")
    tail.add("   ")
    tail.add("y" * (MAX_CHARS + 7))
    lines = tail.lines()
    assert len(lines) == MAX_LINES
    assert lines[0] == "line 6"
    assert lines[-1] == "y" * MAX_CHARS + "... (7 more characters)"


async def test_a_server_that_exits_at_start_shows_its_last_stderr_lines_scrubbed() -> None:
    server = ServerConfig(
        name="talker",
        transport="stdio",  # type: ignore[arg-type]
        command=sys.executable,
        args=("-c", SAYS),
        env={"TOKEN": SECRET},
        sandbox=HOST_PID,
    )
    async with serving_gateway(settings_for(server), settle=60) as (gateway, _server):
        supervisor = gateway.supervisors["talker"]
        record = await gateway.registry.get_server_by_name("talker")
        detail = server_detail(record, supervisor, scrub=gateway.scrub)
    assert detail.stderr_tail[-3:] == [
        "x" * MAX_CHARS + "... (200 more characters)",
        "token is ***",
        "no newline at the end",
    ]
    assert len(detail.stderr_tail) == MAX_LINES
    assert "did the server exit?" in (detail.error_message or "")
    assert SECRET not in str(detail.model_dump())
