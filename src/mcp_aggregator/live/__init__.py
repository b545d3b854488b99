"""What the gateway is doing now and did in the last hour: the per-minute call series
(``CallSeries``, fed by ``SeriesStage`` on the pipeline) and the event stream (``EventHub``)
the web page and scripts watch."""

from mcp_aggregator.live.call_series import CallSeries
from mcp_aggregator.live.event_hub import Event, EventHub, Subscription
from mcp_aggregator.live.series_stage import SeriesStage

__all__ = ["CallSeries", "Event", "EventHub", "SeriesStage", "Subscription"]
