"""A 2026-07-28 upstream whose tools ask the client for input the multi-round-trip way (SEP-2322).

Each tool answers ``InputRequiredResult`` first; the client fulfils its ``inputRequests``
(sampling, elicitation in form and URL modes, roots) and retries the call with
``inputResponses`` and the echoed ``requestState``. ``mrtr_two_rounds`` needs two such rounds
and carries what it learnt in the first through ``requestState``; ``mrtr_state_only`` answers
one round with ``requestState`` alone, which the client retries without any input.

A 2025-11-25 client calling these tools directly gets "Handler returned an invalid result":
serving it is a gateway's job (bridging the eras).

    python -m tests.upstream.mrtr_server --transport stdio
    python -m tests.upstream.mrtr_server --transport http --port 0
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import mcp_types as types
from mcp.server import MCPServer
from mcp.server.mcpserver import Context

from tests.upstream.serving import run

NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string", "description": "Your name"}},
    "required": ["name"],
}
TWO_ROUNDS_FIRST = "two-rounds:asked-name"
TWO_ROUNDS_SECOND = "two-rounds:asked-greeting:"
STATE_ONLY = "state-only:waited"

AnswerT = TypeVar("AnswerT", types.CreateMessageResult, types.ElicitResult, types.ListRootsResult)


def answer(ctx: Context, key: str, kind: type[AnswerT]) -> AnswerT | None:
    """The client's answer to input request ``key`` on this retry; ``None`` on the first round."""
    response = (ctx.input_responses or {}).get(key)
    return None if response is None else kind.model_validate(response.model_dump(by_alias=True, mode="json"))


def sampling_request(prompt: str) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return types.CreateMessageRequest(params=types.CreateMessageRequestParams(messages=[message], max_tokens=100))


def form_request(message: str) -> types.ElicitRequest:
    return types.ElicitRequest(params=types.ElicitRequestFormParams(message=message, requested_schema=NAME_SCHEMA))


def sampled_text(result: types.CreateMessageResult) -> str:
    return result.content.text if isinstance(result.content, types.TextContent) else f"({result.content.type})"


def build_server() -> MCPServer[Any]:
    app: MCPServer[Any] = MCPServer("mrtr-fixture", instructions="Asks the client for input via InputRequiredResult.")

    @app.tool(description="Ask the user's name with a form elicitation.")
    async def mrtr_elicit_form(ctx: Context, message: str = "What is your name?") -> str | types.InputRequiredResult:
        result = answer(ctx, "form", types.ElicitResult)
        if result is None:
            return types.InputRequiredResult(input_requests={"form": form_request(message)})
        return f"form: action={result.action}, content={json.dumps(result.content or {}, sort_keys=True)}"

    @app.tool(description="Send the user to a URL (URL-mode elicitation) and report whether they agreed.")
    async def mrtr_elicit_url(
        ctx: Context, url: str = "https://example.com/confirm"
    ) -> str | types.InputRequiredResult:
        result = answer(ctx, "url", types.ElicitResult)
        if result is None:
            # No elicitation_id: 2026-07-28 removed it, the input request's key identifies it.
            params = types.ElicitRequestURLParams(message="Please confirm", url=url)
            return types.InputRequiredResult(input_requests={"url": types.ElicitRequest(params=params)})
        return f"url: action={result.action}"

    @app.tool(description="Ask the client's LLM to answer a prompt.")
    async def mrtr_sample(ctx: Context, prompt: str) -> str | types.InputRequiredResult:
        result = answer(ctx, "sample", types.CreateMessageResult)
        if result is None:
            return types.InputRequiredResult(input_requests={"sample": sampling_request(prompt)})
        return f"sampled: {sampled_text(result)} (model {result.model})"

    @app.tool(description="List the client's roots.")
    async def mrtr_roots(ctx: Context) -> str | types.InputRequiredResult:
        result = answer(ctx, "roots", types.ListRootsResult)
        if result is None:
            return types.InputRequiredResult(input_requests={"roots": types.ListRootsRequest()})
        return "roots: " + ", ".join(str(root.uri) for root in result.roots)

    @app.tool(description="Ask for sampling, a form and the roots at once, in one round.")
    async def mrtr_all_at_once(ctx: Context) -> str | types.InputRequiredResult:
        sample = answer(ctx, "sample", types.CreateMessageResult)
        form = answer(ctx, "form", types.ElicitResult)
        roots = answer(ctx, "roots", types.ListRootsResult)
        if sample is None or form is None or roots is None:
            requests: dict[str, types.InputRequest] = {
                "sample": sampling_request("Say something"),
                "form": form_request("What is your name?"),
                "roots": types.ListRootsRequest(),
            }
            return types.InputRequiredResult(input_requests=requests)
        name = (form.content or {}).get("name")
        return f"all: sampled={sampled_text(sample)}, name={name}, roots={len(roots.roots)}"

    @app.tool(description="Two rounds: ask a name, then ask the LLM to greet that name; requestState links them.")
    async def mrtr_two_rounds(ctx: Context) -> str | types.InputRequiredResult:
        state = ctx.request_state or ""
        if state.startswith(TWO_ROUNDS_SECOND):
            greeting = answer(ctx, "greeting", types.CreateMessageResult)
            if greeting is not None:
                return f"two rounds: name={state.removeprefix(TWO_ROUNDS_SECOND)}, greeting={sampled_text(greeting)}"
        form = answer(ctx, "name", types.ElicitResult) if state == TWO_ROUNDS_FIRST else None
        if form is None:
            return types.InputRequiredResult(
                input_requests={"name": form_request("What is your name?")}, request_state=TWO_ROUNDS_FIRST
            )
        name = str((form.content or {}).get("name", ""))
        return types.InputRequiredResult(
            input_requests={"greeting": sampling_request(f"Greet {name}")},
            request_state=f"{TWO_ROUNDS_SECOND}{name}",
        )

    @app.tool(description="Answer requestState alone once (nothing to ask), then the result on the retry.")
    async def mrtr_state_only(ctx: Context) -> str | types.InputRequiredResult:
        if ctx.request_state != STATE_ONLY:
            return types.InputRequiredResult(request_state=STATE_ONLY)
        return "state only: done after one empty round"

    return app


def main() -> None:
    run(build_server, "A 2026-07-28 MCP server whose tools return InputRequiredResult (SEP-2322).")


if __name__ == "__main__":
    main()
