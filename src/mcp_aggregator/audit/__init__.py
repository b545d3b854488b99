"""The audit trail: who called what, through which profile, how it ended and how long it took.

``AuditStage`` (``audit_stage``) records calls on the relay's pipeline; ``AuditWriter``
(``audit_writer``) writes them in batches; ``AuditLog`` stores and reads them.
"""

from mcp_aggregator.audit.audit_entry import AuditEntry, Outcome
from mcp_aggregator.audit.audit_log import AuditLog, AuditPage, AuditQuery
from mcp_aggregator.audit.config import AuditSettings

__all__ = ["AuditEntry", "AuditLog", "AuditPage", "AuditQuery", "AuditSettings", "Outcome"]
