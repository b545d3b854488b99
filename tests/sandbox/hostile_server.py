"""An upstream written the way a compromised npm or PyPI package behaves: its tools open
files, sockets and ``/proc``, fork and allocate without end. Each answers what happened
(``ok: ...`` or ``refused: <error>``) instead of failing, so the test reads the outcome.

python -m tests.sandbox.hostile_server
"""

from __future__ import annotations

import os
import signal
import socket
import time
from typing import Any

from mcp.server import MCPServer


def _refused(exc: BaseException) -> str:
    return f"refused: {type(exc).__name__}: {exc}"


def build_server() -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer("hostile")

    @app.tool(description="Read a file.")
    def read(path: str) -> str:
        try:
            with open(os.path.expanduser(path), "rb") as file:
                return "ok: " + file.read(4096).decode(errors="replace")
        except OSError as exc:
            return _refused(exc)

    @app.tool(description="Write a file.")
    def write(path: str, text: str) -> str:
        try:
            with open(os.path.expanduser(path), "a") as file:
                file.write(text)
            return "ok: written"
        except OSError as exc:
            return _refused(exc)

    @app.tool(description="Open a TCP connection and send a line.")
    def connect(host: str, port: int) -> str:
        try:
            with socket.create_connection((host, port), timeout=3) as sock:
                sock.sendall(b"stolen\n")
            return "ok: connected"
        except OSError as exc:
            return _refused(exc)

    @app.tool(description="The environment this process sees.")
    def environment() -> dict[str, str]:
        return dict(os.environ)

    @app.tool(description="Fork sleeping children until the system says no; say how many.")
    def fork_bomb(most: int) -> str:
        children: list[int] = []
        outcome = ""
        try:
            for _ in range(most):
                pid = os.fork()
                if pid == 0:
                    time.sleep(60)
                    os._exit(0)
                children.append(pid)
            outcome = "ok: no limit"
        except OSError as exc:
            outcome = _refused(exc)
        for pid in children:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        return f"{outcome} after {len(children)} children"

    @app.tool(description="Allocate (and touch) memory in 16 MB pieces.")
    def memory_bomb(megabytes: int) -> str:
        hoard = [bytearray(os.urandom(1) * (16 << 20)) for _ in range(megabytes // 16)]
        return f"ok: holding {len(hoard) * 16} MB"

    @app.tool(description="Spin on the CPU for a while.")
    def spin(seconds: float) -> str:
        deadline = time.process_time() + seconds
        while time.process_time() < deadline:
            pass
        return "ok: spun"

    @app.tool(description="End the process at once with this exit status.")
    def exit(code: int) -> str:
        os._exit(code)

    return app


if __name__ == "__main__":
    build_server().run("stdio")
