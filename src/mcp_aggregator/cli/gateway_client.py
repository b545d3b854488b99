"""``GatewayClient``: the CLI's side of the admin REST API of a running gateway.

Where the gateway is and which token to send are decided once (``GatewayTarget.resolve``):
``--gateway``, else the serve address of ``--config``'s file, else the default address;
``--token``, else ``$MCP_AGGREGATOR_TOKEN``, else ``serve.admin_token``, else the token
file the gateway keeps in its data dir. Every failure becomes an ``AdminClientError`` whose
message is what the user reads: the API's own words (naming the field), or what is wrong
with the connection.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from mcp_aggregator.admin.admin_token import ADMIN_TOKEN_FILE, read_admin_token
from mcp_aggregator.errors import AdminClientError

if TYPE_CHECKING:
    import httpx

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
    """Synchronous calls to one gateway's REST API; use as a context manager."""

    def __init__(self, target: GatewayTarget, *, timeout: float = 60.0) -> None:
        # httpx is imported by the client, not the module: ``--help`` builds every command
        # (this module included) and sends no request.
        import httpx

        self.target = target
        self._http = httpx.Client(
            base_url=target.base_url + API_PREFIX,
            headers={"Authorization": f"Bearer {target.token}"},
            timeout=timeout,
        )
        self.last_headers = httpx.Headers()
        """The headers of the last answer (some endpoints say more there, e.g. an incomplete search)."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._http.close()

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
        import httpx

        base = self.target.base_url
        try:
            response = self._http.request(method, path, json=body, params=params, headers=headers)
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            raise AdminClientError(
                f"no gateway answers at {base} (is it running? start it with `mcp-aggregator serve`, "
                "or point at it with --gateway)"
            ) from exc
        except httpx.HTTPError as exc:
            raise AdminClientError(f"the gateway at {base} did not answer {method} {path}: {exc}") from exc
        self.last_headers = response.headers
        if response.status_code == 401:
            raise AdminClientError(f"the gateway at {base} refused the admin token (401); pass --token")
        answer = _json(response)
        if response.status_code == 404 and answer == {"detail": "Not Found"}:
            raise AdminClientError(
                f"the gateway at {base} has no {method} {API_PREFIX}{path} (it runs without this feature)"
            )
        if response.status_code >= 400:
            detail = answer.get("detail") if isinstance(answer, dict) else None
            raise AdminClientError(api_error_message(response.status_code, answer), detail=detail)
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


def _json(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text
