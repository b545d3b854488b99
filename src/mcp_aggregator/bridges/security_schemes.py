"""Security schemes of an OpenAPI document or an agent card, and the configured secrets that
satisfy them (pure).

A server's ``security`` setting maps a scheme's name to its secret (``${VAR}`` expanded at
connect). ``http bearer`` and an ``oauth2``/``openIdConnect`` scheme take it as the bearer
token; ``http basic`` as ``user:password``; ``apiKey`` goes in the header, query parameter or
cookie the scheme names. A requirement is a list of alternatives, each a set of schemes that
must all be given (OpenAPI's and A2A's ``security``); the first alternative whose schemes all
have a secret is used; an empty alternative means no credential is needed. A scheme whose
header the server's ``headers`` setting already sends counts as given (``headers`` keeps
working as before schemes were read).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from mcp_aggregator.errors import MissingCredentialError

Requirement = tuple[frozenset[str], ...]
"""Alternatives, each a set of scheme names; ``()``: nothing required."""


class SchemeKind(StrEnum):
    BEARER = "http bearer"
    BASIC = "http basic"
    API_KEY = "apiKey"
    OAUTH2 = "oauth2"
    OPENID = "openIdConnect"
    UNSUPPORTED = "unsupported"
    """mutualTLS, another HTTP scheme: no configured secret can satisfy it."""


@dataclass(frozen=True)
class Scheme:
    name: str
    kind: SchemeKind
    location: str = "header"
    """apiKey: ``header``, ``query`` or ``cookie``."""
    param: str = "Authorization"
    """apiKey: the header, query parameter or cookie name."""
    detail: str = ""
    """What the document says it is, for messages (``mutualTLS``, ``http digest``)."""

    def header(self) -> str | None:
        """The header this scheme's secret goes in, lowercased; None: not a header."""
        if self.kind is SchemeKind.API_KEY:
            return self.param.lower() if self.location == "header" else None
        return None if self.kind is SchemeKind.UNSUPPORTED else "authorization"

    def describe(self) -> str:
        if self.kind is SchemeKind.API_KEY:
            return f"apiKey in {self.location} {self.param!r}"
        return self.detail or self.kind.value


@dataclass(frozen=True)
class Placement:
    """Where the chosen secrets go in a request."""

    headers: dict[str, str] = field(default_factory=dict)
    params: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)


def env_name(server: str, scheme: str) -> str:
    return re.sub(r"[^A-Z0-9]+", "_", f"{server}_{scheme}".upper()).strip("_")


def _place(scheme: Scheme, secret: str, placement: Placement) -> None:
    if scheme.kind is SchemeKind.API_KEY:
        target = {"header": placement.headers, "query": placement.params, "cookie": placement.cookies}
        target.get(scheme.location, placement.headers)[scheme.param] = secret
    elif scheme.kind is SchemeKind.BASIC:
        placement.headers["Authorization"] = "Basic " + base64.b64encode(secret.encode()).decode()
    else:
        placement.headers["Authorization"] = f"Bearer {secret}"


def placement(
    requirement: Requirement,
    schemes: Mapping[str, Scheme],
    secrets: Mapping[str, str],
    *,
    server: str,
    what: str,
    sent_headers: Set[str] = frozenset(),
    signed_in: bool = False,
) -> Placement:
    """The secrets of the first satisfiable alternative of ``requirement``, placed;
    ``sent_headers`` (lowercased) are the configured ``headers``, which satisfy their scheme;
    ``signed_in`` (``auth: oauth``) satisfies every ``oauth2`` and ``openIdConnect`` scheme.

    Raises ``MissingCredentialError`` naming ``what`` (``operation listBooks``), the schemes, and
    the configuration line to add.
    """
    out = Placement()
    if not requirement:
        return out

    def given(name: str) -> bool:
        scheme = schemes.get(name)
        if scheme is None or scheme.kind is SchemeKind.UNSUPPORTED:
            return False
        if signed_in and scheme.kind in (SchemeKind.OAUTH2, SchemeKind.OPENID):
            return True
        return name in secrets or scheme.header() in sent_headers

    for alternative in requirement:
        if all(given(name) for name in alternative):
            for name in sorted(alternative):
                if name in secrets:
                    _place(schemes[name], secrets[name], out)
            return out
    raise MissingCredentialError(_missing(requirement, schemes, secrets, server=server, what=what))


def _missing(
    requirement: Requirement, schemes: Mapping[str, Scheme], secrets: Mapping[str, str], *, server: str, what: str
) -> str:
    def said(name: str) -> str:
        scheme = schemes.get(name)
        return f"{name!r} ({scheme.describe()})" if scheme is not None else f"{name!r} (not among the securitySchemes)"

    options = " or ".join(" + ".join(said(name) for name in sorted(alt)) for alt in requirement)
    wanted = sorted(next(iter(requirement)) - set(secrets))
    line = ", ".join(f'{name}: "${{{env_name(server, name)}}}"' for name in wanted if name in schemes)
    advice = f"; add to server {server!r}: security: {{{line}}}" if line else ""
    return f"{what} needs a credential for security scheme {options}, and none is configured{advice}"


def unknown_scheme(secrets: Iterable[str], schemes: Mapping[str, Scheme], *, owner: str, where: str) -> str | None:
    """Why the first secret named after no declared scheme is wrong (None: all are known);
    ``owner`` is ``the document`` or ``the agent card``, ``where`` its schemes' place."""
    unknown = sorted(name for name in secrets if name not in schemes)
    if not unknown:
        return None
    have = ", ".join(sorted(schemes)) or "none"
    return f"security.{unknown[0]}: {owner} has no security scheme {unknown[0]!r} ({where} has: {have})"


def openapi_scheme(name: str, raw: Mapping[str, Any]) -> Scheme:
    kind = str(raw.get("type") or "")
    if kind == "http":
        how = str(raw.get("scheme") or "").lower()
        if how == "bearer":
            return Scheme(name, SchemeKind.BEARER)
        if how == "basic":
            return Scheme(name, SchemeKind.BASIC)
        return Scheme(name, SchemeKind.UNSUPPORTED, detail=f"http {how or '(no scheme)'}")
    if kind == "apiKey":
        return Scheme(
            name, SchemeKind.API_KEY, location=str(raw.get("in") or "header"), param=str(raw.get("name") or "")
        )
    if kind == "oauth2":
        return Scheme(name, SchemeKind.OAUTH2)
    if kind == "openIdConnect":
        return Scheme(name, SchemeKind.OPENID)
    return Scheme(name, SchemeKind.UNSUPPORTED, detail=kind or "(no type)")


def openapi_schemes(document: Mapping[str, Any]) -> dict[str, Scheme]:
    components = document.get("components")
    raw = components.get("securitySchemes") if isinstance(components, Mapping) else None
    if not isinstance(raw, Mapping):
        return {}
    return {str(name): openapi_scheme(str(name), spec) for name, spec in raw.items() if isinstance(spec, Mapping)}


def openapi_requirement(raw: Any) -> Requirement | None:
    """An OpenAPI ``security`` value (a list of ``{scheme: [scopes]}``); None when absent."""
    if not isinstance(raw, list):
        return None
    return tuple(frozenset(str(name) for name in alt) for alt in raw if isinstance(alt, Mapping))
