"""``DescriptionScreen``: the guardrails on the tools a server lists.

A tool whose definition (description, title, the descriptions in its schemas) a ``block``
rule objects to is held by definition pinning as a new tool would be, from the first
listing on, until an admin approves it; ``mask`` serves the definition with the finding
masked; ``flag`` serves it and records. Each definition is judged once: a server's
periodic re-listing costs a dictionary look-up per tool, and is not recorded again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import mcp_types as types
import orjson

from mcp_aggregator.guardrails.config import GuardAction
from mcp_aggregator.guardrails.decision import Decision
from mcp_aggregator.guardrails.guard import Guard, Verdict

logger = logging.getLogger(__name__)

_MAX_KEPT: Final = 8192

ListingSink = Callable[[str, str, Sequence[Decision]], None]
"""Told of the decisions on a tool's definition when first judged (server, tool, decisions)."""


class DescriptionScreen:
    """See the module docstring; an instance is the catalogue's ``screen``."""

    def __init__(self, guard: Guard, sink: ListingSink | None = None) -> None:
        self.guard = guard
        self._sink = sink
        self._seen: dict[tuple[str, bytes], Verdict] = {}
        self._held: dict[tuple[str, str], list[str]] = {}
        """Why each tool held at its latest listing is held, by (server, tool)."""

    def __call__(self, server: str, tools: Sequence[types.Tool]) -> tuple[tuple[types.Tool, ...], frozenset[str]]:
        served: list[types.Tool] = []
        held: set[str] = set()
        self._held = {key: why for key, why in self._held.items() if key[0] != server}
        for tool in tools:
            verdict = self._verdict(server, tool.model_dump(mode="json", by_alias=True, exclude_none=True))
            if verdict.blocked is not None:
                held.add(tool.name)
                served.append(tool)
                self._held[(server, tool.name)] = [
                    d.explanation for d in verdict.decisions if d.action is GuardAction.BLOCK
                ]
                continue
            if verdict.changed:
                served.append(types.Tool.model_validate(verdict.value))
            else:
                served.append(tool)
        return tuple(served), frozenset(held)

    def reasons(self, server: str, definition: Mapping[str, Any]) -> list[str]:
        """Why a ``block`` rule held the tool of this definition at its latest listing (empty:
        none did), for the admin. A look-up: judging again would audit the tool once more,
        and the definition a pin keeps lacks what the listing judged (its title)."""
        return list(self._held.get((server, str(definition.get("name", ""))), ()))

    def _verdict(self, server: str, definition: dict[str, Any]) -> Verdict:
        key = (server, orjson.dumps(definition, option=orjson.OPT_SORT_KEYS))
        verdict = self._seen.get(key)
        if verdict is not None:
            return verdict
        verdict = self.guard.judge_definition(server, definition)
        if len(self._seen) >= _MAX_KEPT:
            self._seen.clear()
        self._seen[key] = verdict
        if verdict.decisions:
            name = str(definition.get("name", ""))
            self.guard.count(verdict.decisions)
            for decision in verdict.decisions:
                logger.warning("tool %s.%s: %s (%s)", server, name, decision.explanation, decision.action.value)
            if self._sink is not None:
                self._sink(server, name, verdict.decisions)
        return verdict
