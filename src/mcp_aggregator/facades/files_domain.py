"""The ``files`` domain: manifest-based roundtripping inside the workspace roots (off by default)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from mcp_aggregator.facades.command import Command
from mcp_aggregator.facades.detail import Detail
from mcp_aggregator.facades.domain import Domain
from mcp_aggregator.facades.envelope import Counted
from mcp_aggregator.facades.param_schema import object_schema
from mcp_aggregator.facades.roundtrip import Change, CommitMode, PlannedChange, RoundtripStore

T = TypeVar("T")

_CHANGES = {
    "type": "array",
    "minItems": 1,
    "items": object_schema({"path": {"type": "string"}, "content": {"type": "string"}}, ["path", "content"]),
}
_MANIFEST_ID = {"type": "string", "minLength": 1}
_MODE = {"enum": [mode.value for mode in CommitMode]}


def build_files_domain(store: RoundtripStore, *, name: str = "files") -> Domain:
    """Roundtrip commands over ``store``. Store calls run one at a time in a worker thread:
    file I/O must not block the event loop, and a commit must not interleave with a read."""
    lock = anyio.Lock()

    async def run(func: Callable[[], T]) -> T:
        async with lock:
            return await anyio.to_thread.run_sync(func)

    async def start(params: dict[str, Any], detail: Detail) -> Any:
        manifest = await run(lambda: store.start(params["paths"]))
        files = []
        for state in manifest.files.values():
            record: dict[str, Any] = {"path": state.path, "sha256": state.sha256}
            if detail is not Detail.MINIMAL:
                record["content"] = state.content
            if detail is Detail.FULL:
                record["exists"] = state.exists
                record["bytes"] = len(state.content.encode("utf-8")) if state.content is not None else 0
            files.append(record)
        return Counted({"manifestId": manifest.id, "files": files}, len(files))

    async def preview(params: dict[str, Any], detail: Detail) -> Any:
        changes, mode = _changes(params), CommitMode(params.get("mode", CommitMode.REPLACE))
        plans = await run(lambda: store.preview(params["manifestId"], changes, mode))
        data: dict[str, Any] = {"files": [_plan_record(plan, detail) for plan in plans]}
        warnings = [f"{plan.path} changed on disk since roundtrip_start" for plan in plans if plan.conflict]
        if warnings:
            data["warnings"] = warnings
        return Counted(data, len(plans))

    async def commit(params: dict[str, Any], detail: Detail) -> Any:
        changes, mode = _changes(params), CommitMode(params.get("mode", CommitMode.REPLACE))
        plans = await run(lambda: store.commit(params["manifestId"], changes, mode))
        applied = [{"path": p.path, "action": p.action} for p in plans if p.action in ("create", "update")]
        untouched = [p.path for p in plans if p.action not in ("create", "update")]
        data: dict[str, Any] = {"applied": applied}
        if untouched:
            data["skipped"] = untouched
        return Counted(data, len(applied))

    commands = [
        Command(
            "roundtrip_start",
            "read files: manifestId, sha256 and content each",
            start,
            object_schema({"paths": {"type": "array", "minItems": 1, "items": {"type": "string"}}}, ["paths"]),
        ),
        Command(
            "roundtrip_preview",
            "diffs and conflict warnings for changes [{path, content}]",
            preview,
            object_schema({"manifestId": _MANIFEST_ID, "changes": _CHANGES, "mode": _MODE}, ["manifestId", "changes"]),
        ),
        Command(
            "roundtrip_commit",
            "write all changes or none; mode replace|add_only|update_only",
            commit,
            object_schema({"manifestId": _MANIFEST_ID, "changes": _CHANGES, "mode": _MODE}, ["manifestId", "changes"]),
        ),
    ]
    return Domain(name, "Edit workspace files as one atomic, conflict-checked change.", commands)


def _changes(params: dict[str, Any]) -> list[Change]:
    return [Change(item["path"], item["content"]) for item in params["changes"]]


def _plan_record(plan: PlannedChange, detail: Detail) -> dict[str, Any]:
    record: dict[str, Any] = {"path": plan.path, "action": plan.action}
    if plan.conflict:
        record["conflict"] = True
    if detail is not Detail.MINIMAL and plan.diff:
        record["diff"] = plan.diff
    return record
