"""Scripts in the sandbox alone: values, prints, errors a model can fix, and every limit."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import anyio
import pytest

from mcp_aggregator.code_mode import CodeModeSettings, CodeSandbox
from mcp_aggregator.errors import CodeModeError
from tests.code_mode.sandboxes import EchoTools, running_sandbox


async def test_the_last_expression_is_the_value_and_prints_come_back() -> None:
    tools = EchoTools()
    async with running_sandbox() as sandbox:
        outcome = await sandbox.run_script(
            "r = await call_tool('double', {'n': 21})\nprint('got', r)\n(r['value'], {1, 2}, b'x')", tools
        )
    assert outcome.ok, outcome
    assert outcome.value == [42, [1, 2], "eA=="]
    assert outcome.output == "got {'value': 42}\n"
    assert outcome.calls == 1
    assert outcome.to_dict() == {"result": [42, [1, 2], "eA=="], "output": "got {'value': 42}\n"}


async def test_a_tool_error_raises_an_exception_the_script_can_catch() -> None:
    code = "try:\n    await call_tool('fail', {})\nexcept RuntimeError as e:\n    r = 'caught: ' + str(e)\nr"
    async with running_sandbox() as sandbox:
        outcome = await sandbox.run_script(code, EchoTools())
    assert outcome.ok
    assert outcome.value == "caught: fail: the tool failed on purpose"


async def test_an_uncaught_tool_error_names_its_line() -> None:
    async with running_sandbox() as sandbox:
        outcome = await sandbox.run_script("x = 1\nawait call_tool('nope', {})\n", EchoTools())
    assert not outcome.ok
    assert outcome.line == 2
    assert outcome.error == "line 2: LookupError: Tool not found: nope"


async def test_arguments_are_sent_as_json_and_sleeps_are_allowed() -> None:
    tools = EchoTools()
    code = (
        "import time, asyncio\ntime.sleep(0.01)\nawait asyncio.sleep(0.01)\n"
        "await call_tool('double', {'n': 1, 't': (1, 2), 's': {3}})"
    )
    async with running_sandbox() as sandbox:
        outcome = await sandbox.run_script(code, tools)
    assert outcome.value == {"value": 2}
    assert tools.calls == [("double", {"n": 1, "t": [1, 2], "s": [3]})]


async def test_a_script_sleeping_past_its_wall_clock_is_stopped() -> None:
    async with running_sandbox(limits={"timeout_secs": 0.2}) as sandbox:
        outcome = await sandbox.run_script("import time\ntime.sleep(3600)", EchoTools())
        gathered = await sandbox.run_script(
            "import asyncio\nawait asyncio.gather(asyncio.sleep(0.01), asyncio.sleep(0.01))", EchoTools()
        )
    assert outcome.error is not None and outcome.error.startswith("TimeoutError: the script ran past 0.2 s")
    assert gathered.error == (
        "line 2: RuntimeError: asyncio.sleep: await it directly; code mode does not run sleeps concurrently"
    )


async def test_calls_may_run_concurrently_with_gather() -> None:
    tools = EchoTools()
    code = (
        "import asyncio\n"
        "rs = await asyncio.gather(*[call_tool('double', {'n': n}) for n in range(3)])\n"
        "[r['value'] for r in rs]"
    )
    async with running_sandbox() as sandbox:
        outcome = await sandbox.run_script(code, tools)
    assert outcome.value == [0, 2, 4]
    assert outcome.calls == 3


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("def f(:\n    pass", "line 1: SyntaxError: invalid syntax"),
        ("x = 1\ny = x / 0", "line 2: ZeroDivisionError: division by zero"),
        ("await call_tool('double', 5)", "line 1: TypeError: call_tool: arguments must be a dict, got int"),
        ("call_tool('double', {'n': 1})", "TypeError: the value is a call_tool(...) never awaited"),
        ("r = call_tool('double', {'n': 1})\nr['value']", "line 2: TypeError: 'coroutine' object is not subscriptable"),
        ("   ", "ValueError: the script is empty"),
    ],
)
async def test_a_broken_script_comes_back_as_an_error_naming_line_and_cause(code: str, error: str) -> None:
    async with running_sandbox() as sandbox:
        outcome = await sandbox.run_script(code, EchoTools())
    assert not outcome.ok
    assert outcome.error is not None
    assert outcome.error.startswith(error)


# -- hostile scripts ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("open('/etc/passwd').read()", "line 1: PermissionError: open: code mode has no filesystem, network or"),
        ("import os\nos.listdir('/')", "line 1: ImportError: import of 'os' is not allowed in code mode"),
        ("import subprocess", "line 1: ImportError: import of 'subprocess' is not allowed in code mode"),
        ("import socket\nsocket.create_connection(('1.1.1.1', 80))", "line 1: ImportError: import of 'socket'"),
        ("from . import x", "line 1: ImportError: import of '.' is not allowed"),
        ("__import__('os')", "line 1: NameError: name '__import__' is not defined"),
        ("while True:\n    pass", "TimeoutError: feed time limit exceeded"),
        ("x = 'a' * 10**9", "line 1: MemoryError: memory limit exceeded"),
        ("def r(n):\n    return r(n + 1)\nr(0)", "line 2: RecursionError: maximum recursion depth exceeded"),
        ("print('x' * 100000)", "MemoryError: memory limit exceeded"),
    ],
)
async def test_a_hostile_script_is_stopped_with_a_clear_error(code: str, error: str) -> None:
    async with running_sandbox(limits={"cpu_secs": 0.5, "memory_bytes": 16 << 20, "output_bytes": 4096}) as sandbox:
        outcome = await sandbox.run_script(code, EchoTools())
        after = await sandbox.run_script("1 + 1", EchoTools())
    assert not outcome.ok
    assert outcome.error is not None
    assert outcome.error.startswith(error), outcome.error
    assert after.ok and after.value == 2, "the next script runs as usual"


async def test_modules_allowed_on_purpose_still_reach_no_file_or_environment() -> None:
    code = "import os\ntry:\n    os.listdir('/')\nexcept PermissionError as e:\n    a = str(e)\nos.environ.get('HOME')"
    async with running_sandbox(allowed_modules=["os", "json"]) as sandbox:
        outcome = await sandbox.run_script(code, EchoTools())
    assert (
        outcome.error
        == "line 6: PermissionError: os.environ: code mode has no filesystem, network or environment access"
    )


async def test_each_limit_names_its_setting() -> None:
    limits = {"cpu_secs": 0.3, "memory_bytes": 8 << 20, "output_bytes": 1024, "recursion_depth": 50}
    async with running_sandbox(limits=limits) as sandbox:
        loop = await sandbox.run_script("while True:\n    pass", EchoTools())
        memory = await sandbox.run_script("l = []\nwhile True:\n    l.append([0] * 1000)", EchoTools())
        deep = await sandbox.run_script("def r(n):\n    return r(n + 1)\nr(0)", EchoTools())
        loud = await sandbox.run_script("for i in range(10000):\n    print('spam', i)", EchoTools())
    assert loop.error is not None and "(code_mode.limits.cpu_secs = 0.3)" in loop.error
    assert memory.error is not None and f"(code_mode.limits.memory_bytes = {8 << 20})" in memory.error
    assert deep.error is not None and "(code_mode.limits.recursion_depth = 50)" in deep.error
    assert loud.error is not None and "printed output over code_mode.limits.output_bytes = 1024" in loud.error


async def test_ten_thousand_tool_calls_stop_at_the_call_limit_uncatchably() -> None:
    tools = EchoTools()
    code = (
        "n = 0\nfor i in range(10000):\n    try:\n        await call_tool('double', {'n': i})\n"
        "        n += 1\n    except Exception:\n        pass\nn"
    )
    async with running_sandbox(limits={"tool_calls": 20}) as sandbox:
        outcome = await sandbox.run_script(code, tools)
    assert not outcome.ok
    assert outcome.error == "line 4: RuntimeError: more than 20 tool calls (code_mode.limits.tool_calls)"
    assert len(tools.calls) == 20
    assert outcome.calls == 21


async def test_a_script_waiting_too_long_on_tools_stops_at_the_wall_clock_limit() -> None:
    async def slow(name: str, arguments: dict[str, object]) -> object:
        await anyio.sleep_forever()

    async with running_sandbox(limits={"timeout_secs": 0.3}) as sandbox:
        outcome = await sandbox.run_script("await call_tool('slow', {})", slow)
        after = await sandbox.run_script("2 + 2", EchoTools())
    assert outcome.error == (
        "TimeoutError: the script ran past 0.3 s (code_mode.limits.timeout_secs), tool calls included"
    )
    assert after.value == 4


async def test_a_script_that_timed_out_leaves_no_tool_call_running() -> None:
    ended = anyio.Event()

    async def slow(name: str, arguments: dict[str, object]) -> object:
        try:
            await anyio.sleep_forever()
        finally:
            ended.set()

    async with running_sandbox(limits={"timeout_secs": 0.3}) as sandbox:
        outcome = await sandbox.run_script("await call_tool('slow', {})", slow)
        # Set by the time the answer comes: the call was cancelled and unwound first.
        assert ended.is_set()
    assert outcome.error is not None and outcome.error.startswith("TimeoutError")


async def test_a_value_too_large_is_refused_with_the_limit_named() -> None:
    async with running_sandbox(limits={"result_chars": 1000}) as sandbox:
        outcome = await sandbox.run_script("'x' * 5000", EchoTools())
    assert outcome.error == (
        "ValueError: the script's value is 5002 characters of JSON, over code_mode.limits.result_chars = 1000; "
        "return less (a slice, a summary)"
    )


async def test_a_sandbox_that_is_not_running_refuses_with_sandbox_error() -> None:
    with pytest.raises(CodeModeError, match="not running"):
        await CodeSandbox(CodeModeSettings()).run_script("1", EchoTools())


def sandbox_workers() -> list[int]:
    """The pids of this process's sandbox worker children."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == os.getpid() and comm == "monty":
            pids.append(int(entry.name))
    return pids


async def test_a_worker_killed_mid_script_fails_that_script_only_and_is_replaced() -> None:
    entered, release = anyio.Event(), anyio.Event()
    outcomes = []

    async def block(name: str, arguments: dict[str, object]) -> object:
        entered.set()
        await release.wait()
        return 1

    async def run(sandbox: CodeSandbox) -> None:
        outcomes.append(await sandbox.run_script("x = await call_tool('wait', {})\nx + 1", block))

    async with running_sandbox() as sandbox:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, sandbox)
                await entered.wait()
                workers = sandbox_workers()
                assert workers
                for pid in workers:
                    os.kill(pid, signal.SIGKILL)
                release.set()
        after = await sandbox.run_script("2 * 21", EchoTools())
    assert not outcomes[0].ok
    assert outcomes[0].error is not None
    assert outcomes[0].error.startswith("the sandbox worker stopped (")
    assert outcomes[0].error.endswith("it has been replaced, run the script again")
    assert after.ok and after.value == 42


async def test_a_sandbox_that_cannot_start_refuses_scripts_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONTY_BIN", "/nonexistent/monty")
    async with running_sandbox() as sandbox:
        with pytest.raises(CodeModeError, match="the sandbox could not start: failed to spawn monty worker"):
            await sandbox.run_script("1", EchoTools())
        with pytest.raises(CodeModeError, match="could not start"):
            await sandbox.run_script("2", EchoTools())


async def test_a_script_finding_every_worker_busy_is_refused_after_the_queue_wait() -> None:
    entered, release = anyio.Event(), anyio.Event()
    first = []

    async def block(name: str, arguments: dict[str, object]) -> object:
        entered.set()
        await release.wait()
        return "done"

    async with running_sandbox(workers=1, queue_wait_secs=0.2) as sandbox, anyio.create_task_group() as tg:

        async def hold() -> None:
            first.append(await sandbox.run_script("await call_tool('wait', {})", block))

        tg.start_soon(hold)
        await entered.wait()
        refused = await sandbox.run_script("1", EchoTools())
        release.set()
    assert refused.error == "SandboxBusy: every sandbox worker stayed busy for 0.2 s (code_mode.workers = 1); try again"
    assert first[0].value == "done"


async def test_a_script_whose_caller_gives_up_frees_its_worker() -> None:
    async with running_sandbox(workers=1, limits={"cpu_secs": 60}) as sandbox:
        with anyio.move_on_after(0.3) as gave_up:
            await sandbox.run_script("while True:\n    pass", EchoTools())
        with anyio.fail_after(20):
            after = await sandbox.run_script("6 * 7", EchoTools())
    assert gave_up.cancelled_caught
    assert after.value == 42
