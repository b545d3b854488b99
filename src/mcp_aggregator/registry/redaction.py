"""Redaction of secrets in connection configs, for every API response and log line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "***"

_SECRET_MAPPINGS = ("headers", "env", "arguments")
_SECRET_QUERY_KEY = re.compile(r"token|key|secret|pass|auth|sig|credential|session|code", re.IGNORECASE)
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_KNOWN_TOKEN = re.compile(r"^(sk|pk|rk)[-_]|^(ghp|gho|ghs|ghu|github_pat|glpat|xox[abprs]|AKIA|ya29)[-_.]?", re.I)
_TOKENISH = re.compile(r"^[A-Za-z0-9_\-.~+/=]{20,}$")


def looks_like_token(text: str) -> bool:
    """A path segment or value that is probably a credential: a known token prefix, or 20+
    characters of token alphabet mixing letters and digits (webhook keys, UUIDs, JWTs)."""
    if _KNOWN_TOKEN.match(text) and len(text) >= 12:
        return True
    return bool(_TOKENISH.match(text)) and any(c.isdigit() for c in text) and any(c.isalpha() for c in text)


def redact_args(args: list[str] | tuple[str, ...]) -> list[str]:
    """Command-line arguments as env values are shown: every value hidden, flags kept.

    ``["--token", "sk-1", "-v", "--key=abc", "/srv/data"]`` ->
    ``["--token", "***", "-v", "--key=***", "***"]``: an argument can be anything
    (a token, a password, a connection string), and its flag says what it is.
    """
    out = []
    for arg in args:
        if not isinstance(arg, str):
            out.append(REDACTED)
        elif arg.startswith("-") and "=" in arg:
            out.append(arg.split("=", 1)[0] + "=" + REDACTED)
        elif arg.startswith("-") and not looks_like_token(arg) and " " not in arg:
            out.append(arg)
        else:
            out.append(REDACTED)
    return out


def redact_url(url: str) -> str:
    """Hide the password of the userinfo, token-like path segments, and secret query values.

    ``https://bob:pw@h/p?api_key=1&v=2`` -> ``https://bob:***@h/p?api_key=***&v=2``;
    ``https://hooks.example.com/T0A1/B0C2/9f8e7d6c5b4a39281706f5e4`` -> ``.../T0A1/B0C2/***``.
    The user name stays (it identifies, it does not authenticate); query keys match
    token, key, secret, pass, auth, sig, credential, session or code, and any query value
    that looks like a token is hidden whatever its key.
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
        hidden = [(k, REDACTED if _SECRET_QUERY_KEY.search(k) or looks_like_token(v) else v) for k, v in pairs]
        query = urlencode(hidden, safe="*")
    path = "/".join(REDACTED if looks_like_token(seg) else seg for seg in parts.path.split("/"))
    return urlunsplit((parts.scheme, netloc, path, query, parts.fragment))


def url_secrets(url: str) -> set[str]:
    """The parts of ``url`` that ``redact_url`` hides (password, token-like segments, secret
    query values), for scrubbing them out of error texts that quote the URL."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return {url}
    found = set()
    if parts.password:
        found.add(parts.password)
    found.update(seg for seg in parts.path.split("/") if looks_like_token(seg))
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if value and (_SECRET_QUERY_KEY.search(key) or looks_like_token(value)):
            found.add(value)
    return found


def redact_connection_config(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """Return a copy of ``cfg`` that is safe to show or log.

    The values of ``headers`` and ``env`` (and an OAuth ``client_secret``) become ``"***"`` (keys kept, so an admin sees
    *which* headers are set), ``args`` keep only their flags (``redact_args``); every
    string that is a URL, at any depth, goes through ``redact_url``. ``cfg`` itself is not
    changed.
    """
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key in _SECRET_MAPPINGS and isinstance(value, Mapping):
            out[key] = dict.fromkeys(value, REDACTED)
        elif key == "args" and isinstance(value, list | tuple):
            out[key] = redact_args(value)
        elif key == "client_secret" and value is not None:
            out[key] = REDACTED
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
