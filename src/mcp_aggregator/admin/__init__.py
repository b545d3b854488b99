"""The admin REST API (``/api/v1/aggregator``), web page (``/``) and metrics (``/metrics``)."""

from mcp_aggregator.admin.admin_gateway import AdminGateway
from mcp_aggregator.admin.app import build_admin_app
from mcp_aggregator.admin.auth import check_bind_allowed

__all__ = ["AdminGateway", "build_admin_app", "check_bind_allowed"]
