"""A domain facade: one MCP tool whose ``cmd`` argument selects one of several commands."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

import mcp_types as types

from mcp_aggregator.errors import AggregatorError, FacadeError
from mcp_aggregator.facades.command import Command
from mcp_aggregator.facades.detail import Detail
from mcp_aggregator.facades.envelope import Envelope

logger = logging.getLogger(__name__)

# The strictest common client rule (Claude Desktop); dots are refused by OpenAI-style clients.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_REQUEST_KEYS = frozenset({"cmd", "detail", "params"})


class Domain:
    """A named set of commands served as one tool.

    Request ``{"cmd": str, "detail"?: "minimal"|"standard"|"full", "params"?: object}``;
    every answer is an envelope dict (see ``envelope``), whatever the input — ``dispatch``
    never raises. Command names are unique case-insensitively; their order is the
    declaration order, and it is the order of the tool description.
    """

    def __init__(self, name: str, description: str, commands: Sequence[Command]) -> None:
        if not _TOOL_NAME.match(name):
            raise ValueError(f"domain name {name!r} is not a valid tool name")
        if not commands:
            raise ValueError(f"domain {name!r} has no commands")
        by_key: dict[str, Command] = {}
        for command in commands:
            if command.key in by_key:
                raise ValueError(f"domain {name!r}: duplicate command {command.name!r}")
            by_key[command.key] = command
        self.name = name
        self.description = description
        self._commands = by_key

    @property
    def commands(self) -> tuple[Command, ...]:
        return tuple(self._commands.values())

    def command(self, name: str) -> Command | None:
        return self._commands.get(name.lower())

    @cached_property
    def _command_list(self) -> str:
        return ", ".join(command.name for command in self._commands.values())

    @cached_property
    def _definition(self) -> types.Tool:
        lines = "\n".join(command.line() for command in self._commands.values())
        head = f"{self.description}\n" if self.description else ""
        # No enum on cmd: the description already lists the commands, and an enum would
        # make validating clients refuse the case-insensitive spellings we accept.
        schema = {
            "type": "object",
            "properties": {
                "cmd": {"type": "string"},
                "params": {"type": "object"},
                "detail": {"enum": [level.value for level in Detail]},
            },
            "required": ["cmd"],
        }
        return types.Tool(
            name=self.name,
            description=f"{head}Commands (cmd; args go in params):\n{lines}",
            input_schema=schema,
        )

    def tool_definition(self) -> types.Tool:
        """The MCP tool: deterministic text, one short line per command (a fresh copy)."""
        return self._definition.model_copy(deep=True)

    async def dispatch(self, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """Run one request and return its envelope dict."""
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, Mapping):
            return Envelope.failure("", "arguments: must be an object").to_dict()
        raw_cmd = arguments.get("cmd")
        cmd = raw_cmd if isinstance(raw_cmd, str) else ""
        try:
            command, detail, params = self._parse(raw_cmd, arguments)
            data = await command.run(params, detail)
        except AggregatorError as exc:
            return Envelope.failure(cmd, str(exc)).to_dict()
        except Exception as exc:
            # Top-level guard: a bug in a handler must reach the LLM as an envelope, not a trace.
            logger.exception("facade %s command %r failed", self.name, cmd)
            return Envelope.failure(cmd, f"internal error ({type(exc).__name__}): {exc}").to_dict()
        return Envelope.success(cmd, data).to_dict()

    def _parse(self, raw_cmd: object, arguments: Mapping[str, Any]) -> tuple[Command, Detail, dict[str, Any]]:
        if not isinstance(raw_cmd, str) or not raw_cmd.strip():
            raise FacadeError(f"cmd: required string; valid commands: {self._command_list}")
        command = self.command(raw_cmd.strip())
        if command is None:
            raise FacadeError(f"unknown command {raw_cmd!r}; valid commands: {self._command_list}")
        unexpected = sorted(str(key) for key in arguments if key not in _REQUEST_KEYS)
        if unexpected:
            raise FacadeError(f"{unexpected[0]}: unexpected argument; put command arguments in params")
        detail = Detail.parse(arguments.get("detail"))
        params = arguments.get("params")
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise FacadeError(f"params: must be an object, got {type(params).__name__}")
        return command, detail, dict(params)
