"""The relay: one call pipeline for every request bound upstream, and the way back.

``CallPipeline`` routes and forwards; ``Caller`` is the client a request is made for;
``CallerBackchannel`` brings an upstream's own requests and notifications back to that
client; ``ParkedCalls`` bridges a 2026-07-28 client to an upstream that asks back mid-call.
"""

from mcp_aggregator.relay.backchannel import CallerBackchannel
from mcp_aggregator.relay.caller import NO_CALLER, Caller, current_caller
from mcp_aggregator.relay.parked_calls import ParkedCalls, is_parked_state
from mcp_aggregator.relay.pipeline import CallPipeline, Invocation, Routes, Stage

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
