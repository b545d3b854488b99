"""Guardrails: secrets, personal data and injected instructions caught on their way through
(arguments going out, results coming back, tool definitions as listed).

The package exports its configuration only: the settings import it, and the detectors'
libraries load with ``guard`` when a gateway is built.
"""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["DEFAULT_RULES", "GuardAction", "GuardKind", "GuardPlace", "GuardrailRule"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "DEFAULT_RULES": ".config",
        "GuardAction": ".config",
        "GuardKind": ".config",
        "GuardPlace": ".config",
        "GuardrailRule": ".config",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.guardrails.config import DEFAULT_RULES, GuardAction, GuardKind, GuardPlace, GuardrailRule
