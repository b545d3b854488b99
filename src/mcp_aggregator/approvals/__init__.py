"""Approvals: tool calls held for a person, bound to their exact arguments.

The package exports its configuration only: the settings import it, and the parts that
hold calls (``approval_stage``, ``approval_desk``, ``gateway_approvals``) pull in the relay,
which the settings must not.
"""

from mcp_aggregator.approvals.config import ApprovalAsk, ApprovalRule, check_approval_rules

__all__ = ["ApprovalAsk", "ApprovalRule", "check_approval_rules"]
