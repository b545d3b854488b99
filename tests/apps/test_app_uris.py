from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from mcp_aggregator.apps import EXTENSION_ID, app_uri, relayed_extensions, shown_result, shown_tool
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog, ServerFeatures, prefixed_uri, split_prefixed_uri
from mcp_aggregator.errors import AmbiguousToolError

APP = "ui://clock/app.html"


def east(uri: str) -> str:
    return prefixed_uri("east", uri) if uri == APP else uri


def tool(meta: dict[str, Any] | None) -> types.Tool:
    return types.Tool(name="get_time", input_schema={"type": "object"}, _meta=meta)


@pytest.mark.parametrize(
    ("meta", "shown"),
    [
        (
            {"ui": {"resourceUri": APP, "visibility": ["model"]}},
            {"ui": {"resourceUri": "ui://aggregator+east/clock/app.html", "visibility": ["model"]}},
        ),
        ({"ui/resourceUri": APP, "other": 1}, {"ui/resourceUri": "ui://aggregator+east/clock/app.html", "other": 1}),
        ({"ui": {"resourceUri": "ui://own/app.html"}}, {"ui": {"resourceUri": "ui://own/app.html"}}),
        (None, None),
    ],
)
def test_a_tools_app_address_is_shown_as_the_gateway_routes_it(
    meta: dict[str, Any] | None, shown: dict[str, Any] | None
) -> None:
    assert shown_tool(tool(meta), east).meta == shown


def test_a_tool_naming_no_shared_app_is_the_same_object() -> None:
    unchanged = tool({"ui": {"resourceUri": "ui://own/app.html"}})
    assert shown_tool(unchanged, east) is unchanged
    assert app_uri(unchanged) == "ui://own/app.html"
    assert app_uri(tool({"other": 1})) is None


def test_a_results_links_embedded_resources_and_app_meta_are_shown() -> None:
    result = types.CallToolResult(
        content=[
            types.TextContent(text="12:00"),
            types.ResourceLink(name="clock", uri=APP),
            types.EmbeddedResource(resource=types.TextResourceContents(uri=APP, text="<html/>")),
        ],
        _meta={"ui": {"resourceUri": APP}},
    )
    shown = shown_result(result, east)
    routed = "ui://aggregator+east/clock/app.html"
    assert shown.meta == {"ui": {"resourceUri": routed}}
    link, embedded = shown.content[1], shown.content[2]
    assert isinstance(link, types.ResourceLink) and str(link.uri) == routed
    assert isinstance(embedded, types.EmbeddedResource) and str(embedded.resource.uri) == routed
    plain = types.CallToolResult(content=[types.TextContent(text="12:00")])
    assert shown_result(plain, east) is plain


@pytest.mark.parametrize(
    ("server", "uri", "shown"),
    [
        ("east", "ui://clock/app.html", "ui://aggregator+east/clock/app.html"),
        ("east", "file:///a.txt", "aggregator+east:file:///a.txt"),
    ],
)
def test_a_shared_uri_is_namespaced_keeping_the_ui_scheme_and_routes_back(server: str, uri: str, shown: str) -> None:
    assert prefixed_uri(server, uri) == shown
    assert split_prefixed_uri(shown) == (server, uri)


def test_two_servers_sharing_an_app_address_each_list_and_route_their_own() -> None:
    resource = types.Resource(name="clock", uri=APP, mime_type="text/html;profile=mcp-app")
    features = FeatureCatalog.build({s: ServerFeatures(resources=(resource,)) for s in ("east", "west")})
    listed = sorted(str(r.uri) for r in features.resources)
    assert listed == ["ui://aggregator+east/clock/app.html", "ui://aggregator+west/clock/app.html"]
    assert features.route_resource(listed[1]).server == "west"
    assert features.route_resource(listed[1]).uri == APP
    with pytest.raises(AmbiguousToolError, match=r"call it as 'ui://aggregator\+<server>/clock/app.html'"):
        features.route_resource(APP)


def test_the_gateway_declares_mcp_apps_while_an_upstream_does() -> None:
    apps = types.ServerCapabilities(extensions={EXTENSION_ID: {}, "com.example/other": {}})
    assert relayed_extensions([types.ServerCapabilities(), None, apps]) == {EXTENSION_ID: {}}
    assert relayed_extensions([types.ServerCapabilities(tools=types.ToolsCapability())]) == {}
