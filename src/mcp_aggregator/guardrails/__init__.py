"""Guardrails: secrets, personal data and injected instructions caught on their way through
(arguments going out, results coming back, tool definitions as listed).

The package exports its configuration only: the settings import it, and the detectors'
libraries load with ``guard`` when a gateway is built.
"""

from mcp_aggregator.guardrails.config import DEFAULT_RULES, GuardAction, GuardKind, GuardPlace, GuardrailRule

__all__ = ["DEFAULT_RULES", "GuardAction", "GuardKind", "GuardPlace", "GuardrailRule"]
