"""Log lines an operator can use: JSON or text, each carrying its request id, client, server and tool."""

from mcp_aggregator.logs.log_context import call_context, current_request_id
from mcp_aggregator.logs.log_format import JsonLogFormatter, LogFormat, configure_logging

__all__ = ["JsonLogFormatter", "LogFormat", "call_context", "configure_logging", "current_request_id"]
