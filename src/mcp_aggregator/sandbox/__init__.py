"""Code mode: scripts a model writes run in a pydantic-monty sandbox and call tools through the relay.

``run_code_tool`` (the MCP tool, bound to the relay) is imported from its module: the
settings import this package's config, and the relay imports the settings.
"""

from mcp_aggregator.sandbox.code_sandbox import CodeSandbox
from mcp_aggregator.sandbox.config import CodeLimits, CodeModeSettings
from mcp_aggregator.sandbox.script_outcome import ScriptOutcome

__all__ = ["CodeLimits", "CodeModeSettings", "CodeSandbox", "ScriptOutcome"]
