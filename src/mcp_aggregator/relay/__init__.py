"""The relay: one call pipeline for every request bound upstream, and the way back.

``CallPipeline`` routes and forwards; ``Caller`` is the client a request is made for;
``CallerBackchannel`` brings an upstream's own requests and notifications back to that
client; ``ParkedCalls`` bridges a 2026-07-28 client to an upstream that asks back mid-call.
"""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = [
    "NO_CALLER",
    "CallPipeline",
    "Caller",
    "CallerBackchannel",
    "Invocation",
    "ParkedCalls",
    "Routes",
    "Stage",
    "current_caller",
    "is_parked_state",
]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "CallerBackchannel": ".backchannel",
        "NO_CALLER": ".caller",
        "Caller": ".caller",
        "current_caller": ".caller",
        "ParkedCalls": ".parked_calls",
        "is_parked_state": ".parked_calls",
        "CallPipeline": ".pipeline",
        "Invocation": ".pipeline",
        "Routes": ".pipeline",
        "Stage": ".pipeline",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.relay.backchannel import CallerBackchannel
    from mcp_aggregator.relay.caller import NO_CALLER, Caller, current_caller
    from mcp_aggregator.relay.parked_calls import ParkedCalls, is_parked_state
    from mcp_aggregator.relay.pipeline import CallPipeline, Invocation, Routes, Stage
