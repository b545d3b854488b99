from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

from mcp_aggregator.search.embedder import Vectors, l2_normalise
from mcp_aggregator.search.onnx_embedder import OnnxMiniLmEmbedder

Handler = Callable[[str, dict[str, Any]], tuple[int, dict[str, Any]]]


class FakeEmbedder:
    """Deterministic bag-of-words hashing: texts sharing words are close. Counts its work."""

    model_id = "fake-bow-64"
    dimension = 64

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.embedded.extend(texts)
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"[a-z0-9]+", text.lower()):
                out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension] += 1.0
        out[:, 0] += 1e-3
        return l2_normalise(out)


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture(scope="session")
def onnx_embedder() -> OnnxMiniLmEmbedder:
    return OnnxMiniLmEmbedder(threads=1)


class JsonServer:
    """A real HTTP server on 127.0.0.1 answering JSON POSTs through ``handler``."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        outer = self

        class _Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append((self.path, body, dict(self.headers)))
                status, answer = handler(self.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> JsonServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


@pytest.fixture
def json_server() -> Iterator[Callable[[Handler], JsonServer]]:
    servers: list[JsonServer] = []

    def start(handler: Handler) -> JsonServer:
        server = JsonServer(handler).__enter__()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.__exit__(None, None, None)
