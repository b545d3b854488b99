"""Per-client budgets on ``/mcp`` and the REST API: 429 with Retry-After past them."""

from __future__ import annotations

from pathlib import Path

from mcp_aggregator.serve.rate_limit import RATE_LIMITED
from tests.serve.http_face import API, face_settings, http_face
from tests.serve.test_host_guard import INITIALIZE, MCP_HEADERS

OTHER_TOKEN = "second-client-token-0123456789"
FIRST_TOKEN = "first-client-token-0123456789"


async def test_past_the_burst_the_rest_api_answers_429_with_retry_after(tmp_path: Path) -> None:
    settings = face_settings(tmp_path, rate_limit={"requests_per_minute": 6, "burst": 2})
    async with http_face(settings) as face, face.admin() as http:
        assert [(await http.get(f"{API}/servers")).status_code for _ in range(2)] == [200, 200]
        refused = await http.get(f"{API}/servers")
        assert refused.status_code == 429
        assert 1 <= int(refused.headers["retry-after"]) <= 20
        assert refused.json()["detail"].startswith("rate limit exceeded (6 requests per minute, burst 2)")
        assert (await http.get("/healthz")).status_code == 200, "liveness is not budgeted"
        async with face.client(Authorization="Bearer another-caller-0123456789") as other:
            assert (await other.get(f"{API}/servers")).status_code == 401, "its own budget: reaches the token check"


async def test_on_mcp_the_429_carries_a_json_rpc_error_and_budgets_are_per_token(tmp_path: Path) -> None:
    # A 60 s window: the sliding-window counter forgets most of the last window's requests
    # once a window boundary passes, so a 1 s burst window (60/min, burst 1) lets the second
    # request through whenever a second ticks over between the two (seen on a slow machine).
    settings = face_settings(
        tmp_path, mcp_tokens=[FIRST_TOKEN, OTHER_TOKEN], rate_limit={"requests_per_minute": 1, "burst": 1}
    )
    async with http_face(settings) as face, face.client() as http:
        first = {**MCP_HEADERS, "Authorization": f"Bearer {FIRST_TOKEN}"}
        assert (await http.post("/mcp", json=INITIALIZE, headers=first)).status_code == 200
        refused = await http.post("/mcp", json=INITIALIZE, headers=first)
        assert refused.status_code == 429
        assert refused.headers["retry-after"]
        body = refused.json()
        assert body["jsonrpc"] == "2.0" and body["error"]["code"] == RATE_LIMITED
        assert "rate limit exceeded" in body["error"]["message"]
        other = {**MCP_HEADERS, "Authorization": f"Bearer {OTHER_TOKEN}"}
        assert (await http.post("/mcp", json=INITIALIZE, headers=other)).status_code == 200
