"""Redaction of secrets in connection configs, for every API response and log line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "***"

_SECRET_MAPPINGS = ("headers", "env")
_SECRET_QUERY_KEY = re.compile(r"token|key|secret|pass|auth|sig|credential|session|code", re.IGNORECASE)
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


def redact_url(url: str) -> str:
    """Hide the password of the userinfo and the values of secret-looking query keys.

    ``https://bob:pw@h/p?api_key=1&v=2`` -> ``https://bob:***@h/p?api_key=***&v=2``.
    The user name stays (it identifies, it does not authenticate); query keys match
    token, key, secret, pass, auth, sig, credential, session or code.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, sep, _ = userinfo.partition(":")
        netloc = f"{user}{':' + REDACTED if sep else ''}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, REDACTED if _SECRET_QUERY_KEY.search(k) else v) for k, v in pairs], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def redact_connection_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``cfg`` that is safe to show or log.

    The values of ``headers`` and ``env`` become ``"***"`` (keys kept, so an admin sees
    *which* headers are set); every string that is a URL, at any depth, goes through
    ``redact_url``. ``cfg`` itself is not changed.
    """
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key in _SECRET_MAPPINGS and isinstance(value, Mapping):
            out[key] = dict.fromkeys(value, REDACTED)
        else:
            out[key] = _redact_value(value)
    return out


def _redact_value(value: Any) -> Any:
    if isinstance(value, str):
        return redact_url(value) if _URL.match(value) else value
    if isinstance(value, Mapping):
        return redact_connection_config(value)
    if isinstance(value, list | tuple):
        return [_redact_value(v) for v in value]
    return value
