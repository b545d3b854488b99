"""Redaction of secrets in connection configs, for every API response and log line."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mcp_aggregator.guardrails.secret_detector import SecretDetector

REDACTED = "***"

_SECRET_MAPPINGS = ("headers", "env", "arguments", "security")
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
    """Command-line arguments with their secrets hidden, everything else shown as written.

    ``["--token", "sk-1", "--repository", "/srv/repo", "--key=abc"]`` ->
    ``["--token", "***", "--repository", "/srv/repo", "--key=***"]``. Hidden: the value
    of a flag named like a credential (``--token``, ``--api-key=``, ``--password``), a
    value that looks like a token, says it holds a credential (``Bearer ...``,
    ``password=...``) or that the secret detectors recognise, a URL's
    password and token-like parts, a path's segments shaped like a known token, a sealed
    ``${sealed:...}`` reference. A path, a module name or a ``${VAR}`` reference (the
    variable's name, not its value) is not a secret.
    """
    return [shown for shown, _ in _classified(args)]


def arg_secrets(args: list[str] | tuple[str, ...]) -> set[str]:
    """The literal values ``redact_args`` hides, to scrub them out of text (stderr, errors)."""
    return set().union(*(hidden for _, hidden in _classified(args)))


_SECRET_FLAG = re.compile(
    r"token|secret|passw|pwd|auth|credential|cookie|bearer|api[-_]?key|private[-_]?key|^-+key$", re.IGNORECASE
)
_CREDENTIAL = re.compile(
    r"authorization|bearer\s|basic\s|passw|secret|token[=:]|api[-_]?key[=:]|private[-_]?key", re.IGNORECASE
)
"""Words that say a value is (or holds) a credential: ``Authorization: Bearer ...``,
``password=...``."""
_SEALED = re.compile(r"\$\{sealed:[^}]*\}")
_PATH_STARTS = ("/", "~/", "./", "../")
_NEGATIVE_NUMBER = re.compile(r"-[0-9][0-9.]*")
_DETECTOR = SecretDetector()


def is_plain_path(value: Any) -> bool:
    """A value written as a path (``/srv/data``, ``./notes.json``, ``~/x``) with nothing
    secret in it: no ``${VAR}``, no token-like segment. A path is not a secret, so it is
    shown, and a server's error that names it stays readable."""
    return (
        isinstance(value, str)
        and value.startswith(_PATH_STARTS)
        and "${" not in value
        and "\n" not in value
        and not _value(value)[1]
    )


def _classified(args: list[str] | tuple[str, ...]) -> list[tuple[str, set[str]]]:
    """Each argument as shown, with the parts of it that are hidden."""
    out: list[tuple[str, set[str]]] = []
    previous: str | None = None
    for arg in args:
        if not isinstance(arg, str):
            out.append((REDACTED, set()))
            previous = None
        elif arg.startswith("-") and not _NEGATIVE_NUMBER.fullmatch(arg):
            flag, eq, value = arg.partition("=")
            if looks_like_token(flag.lstrip("-")):
                out.append((REDACTED, {arg}))
            elif eq and _SECRET_FLAG.search(flag):
                out.append((f"{flag}={REDACTED}", {value}))
            elif eq:
                shown, hidden = _value(value)
                out.append((f"{flag}={shown}", hidden))
            else:
                out.append((arg, set()))
            previous = None if eq else flag
        elif previous is not None and _SECRET_FLAG.search(previous):
            out.append((REDACTED, {arg}))
            previous = None
        else:
            out.append(_value(arg))
            previous = None
    return out


def _value(value: str) -> tuple[str, set[str]]:
    """A value as it may be shown, and its hidden parts: whole, or with ``***`` where it is
    (or holds) a secret."""
    if _URL.match(value):
        return redact_url(value), url_secrets(value)
    path = value.startswith(_PATH_STARTS)
    if (not path and (looks_like_token(value) or _CREDENTIAL.search(value))) or _DETECTOR.find(value):
        return REDACTED, {value}
    hidden = set(_SEALED.findall(value))
    if path:
        # A folder's name is rarely a secret and often long (``test_a_server_sees_it0``):
        # only a known token's shape hides it.
        hidden.update(segment for segment in value.split("/") if _KNOWN_TOKEN.match(segment) and len(segment) >= 12)
    shown = value
    for part in sorted(hidden, key=len, reverse=True):
        shown = shown.replace(part, REDACTED)
    return shown, hidden


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
    *which* headers are set), except an ``env`` value that is a plain path (``is_plain_path``);
    ``args`` are shown but for their secrets (``redact_args``); every
    string that is a URL, at any depth, goes through ``redact_url``. ``cfg`` itself is not
    changed.
    """
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        if key == "env" and isinstance(value, Mapping):
            out[key] = {name: item if is_plain_path(item) else REDACTED for name, item in value.items()}
        elif key in _SECRET_MAPPINGS and isinstance(value, Mapping):
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
