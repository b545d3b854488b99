"""``StartListener``: answers on the gateway's socket while the gateway itself still loads.

Before the gateway serves, its modules are imported (seconds of CPU: the SDK, Starlette,
SQLAlchemy, onnxruntime), its registry opened and its search model loaded. A health check
that waited for all of that saw a dead process. So ``serve`` binds the socket first and
starts this listener, a thread with nothing but the standard library, which says so:
every route answers 503 with ``Retry-After``, ``/healthz`` with ``status: starting`` in its
body. A 503 rather than the gateway's usual 200: a load balancer's check (HAProxy's
``expect status 200``) and a script waiting for a 200 keep meaning "the gateway serves",
while a prober still learns at once that the process is alive and starting. Once the
gateway can serve, ``close`` stops the thread and the HTTP server takes the same socket
over; connections that arrive in between wait in the socket's backlog and are answered by
the gateway.

Imports only the standard library, on purpose: the point is to answer before the rest loads.
"""

from __future__ import annotations

import contextlib
import json
import logging
import selectors
import socket
import threading
import time
from collections.abc import Callable
from enum import Enum
from types import TracebackType
from typing import Protocol, Self

log = logging.getLogger(__name__)

HEALTH_WHILE_LOADING: dict[str, object] = {
    "status": "starting",
    "servers": {},
    "tools": 0,
    "index": "building",
    "gateway": "loading",
}
"""The ``/healthz`` body before the gateway runs: ``gateway: loading`` marks it (the
gateway's own body has no such key); no server is known, none connects yet."""
STARTING_ERROR: dict[str, object] = {"error": "starting", "detail": "the gateway is starting; try again in a moment"}
RETRY_AFTER_SECS = 1
READ_DEADLINE_SECS = 1.0
"""A client whose request takes longer than this in all is cut off: one thread answers all,
and a client trickling its request must not hold it (nor the gateway's start, which waits
for the thread) any longer."""
_MAX_HEAD = 16 * 1024
_MAX_BODY = 1 << 20
"""A request body up to this size is read before the answer, so that closing the
connection does not reset it under the answer; a larger one is cut off."""


class StartListenerState(Enum):
    NEW = "new"
    ANSWERING = "answering"
    CLOSED = "closed"


class StartListener:
    """Answers HTTP on ``sock`` (a bound, listening socket) from a thread until ``close``.

    A context manager, entered once (``RuntimeError`` on reuse). The socket stays open and
    listening after ``close``: the listener works on a duplicate of it, so the gateway's
    server serves the same socket, and its backlog, afterwards.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.state = StartListenerState.NEW
        self.answered = 0
        """How many requests it answered (read after ``close``)."""
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._serve, name="start-listener", daemon=True)
        self._listening: socket.socket | None = None

    def __enter__(self) -> Self:
        if self.state is not StartListenerState.NEW:
            raise RuntimeError("a StartListener can be started only once")
        self._listening = self._sock.dup()
        self._listening.setblocking(False)
        self.state = StartListenerState.ANSWERING
        self._thread.start()
        host, port = self._sock.getsockname()[:2]
        log.info("listening on %s port %d; /healthz says starting while the gateway loads", host, port)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stops answering; returns once the thread has finished the request it was on.
        Idempotent."""
        if self.state is not StartListenerState.ANSWERING:
            self.state = StartListenerState.CLOSED
            return
        self.state = StartListenerState.CLOSED
        self._stop.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        self._thread.join()
        if self._listening is not None:
            self._listening.close()
        self._wake_r.close()
        self._wake_w.close()

    def _serve(self) -> None:
        assert self._listening is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self._listening, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self._listening and not self._stop.is_set():
                        self._accept()

    def _accept(self) -> None:
        assert self._listening is not None
        try:
            conn, _ = self._listening.accept()
        except (BlockingIOError, InterruptedError):
            return  # the gateway's server, or a reset client, took it first
        except OSError as exc:
            log.debug("start listener: accept failed: %s", exc)
            return
        with conn:
            try:
                target = read_request(conn, time.monotonic() + READ_DEADLINE_SECS)
                if target is not None:
                    conn.sendall(answer(target))
                    self.answered += 1
                    conn.shutdown(socket.SHUT_WR)
            except OSError as exc:
                log.debug("start listener: a connection failed: %s", exc)


class Connection(Protocol):
    def settimeout(self, value: float | None, /) -> None: ...

    def recv(self, bufsize: int, /) -> bytes: ...


def read_request(conn: Connection, deadline: float, clock: Callable[[], float] = time.monotonic) -> str | None:
    """The request's path, once its head (and a body of known, bounded length) is read;
    None when the client sent no complete request head by ``deadline`` (of ``clock``).

    Raises ``OSError`` (``TimeoutError`` included) when the connection fails."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = _recv(conn, 4096, deadline, clock)
        if not chunk or len(data) > _MAX_HEAD:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length" and value.strip().isdigit():
            length = int(value.strip())
    left = min(length, _MAX_BODY) - len(body)
    while left > 0:
        chunk = _recv(conn, min(left, 65536), deadline, clock)
        if not chunk:
            break
        left -= len(chunk)
    return parts[1]


def _recv(conn: Connection, size: int, deadline: float, clock: Callable[[], float]) -> bytes:
    """What ``conn`` has, waiting no later than ``deadline``; b"" once it has passed."""
    left = deadline - clock()
    if left <= 0:
        return b""
    conn.settimeout(left)
    return conn.recv(size)


def answer(target: str) -> bytes:
    """The whole HTTP response to a request for ``target`` while the gateway loads."""
    path = target.split("?", 1)[0]
    body = HEALTH_WHILE_LOADING if path in ("/healthz", "/readyz") else STARTING_ERROR
    payload = json.dumps(body).encode()
    head = (
        "HTTP/1.1 503 Service Unavailable\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n"
        "Cache-Control: no-store\r\n"
        f"Retry-After: {RETRY_AFTER_SECS}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + payload


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket for uvicorn.

    Created with an explicit IPPROTO_TCP: asyncio enables TCP_NODELAY only on sockets whose
    ``proto`` says TCP, and ``socket.create_server`` leaves it 0. Without it a JSON response
    (headers and body written separately) waits ~40 ms on the client's delayed ACK.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock
