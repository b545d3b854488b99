"""``GatewayClient``: the CLI's side of the admin REST API of a running gateway.

Where the gateway is and which token to send are decided once (``GatewayTarget.resolve``):
``--gateway``, else the serve address of ``--config``'s file, else the default address;
``--token``, else ``$MCP_AGGREGATOR_TOKEN``, else ``serve.admin_token``, else the token
file the gateway keeps in its data dir. Every failure becomes an ``AdminClientError`` whose
message is what the user reads: the API's own words (naming the field), or what is wrong
with the connection.
"""

from __future__ import annotations

import json
import os
import ssl
from dataclasses import dataclass
from http.client import HTTPConnection, HTTPException, HTTPMessage, HTTPSConnection
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import urlencode, urlsplit

from mcp_aggregator.admin.admin_token import ADMIN_TOKEN_FILE, read_admin_token
from mcp_aggregator.errors import AdminClientError

if TYPE_CHECKING:
    from mcp_aggregator.settings import Settings

API_PREFIX = "/api/v1/aggregator"
TOKEN_ENV = "MCP_AGGREGATOR_TOKEN"
DEFAULT_GATEWAY = "http://127.0.0.1:8765"
DEFAULT_DATA_DIR = Path(".aggregator")
"""``serve.data_dir``'s default: where a gateway started without a configuration keeps its token."""


@dataclass(frozen=True)
class GatewayTarget:
    """Where the running gateway answers and the admin token it wants."""

    base_url: str
    token: str

    @classmethod
    def resolve(cls, settings: Settings | None, *, gateway: str | None, token: str | None) -> GatewayTarget:
        """The target from the options, the environment and the configuration, in that order.

        Raises:
            AdminClientError: no token anywhere.
        """
        # Without a configuration nothing of the settings is needed: the defaults are
        # constants here, so that a command against a running gateway never loads pydantic
        # models of every part.
        data_dir, configured = DEFAULT_DATA_DIR, None
        if settings is not None:
            from mcp_aggregator.serve.addresses import local_name

            serve = settings.serve
            data_dir, configured = serve.data_dir, serve.admin_token
            if gateway is None:
                gateway = f"http://{local_name(serve.host)}:{serve.port}"
        gateway = gateway or DEFAULT_GATEWAY
        found = token or os.environ.get(TOKEN_ENV) or configured or read_admin_token(data_dir)
        if not found:
            where = data_dir / ADMIN_TOKEN_FILE
            raise AdminClientError(
                f"no admin token: pass --token, set ${TOKEN_ENV}, or run where the gateway keeps {where}"
            )
        return cls(gateway.rstrip("/"), found)


def api_error_message(status: int, body: Any) -> str:
    """The API's error body as one line per problem, each naming its field. Pure."""
    detail = body.get("detail") if isinstance(body, dict) else body
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        return "; ".join(str(item.get("msg", item)) if isinstance(item, dict) else str(item) for item in detail)
    if isinstance(detail, dict):
        if "message" in detail:
            return str(detail["message"])
        if "field" in detail:
            return f"{detail['field']}: {detail.get('reason', '')}"
    return f"the gateway answered {status}"


class GatewayClient:
    """Synchronous calls to one gateway's REST API; use as a context manager.

    Each request opens its own connection (HTTP/1.1, then closed): a command makes one to a
    few requests, and a fresh connection cannot have been dropped by the gateway's idle
    timeout while the command waited on a person. The standard library's client is used,
    not httpx, because importing httpx would be a third of a short command's run.
    """

    def __init__(self, target: GatewayTarget, *, timeout: float = 60.0) -> None:
        self.target = target
        self.timeout = timeout
        url = urlsplit(target.base_url)
        try:
            self._port = url.port
        except ValueError:
            url = url._replace(scheme="")
        if url.scheme not in ("http", "https") or not url.hostname:
            raise AdminClientError(f"--gateway {target.base_url!r}: expected http://HOST[:PORT] or https://HOST[:PORT]")
        self._scheme, self._host, self._prefix = url.scheme, url.hostname, url.path.rstrip("/")
        self._tls: ssl.SSLContext | None = None
        self.last_headers = HTTPMessage()
        """The headers of the last answer (some endpoints say more there, e.g. an incomplete search)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        pass

    def get(self, path: str, **params: Any) -> Any:
        clean = {key: value for key, value in params.items() if value is not None}
        return self.request("GET", path, params=clean)

    def post(self, path: str, body: Any = None) -> Any:
        return self.request("POST", path, body=body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """The decoded JSON answer (None for an empty one).

        Raises:
            AdminClientError: the gateway is unreachable, refused the token, lacks the
                endpoint, or answered with an error (its message).
        """
        base = self.target.base_url
        target = self._prefix + API_PREFIX + path + (f"?{query_string(params)}" if params else "")
        sent = {"Authorization": f"Bearer {self.target.token}", "Accept": "application/json", **(headers or {})}
        content = b""
        if body is not None:
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
            sent["Content-Type"] = "application/json"
        connection = self._connection()
        try:
            try:
                connection.connect()
            except OSError as exc:
                raise self._unreachable(exc) from exc
            try:
                connection.request(method, target, body=content if method != "GET" else None, headers=sent)
                response = connection.getresponse()
                data = response.read()
            except (OSError, HTTPException) as exc:
                raise AdminClientError(f"the gateway at {base} did not answer {method} {path}: {exc}") from exc
        finally:
            connection.close()
        self.last_headers = response.headers
        if response.status == 401:
            raise AdminClientError(f"the gateway at {base} refused the admin token (401); pass --token")
        answer = _json(data, response.headers.get_content_charset() or "utf-8")
        if response.status == 404 and answer == {"detail": "Not Found"}:
            raise AdminClientError(
                f"the gateway at {base} has no {method} {API_PREFIX}{path} (it runs without this feature)"
            )
        if response.status >= 400:
            detail = answer.get("detail") if isinstance(answer, dict) else None
            raise AdminClientError(api_error_message(response.status, answer), detail=detail)
        return answer

    def server(self, name: str) -> dict[str, Any]:
        """The listed server called ``name``.

        Raises:
            AdminClientError: no such server.
        """
        for server in self.get("/servers"):
            if server["name"] == name:
                return dict(server)
        raise AdminClientError(f"no server named {name!r} on {self.target.base_url}")

    def _connection(self) -> HTTPConnection:
        if self._scheme == "http":
            return HTTPConnection(self._host, self._port, timeout=self.timeout)
        if self._tls is None:
            self._tls = tls_context()
        return HTTPSConnection(self._host, self._port, timeout=self.timeout, context=self._tls)

    def _unreachable(self, exc: BaseException) -> AdminClientError:
        base = self.target.base_url
        if isinstance(exc, ssl.SSLCertVerificationError):
            return AdminClientError(
                f"the gateway at {base} has a certificate this machine does not trust ({exc}); "
                "name its CA in $SSL_CERT_FILE"
            )
        if isinstance(exc, ssl.SSLError):
            return AdminClientError(f"the gateway at {base} did not complete TLS: {exc}")
        return AdminClientError(
            f"no gateway answers at {base} (is it running? start it with `mcp-aggregator serve`, "
            "or point at it with --gateway)"
        )


def query_string(params: dict[str, Any]) -> str:
    """``params`` as a URL query, as httpx wrote it: a list repeats its key, booleans are
    ``true``/``false``, None is left out. Pure."""
    pairs: list[tuple[str, str]] = []
    for key, value in params.items():
        for item in value if isinstance(value, list | tuple) else [value]:
            if item is not None:
                pairs.append((key, ("true" if item else "false") if isinstance(item, bool) else str(item)))
    return urlencode(pairs)


def tls_context() -> ssl.SSLContext:
    """The CAs httpx trusted for the CLI: ``$SSL_CERT_FILE`` or ``$SSL_CERT_DIR`` when set,
    else certifi's bundle."""
    cafile, capath = os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")
    if cafile or capath:
        return ssl.create_default_context(cafile=cafile or None, capath=capath or None)
    import certifi  # only a command against an https gateway needs the bundle's path

    return ssl.create_default_context(cafile=certifi.where())


def _json(data: bytes, charset: str) -> Any:
    if not data:
        return None
    text = data.decode(charset, errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text
