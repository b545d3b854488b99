"""Code mode: scripts a model writes run in a pydantic-monty sandbox and call tools through the relay.

``run_code_tool`` (the MCP tool, bound to the relay) is imported from its module: the
settings import this package's config, and the relay imports the settings.
"""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["CodeLimits", "CodeModeSettings", "CodeSandbox", "ScriptOutcome"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "CodeSandbox": ".code_sandbox",
        "CodeLimits": ".config",
        "CodeModeSettings": ".config",
        "ScriptOutcome": ".script_outcome",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.code_mode.code_sandbox import CodeSandbox
    from mcp_aggregator.code_mode.config import CodeLimits, CodeModeSettings
    from mcp_aggregator.code_mode.script_outcome import ScriptOutcome
