"""A2A agents as tools: ``A2ABridge`` (the server), ``skill_tools`` (the pure core)."""

from mcp_aggregator.bridges.a2a.a2a_bridge import A2ABridge
from mcp_aggregator.bridges.a2a.skill_tools import skill_tools

__all__ = ["A2ABridge", "skill_tools"]
