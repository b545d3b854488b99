"""The fast path's answer bytes: the client's id back, and the gateway's serverInfo stamp in
place of the upstream's, by a byte splice where the stamp ends the message and by parsing
everywhere else."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
import orjson
import pytest

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.serve.fast_call import FastCalls, _AskingLane
from tests.conftest import settings_for

OURS = {"name": "mcp-aggregator", "version": "0.1.0"}
STAMP = types.SERVER_INFO_META_KEY
DEADLINE = 30


@asynccontextmanager
async def fast_calls() -> AsyncIterator[FastCalls]:
    # The gateway opened and closed in the test's own task (anyio scopes cannot cross tasks).
    async with Gateway(settings_for()) as gateway:
        yield FastCalls(gateway, OURS)


def upstream_line(result: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": "agw:7", "result": result})


async def test_a_stamp_that_ends_the_message_is_spliced_without_parsing() -> None:
    async with fast_calls() as calls:
        line = upstream_line({"content": [{"type": "text", "text": "}}} {"}], "_meta": {STAMP: {"name": "up"}}})
        spliced = calls._spliced(line, b'{"jsonrpc":"2.0","id":42', len(b'{"jsonrpc":"2.0","id":"agw:7"'))
        assert spliced is not None
        answer = orjson.loads(spliced)
        assert answer["id"] == 42
        assert answer["result"]["_meta"][STAMP] == OURS
        assert answer["result"]["content"][0]["text"] == "}}} {"


@pytest.mark.parametrize(
    "result",
    [
        {"_meta": {STAMP: {"name": "up"}}, "content": []},  # not last
        {"content": [], "_meta": {STAMP: {"name": "up", "icons": [{"src": "x"}]}}},  # nested braces
        {"content": [], "_meta": {"other": {"a": 1}, STAMP: {"name": "up"}}},  # braces before it
        {"content": [{"type": "text", "text": f'"_meta":{{"{STAMP}":{{}}}}}}}}'}]},  # only text looks like it
        {"content": []},  # no stamp at all
    ],
)
async def test_any_other_shape_is_parsed_and_stamped_the_same(result: dict[str, Any]) -> None:
    async with fast_calls() as calls:
        line = upstream_line(result)
        assert calls._spliced(line, b"", 0) is None
        answer = orjson.loads(calls._reencoded(line, 42))
        assert answer["id"] == 42
        assert answer["result"]["_meta"][STAMP] == OURS
        assert answer["result"]["content"] == result["content"]


async def test_an_upstream_error_keeps_its_code_and_gets_the_client_id() -> None:
    async with fast_calls() as calls:
        line = orjson.dumps({"jsonrpc": "2.0", "id": "agw:3", "error": {"code": -32602, "message": "bad"}})
        assert orjson.loads(calls._reencoded(line, "c-1")) == {
            "jsonrpc": "2.0",
            "id": "c-1",
            "error": {"code": -32602, "message": "bad"},
        }


async def test_an_answer_a_task_still_owes_is_cancelled_and_awaited_when_serving_ends() -> None:
    # A large result judged in a worker thread, or a question asked back, is answered by a
    # task the upstream reader's callback starts: the server's end must not leave it running.
    async with fast_calls() as calls:
        started, ended = anyio.Event(), anyio.Event()

        async def owed_answer() -> None:
            started.set()
            try:
                await anyio.sleep_forever()
            finally:
                ended.set()

        lane = _AskingLane()
        with anyio.fail_after(DEADLINE):
            async with calls.serving():
                assert calls._tasks is not None
                lane.hand_over(calls._tasks, owed_answer())
                await started.wait()
        assert ended.is_set() and lane.task is not None and lane.task.cancelled()
        assert calls._tasks is None  # past its end, such calls take the awaited lane
