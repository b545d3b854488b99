"""The audit trail: who called what, through which profile, how it ended and how long it took.

``AuditStage`` (``audit_stage``) records calls on the relay's pipeline; ``AuditWriter``
(``audit_writer``) writes them in batches; ``AuditLog`` stores and reads them.
"""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["AuditEntry", "AuditLog", "AuditPage", "AuditQuery", "AuditSettings", "Outcome"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "AuditEntry": ".audit_entry",
        "Outcome": ".audit_entry",
        "AuditLog": ".audit_log",
        "AuditPage": ".audit_log",
        "AuditQuery": ".audit_log",
        "AuditSettings": ".config",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.audit.audit_entry import AuditEntry, Outcome
    from mcp_aggregator.audit.audit_log import AuditLog, AuditPage, AuditQuery
    from mcp_aggregator.audit.config import AuditSettings
