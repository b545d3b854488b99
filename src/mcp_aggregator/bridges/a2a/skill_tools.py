"""An agent card's skills as tools (pure).

One tool per skill, not one ``send_message`` taking the skill: a model chooses among tools
by name and description, which is what a skill's id, name, description and examples are
written for, and the gateway's tool search indexes each skill on its own; a single tool
would hide every skill behind one description and leave the choice to a free-text field.
An agent that lists no skills gets one tool named after the agent.
"""

from __future__ import annotations

import re
from typing import Any, Final

import mcp_types as types
from a2a.types import AgentCard, AgentSkill

MAX_NAME: Final = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "What to ask the agent, in plain words."},
        "data": {"type": "object", "description": "Optional structured input, sent as a data part."},
        "context_id": {
            "type": "string",
            "description": "Continue an earlier conversation: the context_id an earlier answer gave.",
        },
        "task_id": {
            "type": "string",
            "description": "Answer a task that asked for more input: the task_id that answer gave.",
        },
    },
    "required": ["message"],
}


def tool_name(text: str) -> str:
    return (_UNSAFE.sub("_", text).strip("_") or "ask")[:MAX_NAME]


def _skill_description(card: AgentCard, skill: AgentSkill) -> str:
    lines = [f"{skill.name}: {skill.description}".strip(": ") if skill.name else skill.description]
    if skill.examples:
        lines.append("Examples: " + "; ".join(skill.examples))
    if skill.tags:
        lines.append("Tags: " + ", ".join(skill.tags))
    lines.append(f"(A skill of the A2A agent {card.name!r}; the answer may take a while.)")
    return "\n".join(line for line in lines if line)


def skill_tools(card: AgentCard) -> dict[str, tuple[types.Tool, str | None]]:
    """Tools by name, each with the skill id it asks for (``None``: the agent itself)."""
    annotations = types.ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True)
    # A skill may answer at once or run long: a tasks-aware client may choose either.
    execution = types.ToolExecution(task_support="optional")
    if not card.skills:
        tool = types.Tool(
            name=tool_name(card.name or "ask"),
            title=card.name or None,
            description=card.description or f"Ask the A2A agent {card.name!r}.",
            input_schema=INPUT_SCHEMA,
            annotations=annotations,
            execution=execution,
        )
        return {tool.name: (tool, None)}
    tools: dict[str, tuple[types.Tool, str | None]] = {}
    for skill in card.skills:
        name = tool_name(skill.id or skill.name)
        if name in tools:
            name = tool_name(f"{name}_{len(tools)}")
        tools[name] = (
            types.Tool(
                name=name,
                title=skill.name or None,
                description=_skill_description(card, skill),
                input_schema=INPUT_SCHEMA,
                annotations=annotations,
                execution=execution,
            ),
            skill.id,
        )
    return tools
