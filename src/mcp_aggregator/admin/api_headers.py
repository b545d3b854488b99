"""Response headers of the admin API that say more than the body, shared with its clients
(the command line reads them without loading the API's routes)."""

from __future__ import annotations

INCOMPLETE_HEADER = "X-Search-Incomplete"
PENDING_HEADER = "X-Search-Pending"
