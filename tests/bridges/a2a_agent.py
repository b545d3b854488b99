"""An A2A agent built from a2a-sdk's own server pieces (executor, request handler, task store,
Starlette routes), as its documentation builds one: three skills, picked from the
message's ``skill`` metadata (or the first word of its text).

- ``greet``: a plain message reply (text).
- ``plan_trip``: a task that reports progress while it works and ends with a text and a
  data artifact; between its first and second step it waits for ``proceed`` when given,
  so a test can show the progress arrived before the answer.
- ``book_flight``: a task that fails.

``build_agent_app(..., secured=...)`` serves a card whose security schemes ask for a bearer
token on every request and, for ``book_flight``, a partner key too; the app refuses a
request without the token (401) and records the partner keys it was sent.

Cancelling a task ends it as ``canceled`` (the executor's ``cancel``). ``started`` is set once
``plan_trip`` has reported its first step.
"""

from __future__ import annotations

import asyncio

from a2a.helpers.proto_helpers import new_data_part, new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution.agent_executor import AgentExecutor
from a2a.server.agent_execution.context import RequestContext
from a2a.server.events.event_queue import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    APIKeySecurityScheme,
    HTTPAuthSecurityScheme,
    Role,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    TaskState,
)
from google.protobuf.json_format import MessageToDict
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

AGENT_TOKEN = "agent-token-5"
PARTNER_KEY = "partner-key-6"


def _needs(*schemes: str) -> SecurityRequirement:
    return SecurityRequirement(schemes={name: StringList() for name in schemes})


def secure(card: AgentCard) -> AgentCard:
    """``card`` asking for a bearer token everywhere and a partner key for ``book_flight``."""
    card.security_schemes["bearer"].CopyFrom(
        SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
    )
    card.security_schemes["partnerKey"].CopyFrom(
        SecurityScheme(api_key_security_scheme=APIKeySecurityScheme(location="header", name="X-Partner-Key"))
    )
    card.security_requirements.append(_needs("bearer"))
    for skill in card.skills:
        if skill.id == "book_flight":
            skill.security_requirements.append(_needs("bearer", "partnerKey"))
    return card


class TokenCheck:
    """Refuses a request to the agent (not to its card) without the bearer token; records the
    partner key of each request it lets through."""

    def __init__(self, app: ASGIApp, partner_keys: list[str | None]) -> None:
        self.app = app
        self.partner_keys = partner_keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/.well-known/"):
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if headers.get("authorization") != f"Bearer {AGENT_TOKEN}":
                await JSONResponse({"detail": "bad token"}, status_code=401)(scope, receive, send)
                return
            self.partner_keys.append(headers.get("x-partner-key"))
        await self.app(scope, receive, send)


def agent_card(url: str, *, streaming: bool = True) -> AgentCard:
    return AgentCard(
        name="Travel agent",
        description="Plans trips and books flights.",
        version="1.0.0",
        supported_interfaces=[AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(id="greet", name="Greet", description="Says hello to a traveller.", tags=["hello"]),
            AgentSkill(
                id="plan_trip",
                name="Plan a trip",
                description="Plans a trip to a city, step by step.",
                tags=["travel", "itinerary"],
                examples=["Plan three days in Lisbon"],
            ),
            AgentSkill(id="book_flight", name="Book a flight", description="Books a flight.", tags=["flights"]),
        ],
    )


class TravelExecutor(AgentExecutor):
    def __init__(self, proceed: asyncio.Event | None = None) -> None:
        self.proceed = proceed
        self.started = asyncio.Event()

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        said = context.message
        metadata = MessageToDict(said.metadata) if said is not None else {}
        skill = str(metadata.get("skill") or text.split(" ", 1)[0])
        if skill == "greet":
            await event_queue.enqueue_event(
                new_text_message(f"Hello! You said: {text}", context_id=context.context_id, role=Role.ROLE_AGENT)
            )
            return
        assert said is not None
        task = context.current_task or new_task_from_user_message(said)
        await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if skill == "book_flight":
            await updater.failed(updater.new_agent_message([new_text_part("No seats left on that flight.")]))
            return
        await updater.start_work(updater.new_agent_message([new_text_part("Looking at the map")]))
        self.started.set()
        if self.proceed is not None:
            await self.proceed.wait()
        await updater.update_status(
            TaskState.TASK_STATE_WORKING, updater.new_agent_message([new_text_part("Choosing hotels")])
        )
        await updater.add_artifact([new_text_part(f"Itinerary for: {text}")], name="itinerary")
        await updater.add_artifact([new_data_part({"days": 3, "city": "Lisbon"})], name="summary")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None and context.context_id is not None
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel(updater.new_agent_message([new_text_part("Cancelled at the traveller's request.")]))


def build_agent_app(
    url: str, executor: TravelExecutor, *, streaming: bool = True, secured: list[str | None] | None = None
) -> Starlette:
    """``secured``: the agent asks for credentials (see ``secure``) and records partner keys there."""
    card = agent_card(url, streaming=streaming)
    middleware = []
    if secured is not None:
        card = secure(card)
        middleware.append(Middleware(TokenCheck, partner_keys=secured))
    handler = DefaultRequestHandler(agent_executor=executor, task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/")]
    return Starlette(routes=routes, middleware=middleware)
