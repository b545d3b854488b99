"""The admin REST API (``/api/v1/aggregator``), web page (``/``) and metrics (``/metrics``)."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["AdminGateway", "build_admin_app", "check_bind_allowed"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "AdminGateway": ".admin_gateway",
        "build_admin_app": ".app",
        "check_bind_allowed": ".auth",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.admin.admin_gateway import AdminGateway
    from mcp_aggregator.admin.app import build_admin_app
    from mcp_aggregator.admin.auth import check_bind_allowed
