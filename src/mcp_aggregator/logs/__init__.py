"""Log lines an operator can use: JSON or text, each carrying its request id, client, server and tool."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["JsonLogFormatter", "LogFormat", "call_context", "configure_logging", "current_request_id"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "call_context": ".log_context",
        "current_request_id": ".log_context",
        "JsonLogFormatter": ".log_format",
        "LogFormat": ".log_format",
        "configure_logging": ".log_format",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.logs.log_context import call_context, current_request_id
    from mcp_aggregator.logs.log_format import JsonLogFormatter, LogFormat, configure_logging
