"""A registration body becomes a ``ServerConfig``: BR-001 has one implementation, in settings.

``ServerConfig`` speaks the config file's field names (``transport``, flat ``command``);
its errors are moved onto the API's names (``transport_type``,
``connection_config.command``) so a client can tell which field to fix.
"""

from __future__ import annotations

from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from pydantic_core import ErrorDetails

from mcp_aggregator.admin.schemas import ServerCreate
from mcp_aggregator.settings import ServerConfig

_CONNECTION_FIELDS = (
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "base_url",
    "spec",
    "operations",
    "headers",
    "security",
    "auth",
    "cache",
)
_API_LOCATION: dict[str, tuple[str, ...]] = {
    "transport": ("transport_type",),
    **{field: ("connection_config", field) for field in _CONNECTION_FIELDS},
    "args/env/cwd": ("connection_config",),
}


def server_config_from(body: ServerCreate) -> ServerConfig:
    """Validate ``body`` with ``ServerConfig``'s rules.

    Raises:
        RequestValidationError: FastAPI's 422, each error located at the API field.
    """
    data: dict[str, Any] = {
        "name": body.name,
        "transport": body.transport_type,
        "description": body.description,
        "health_check_url": body.health_check_url,
        **body.connection_config.model_dump(exclude_none=True),
    }
    try:
        return ServerConfig.model_validate(data)
    except ValidationError as exc:
        raise RequestValidationError([api_error(err) for err in exc.errors()]) from exc


def api_error(err: ErrorDetails) -> dict[str, Any]:
    """One ``ServerConfig`` error at its API location, without the input (it may hold secrets).

    Model-level errors carry their field in the message (``"command: required for
    transport stdio"``); that prefix becomes the location.
    """
    loc = tuple(str(part) for part in err["loc"])
    msg = err["msg"].removeprefix("Value error, ")
    if not loc:
        field, sep, rest = msg.partition(": ")
        if sep and field in _API_LOCATION:
            loc, msg = (field,), rest
    head = _API_LOCATION.get(loc[0], loc[:1]) if loc else ()
    return {"type": err["type"], "loc": ("body", *head, *loc[1:]), "msg": msg}
