"""``ClientIdentity``: who a downstream client is, as every later stage of a call sees it.

The serve face decides it once per request (a named client's token, an OAuth subject and
its claims, or nobody) together with the profile the request came in on; it then rides in
the relay's ``Caller`` with every call, so the profile's selection, policies, the audit
record, traces, rate limits and per-user upstream tokens all read the same answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from pydantic import SecretStr

DEFAULT_PROFILE: Final = "default"


@dataclass(frozen=True)
class ClientIdentity:
    """One downstream client.

    ``name`` is the configured client's name (or the OAuth subject when no named client
    matched); None for a client that is not identified. ``subject`` is the stable per-user
    key that per-user upstream tokens are kept under; None when calls are not per user.
    ``claims`` are the verified token's claims (empty for static tokens). ``token`` is the
    bearer token the client presented, for RFC 8693 token exchange with an upstream's
    authorization server only; it is masked in ``str``/``repr`` and left out of comparisons.
    """

    name: str | None = None
    profile: str = DEFAULT_PROFILE
    subject: str | None = None
    claims: Mapping[str, Any] = field(default_factory=dict)
    token: SecretStr | None = field(default=None, repr=False, compare=False)


ANONYMOUS: Final = ClientIdentity()
