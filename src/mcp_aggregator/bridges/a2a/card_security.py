"""An agent card's security schemes and requirements in ``security_schemes``' terms (pure),
and what each skill's calls must carry.

The card's requirement covers every request to the agent (the task requests too); a skill's
own requirement, when it has one, covers its messages. a2a-sdk sends per-call credentials as
headers only, so an ``apiKey`` in a cookie becomes a ``Cookie`` header and one in the query
string cannot be sent (its calls fail naming the scheme).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set

from a2a.types import AgentCard, SecurityRequirement, SecurityScheme

from mcp_aggregator.bridges.security_schemes import (
    Requirement,
    Scheme,
    SchemeKind,
    openapi_scheme,
    placement,
    unknown_scheme,
)
from mcp_aggregator.errors import MissingCredentialError

CARD: str = ""
"""The key of the card's own requirement among ``access``'s (skill tools have names)."""


def card_scheme(name: str, raw: SecurityScheme) -> Scheme:
    kind = raw.WhichOneof("scheme")
    if kind == "api_key_security_scheme":
        key = raw.api_key_security_scheme
        return openapi_scheme(name, {"type": "apiKey", "in": key.location, "name": key.name})
    if kind == "http_auth_security_scheme":
        return openapi_scheme(name, {"type": "http", "scheme": raw.http_auth_security_scheme.scheme})
    if kind == "oauth2_security_scheme":
        return Scheme(name, SchemeKind.OAUTH2)
    if kind == "open_id_connect_security_scheme":
        return Scheme(name, SchemeKind.OPENID)
    return Scheme(name, SchemeKind.UNSUPPORTED, detail="mutualTLS" if kind else "(no scheme)")


def card_schemes(card: AgentCard) -> dict[str, Scheme]:
    return {name: card_scheme(name, raw) for name, raw in card.security_schemes.items()}


def unknown_in_card(card: AgentCard, secrets: Iterable[str]) -> str | None:
    """Why a ``security`` entry names no scheme of ``card`` (None: each names one)."""
    return unknown_scheme(secrets, card_schemes(card), owner="the agent card", where="securitySchemes")


def card_requirement(requirements: Iterable[SecurityRequirement]) -> Requirement:
    return tuple(frozenset(req.schemes.keys()) for req in requirements)


def headers_for(
    requirement: Requirement,
    schemes: Mapping[str, Scheme],
    secrets: Mapping[str, str],
    *,
    server: str,
    what: str,
    sent_headers: Set[str],
    signed_in: bool = False,
) -> dict[str, str]:
    """The headers that satisfy ``requirement``; raises ``MissingCredentialError`` (see ``placement``)."""
    placed = placement(
        requirement, schemes, secrets, server=server, what=what, sent_headers=sent_headers, signed_in=signed_in
    )
    if placed.params:
        names = ", ".join(sorted(placed.params))
        raise MissingCredentialError(f"{what}: an apiKey in the query string ({names}) cannot be sent to an A2A agent")
    headers = dict(placed.headers)
    if placed.cookies:
        headers["Cookie"] = "; ".join(f"{name}={value}" for name, value in placed.cookies.items())
    return headers


def access(
    card: AgentCard,
    tools: Mapping[str, str | None],
    secrets: Mapping[str, str],
    *,
    server: str,
    sent_headers: Set[str],
    signed_in: bool = False,
) -> dict[str, dict[str, str] | str]:
    """For the card (``CARD``) and each tool (by name, with its skill id): the headers its
    requests carry, or why it has none."""
    schemes = card_schemes(card)
    default = card_requirement(card.security_requirements)
    skills = {skill.id: card_requirement(skill.security_requirements) for skill in card.skills}
    wanted: dict[str, tuple[Requirement, str]] = {CARD: (default, f"the agent {card.name!r}")}
    for tool, skill in tools.items():
        wanted[tool] = (skills.get(skill or "") or default, f"skill {skill or tool}")
    out: dict[str, dict[str, str] | str] = {}
    for key, (requirement, what) in wanted.items():
        try:
            out[key] = headers_for(
                requirement, schemes, secrets, server=server, what=what, sent_headers=sent_headers, signed_in=signed_in
            )
        except MissingCredentialError as exc:
            out[key] = str(exc)
    return out
