"""The gateway's upstream OAuth sign-in for a bridged server, told where to sign in by an
``oauth2`` security scheme instead of MCP's protected-resource discovery.

An MCP server names its authorization server through RFC 9728 metadata; a REST API or an
agent names it in its document or card: a scheme's ``authorizationCode`` flow (a person
signs in: ``authorizationUrl``, ``tokenUrl``) or ``clientCredentials`` flow (``tokenUrl``),
each with its scopes. ``scheme_discovery`` gives ``Credentials`` that reading for an
``openapi`` or ``a2a`` server with ``auth: oauth``; everything after it (registration or the
configured client, PKCE, the callback, token storage and refresh) is the gateway's usual.
A flow names no issuer nor registration endpoint: where the token endpoint's origin publishes
RFC 8414 metadata naming that token endpoint, its issuer and dynamic registration are used;
otherwise the origin stands for the issuer and ``auth.client_id`` is needed. Without such an
``oauth2`` scheme, an ``openIdConnect`` scheme's discovery document says it all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx
import httpx2
from mcp.shared.auth import OAuthMetadata
from pydantic import ValidationError

from mcp_aggregator.bridges.agent_card import read_agent_card
from mcp_aggregator.credentials.config import Grant, UpstreamOAuth
from mcp_aggregator.credentials.records import AuthServer
from mcp_aggregator.credentials.server_credentials import Discover
from mcp_aggregator.errors import BridgeError, SignInFailedError
from mcp_aggregator.settings import ServerConfig, Transport

_FLOW = {Grant.AUTHORIZATION_CODE: "authorizationCode", Grant.CLIENT_CREDENTIALS: "clientCredentials"}


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _oauth2_schemes(schemes: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """Each ``oauth2`` scheme's flows, as OpenAPI writes them (an agent card's
    ``oauth2SecurityScheme`` is the same shape under another key)."""
    out: dict[str, Mapping[str, Any]] = {}
    for name, raw in schemes.items():
        if not isinstance(raw, Mapping):
            continue
        card = raw.get("oauth2SecurityScheme")
        spec = card if isinstance(card, Mapping) else raw if raw.get("type") == "oauth2" else None
        flows = spec.get("flows") if spec is not None else None
        if isinstance(flows, Mapping):
            out[str(name)] = flows
    return out


def oidc_url(schemes: Mapping[str, Any]) -> str | None:
    """The first ``openIdConnect`` scheme's discovery URL (an agent card's
    ``openIdConnectSecurityScheme`` is the same under another key)."""
    for raw in schemes.values():
        if not isinstance(raw, Mapping):
            continue
        card = raw.get("openIdConnectSecurityScheme")
        spec = card if isinstance(card, Mapping) else raw if raw.get("type") == "openIdConnect" else None
        url = spec.get("openIdConnectUrl") if spec is not None else None
        if isinstance(url, str) and url:
            return url
    return None


def scheme_server(
    schemes: Mapping[str, Any], auth: UpstreamOAuth, *, resource: str, scopes: tuple[str, ...], where: str
) -> AuthServer:
    """The authorization server of the first ``oauth2`` scheme with the flow ``auth.grant``
    needs (pure). Raises ``SignInFailedError``-ready text as ``ValueError`` naming ``where``."""
    wanted = _FLOW[auth.grant]
    oauth2 = _oauth2_schemes(schemes)
    for name, flows in oauth2.items():
        flow = flows.get(wanted)
        if not isinstance(flow, Mapping) or not isinstance(flow.get("tokenUrl"), str):
            continue
        token_url = str(flow["tokenUrl"])
        authorize = flow.get("authorizationUrl")
        if auth.grant is Grant.AUTHORIZATION_CODE and not isinstance(authorize, str):
            raise ValueError(f"{where}.{name}.flows.{wanted}: no authorizationUrl")
        offered = flow.get("scopes")
        scope = " ".join(scopes) or (" ".join(offered) if isinstance(offered, Mapping) else "") or None
        return AuthServer(
            # A flow names no issuer: its token endpoint's origin stands for it (an RFC 9207
            # ``iss`` on the callback must then be that origin).
            issuer=_origin(token_url),
            token_endpoint=token_url,
            resource=resource,
            authorization_endpoint=str(authorize) if isinstance(authorize, str) else None,
            scope=scope,
        )
    have = ", ".join(sorted(oauth2)) or "none"
    raise ValueError(
        f"{where}: no oauth2 security scheme has the {wanted} flow auth.grant {auth.grant} needs "
        f"(oauth2 schemes: {have})"
    )


async def _oidc_server(url: str, http: httpx2.AsyncClient, *, resource: str, scopes: tuple[str, ...]) -> AuthServer:
    """The authorization server an OpenID Connect discovery document at ``url`` describes.
    Raises ``ValueError`` saying why it cannot be used."""
    try:
        response = await http.get(url)
        if response.status_code != 200:
            raise ValueError(f"openIdConnectUrl {url} answered HTTP {response.status_code}")
        metadata = OAuthMetadata.model_validate_json(response.content)
    except httpx2.HTTPError as exc:
        raise ValueError(f"openIdConnectUrl {url} could not be fetched ({exc})") from exc
    except ValidationError as exc:
        raise ValueError(f"openIdConnectUrl {url} is no OpenID Connect discovery document ({exc})") from exc
    return AuthServer(
        issuer=str(metadata.issuer).rstrip("/"),
        token_endpoint=str(metadata.token_endpoint),
        resource=resource,
        authorization_endpoint=str(metadata.authorization_endpoint) if metadata.authorization_endpoint else None,
        registration_endpoint=str(metadata.registration_endpoint) if metadata.registration_endpoint else None,
        scope=" ".join(scopes) or (" ".join(metadata.scopes_supported or []) or None),
    )


async def _with_metadata(server: AuthServer, http: httpx2.AsyncClient) -> AuthServer:
    """``server`` with the issuer and registration endpoint its RFC 8414 metadata gives, when
    that metadata names the same token endpoint; as it is otherwise."""
    try:
        response = await http.get(f"{server.issuer}/.well-known/oauth-authorization-server")
        metadata = OAuthMetadata.model_validate_json(response.content) if response.status_code == 200 else None
    except (httpx2.HTTPError, ValidationError):
        return server
    if metadata is None or str(metadata.token_endpoint) != server.token_endpoint:
        return server
    registration = str(metadata.registration_endpoint) if metadata.registration_endpoint else None
    return AuthServer(
        issuer=str(metadata.issuer).rstrip("/"),
        token_endpoint=server.token_endpoint,
        resource=server.resource,
        authorization_endpoint=server.authorization_endpoint,
        registration_endpoint=registration,
        scope=server.scope,
    )


async def _document_schemes(config: ServerConfig, http: httpx2.AsyncClient) -> tuple[Mapping[str, Any], str]:
    """The document's security schemes, and the API's base URL (the resource signed in to)."""
    # The OpenAPI bridge (jsonschema) loads with the first such server, not at every start.
    from mcp_aggregator.bridges.openapi.document_source import api_base_url, read_document

    assert config.spec is not None
    document = await read_document(config.spec, http, server=config.name)
    base = api_base_url(document, config.spec, config.base_url, server=config.name)
    components = document.get("components")
    schemes = components.get("securitySchemes") if isinstance(components, Mapping) else None
    return (schemes if isinstance(schemes, Mapping) else {}), base


async def _card_schemes(config: ServerConfig) -> Mapping[str, Any]:
    # protobuf loads with the first agent's sign-in, not at every start.
    from google.protobuf.json_format import MessageToDict

    assert config.base_url is not None
    async with httpx.AsyncClient(timeout=config.connect_timeout_secs) as http:
        card = await read_agent_card(http, config.base_url, server=config.name)
    schemes = MessageToDict(card).get("securitySchemes")
    return schemes if isinstance(schemes, Mapping) else {}


def scheme_discovery(config: ServerConfig, http: httpx2.AsyncClient) -> Discover | None:
    """For an ``openapi``/``a2a`` server with ``auth``: sign-in by its document's or card's
    ``oauth2`` scheme, read again at each sign-in; None for any other server. ``http`` is the
    credentials' client (no redirects). The returned function raises ``SignInFailedError``."""
    auth = config.auth
    if auth is None or config.transport not in (Transport.OPENAPI, Transport.A2A):
        return None

    async def discover(scopes: tuple[str, ...]) -> AuthServer:
        try:
            if config.transport is Transport.OPENAPI:
                schemes, resource = await _document_schemes(config, http)
                where = "components.securitySchemes"
            else:
                assert config.base_url is not None
                schemes, resource, where = await _card_schemes(config), config.base_url, "securitySchemes"
            try:
                found = scheme_server(schemes, auth, resource=resource, scopes=scopes, where=where)
            except ValueError:
                url = oidc_url(schemes)
                if url is None:
                    raise
                return await _oidc_server(url, http, resource=resource, scopes=scopes)
            return await _with_metadata(found, http)
        except BridgeError as exc:
            raise SignInFailedError(config.name, str(exc).removeprefix(f"{config.name}: ")) from exc
        except ValueError as exc:
            raise SignInFailedError(config.name, str(exc)) from exc

    return discover
