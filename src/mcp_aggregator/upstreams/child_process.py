"""A stdio server's process, started from a thread of its own, its pipes served by the event loop.

uvloop's ``subprocess_exec`` forks the gateway (copying the page tables of its hundreds of MB)
and holds the event loop until the child has run ``exec``: 150 ms of a held loop per server
at 320 MB on a busy machine (10 ms of it CPU), for each of fifty servers in a start.
``subprocess.Popen`` uses ``vfork`` (nothing copied) and, run off the loop, holds it not at
all. The child's pipes are then handed to the loop and its exit is watched with a pidfd, so
the ``SubprocessProtocol`` sees what ``subprocess_exec`` would have shown it:
``connection_made``, each pipe's data and end, ``process_exited``, then ``connection_lost``.

The thread that starts it must live as long as the process: ``bwrap --die-with-parent`` (the
sandbox) has the kernel kill the child when the *thread* that forked it ends
(``PR_SET_PDEATHSIG``), and the worker threads of ``anyio.to_thread`` end after ten idle
seconds. One spawner thread, never retired, starts every server.

Where there is no ``os.pidfd_open`` (not Linux), ``subprocess_exec`` stays.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, TypeVar

_P = TypeVar("_P", bound=asyncio.SubprocessProtocol)

_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mcp-aggregator-spawn")
"""Its one thread lives until the interpreter exits (see the module's docstring)."""


async def spawn_child(
    protocol_factory: Callable[[], _P],
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    pass_fds: Sequence[int] = (),
) -> tuple[asyncio.SubprocessTransport, _P]:
    """``argv`` started in a session of its own with its stdin, stdout and stderr piped to
    ``protocol_factory()``'s protocol, as ``loop.subprocess_exec`` would. Raises ``OSError``
    when it cannot be started (``FileNotFoundError`` naming the command, as ``Popen`` does)."""
    loop = asyncio.get_running_loop()
    if not hasattr(os, "pidfd_open"):
        transport, protocol = await loop.subprocess_exec(
            protocol_factory,
            *argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
        return transport, protocol
    popen = await loop.run_in_executor(_SPAWNER, partial(_start, list(argv), dict(env), cwd, tuple(pass_fds)))
    protocol = protocol_factory()
    child = ChildTransport(loop, popen, protocol)
    try:
        await child.connect()
    except BaseException:
        child.close()
        raise
    return child, protocol


def _start(argv: list[str], env: dict[str, str], cwd: str | None, pass_fds: tuple[int, ...]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        pass_fds=pass_fds,
        bufsize=0,
    )


class ChildTransport(asyncio.SubprocessTransport):
    """The subprocess transport over a ``Popen`` whose pipes the loop reads and writes."""

    def __init__(self, loop: asyncio.AbstractEventLoop, popen: subprocess.Popen[bytes], protocol: Any) -> None:
        super().__init__()
        self._loop = loop
        self._popen = popen
        self._protocol = protocol
        self._pipes: dict[int, asyncio.BaseTransport] = {}
        self._lost: set[int] = set()
        self._returncode: int | None = None
        self._pidfd: int | None = None
        self._closed = False
        self._finished = False

    async def connect(self) -> None:
        """Hand the pipes to the loop and watch the exit; the protocol is told first."""
        popen, loop = self._popen, self._loop
        assert popen.stdin is not None and popen.stdout is not None and popen.stderr is not None
        self._protocol.connection_made(self)
        self._pidfd = os.pidfd_open(popen.pid)
        loop.add_reader(self._pidfd, self._exit_seen)
        self._pipes[0], _ = await loop.connect_write_pipe(lambda: _StdinPipe(self), popen.stdin)
        self._pipes[1], _ = await loop.connect_read_pipe(lambda: _OutputPipe(self, 1), popen.stdout)
        self._pipes[2], _ = await loop.connect_read_pipe(lambda: _OutputPipe(self, 2), popen.stderr)
        self._exit_seen()  # an exit before the reader was added

    def _exit_seen(self) -> None:
        if self._returncode is not None:
            return
        code = self._popen.poll()  # reaps it, and Popen knows it ended
        if code is None:
            return
        self._returncode = code
        self._unwatch()
        self._protocol.process_exited()
        self._try_finish()

    def _unwatch(self) -> None:
        if self._pidfd is not None:
            self._loop.remove_reader(self._pidfd)
            os.close(self._pidfd)
            self._pidfd = None

    def _pipe_lost(self, fd: int, exc: Exception | None) -> None:
        self._lost.add(fd)
        self._protocol.pipe_connection_lost(fd, exc)
        self._try_finish()

    def _try_finish(self) -> None:
        if self._finished or self._returncode is None or len(self._lost) < len(self._pipes) or not self._pipes:
            return
        self._finished = True
        self._protocol.connection_lost(None)

    def get_pid(self) -> int:
        return self._popen.pid

    def get_returncode(self) -> int | None:
        return self._returncode

    def get_pipe_transport(self, fd: int) -> asyncio.BaseTransport | None:
        return self._pipes.get(fd)

    def is_closing(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close the pipes and, if it still runs, kill the process (as asyncio's transport
        does); its exit is still reaped when it comes."""
        if self._closed:
            return
        self._closed = True
        for pipe in self._pipes.values():
            pipe.close()
        if self._returncode is None and self._popen.poll() is None:
            self._popen.kill()
        if self._popen.returncode is not None:
            self._exit_seen()
        for fd, stream in enumerate((self._popen.stdin, self._popen.stdout, self._popen.stderr)):
            if stream is not None and fd not in self._pipes:
                stream.close()  # not handed to the loop: ``connect`` failed before it

    def send_signal(self, signal: int) -> None:
        self._popen.send_signal(signal)

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()


class _StdinPipe(asyncio.Protocol):
    def __init__(self, child: ChildTransport) -> None:
        self._child = child

    def connection_lost(self, exc: Exception | None) -> None:
        self._child._pipe_lost(0, exc)

    def pause_writing(self) -> None:
        self._child._protocol.pause_writing()

    def resume_writing(self) -> None:
        self._child._protocol.resume_writing()


class _OutputPipe(asyncio.Protocol):
    def __init__(self, child: ChildTransport, fd: int) -> None:
        self._child = child
        self._fd = fd

    def data_received(self, data: bytes) -> None:
        self._child._protocol.pipe_data_received(self._fd, data)

    def connection_lost(self, exc: Exception | None) -> None:
        self._child._pipe_lost(self._fd, exc)
