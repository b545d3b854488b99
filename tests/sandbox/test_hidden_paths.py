"""Which paths a server was given its sandbox hides, and the line that shows each (pure)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import yaml

from mcp_aggregator.sandbox import SandboxConfig
from mcp_aggregator.sandbox.hidden_paths import grant_line, hidden_paths, hint_sentence
from mcp_aggregator.sandbox.launch_plan import Entry

HOST = {
    "/srv/repo",
    "/srv/proj/server.py",
    "/srv/proj",
    "/srv/notes",
    "/opt/venv/bin/python",
    "/work/app",
    "/work/app/data",
    "/data/dir/x",
    "/data/dir",
    "/home/op/projects/x",
}
HOME = "/data/dir/sandbox/vcs/home"
ENTRY = Entry(
    "vcs",
    "/opt/venv/bin/python",
    (),
    {},
    None,
    "/work/app",
    runtime=("/opt/venv",),
)


def hints_for(entry: Entry, stderr: tuple[str, ...] = ()) -> list[tuple[str, str, str]]:
    found = hidden_paths(entry, home=HOME, masked=("/data/dir/",), exists=HOST.__contains__, stderr=stderr)
    return [(hint.path, hint.access, hint.given_as) for hint in found]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"args": ("--repository", "/srv/repo")}, [("/srv/repo", "read", "args[1]")]),
        ({"args": ("--repository=/srv/repo",)}, [("/srv/repo", "read", "args[0]")]),
        ({"args": ("/srv/proj/server.py",)}, [("/srv/proj/server.py", "read", "args[0]")]),
        ({"env": {"DATA": "/srv/notes"}}, [("/srv/notes", "read", "env.DATA")]),
        ({"env": {"MEMORY_FILE": "/srv/notes/memory.json"}}, [("/srv/notes", "write", "env.MEMORY_FILE")]),
        ({"args": ("data",), "cwd": "/work/app"}, []),
        ({"args": ("./data",), "cwd": "/work/app"}, []),
        ({"args": ("stdio", "-m", "tests.upstream.fixture_server", "https://example.com/x")}, []),
        ({"args": ("/nowhere/at/all",)}, []),
        ({"args": ("stdio", "UTC", "server.py")}, []),
        ({"args": ("/srv/repo",), "read": ("/srv",)}, []),
        ({"args": ("/srv/repo",), "write": ("/srv/repo",)}, []),
        ({"args": ("/opt/venv/bin/python",)}, []),
        ({"args": ("/data/dir/x",)}, [("/data/dir/x", "read", "args[0]")]),
        ({"args": ("/data/dir/x",), "read": ("/data/dir/x",)}, []),
        ({"args": ("/srv/repo", "--again=/srv/repo")}, [("/srv/repo", "read", "args[0]")]),
    ],
)
def test_a_given_path_that_exists_but_is_not_shown_is_named_with_its_access(
    change: dict[str, object], expected: list[tuple[str, str, str]]
) -> None:
    assert hints_for(replace(ENTRY, **change)) == expected  # type: ignore[arg-type]


def test_a_path_shown_read_only_that_the_server_could_not_write_needs_a_write_grant() -> None:
    entry = replace(ENTRY, args=("/srv/notes",), read=("/srv/notes",))
    assert hints_for(entry) == []
    said = ("OSError: [Errno 30] Read-only file system: '/srv/notes/x'",)
    assert hints_for(entry, said) == [("/srv/notes", "write", "args[0]")]


def test_a_relative_path_counts_from_the_servers_working_directory() -> None:
    entry = replace(ENTRY, args=("../repo",), cwd="/srv/proj", runtime=("/opt/venv",))
    assert hints_for(entry) == [("/srv/repo", "read", "args[0]")]


def test_a_relative_path_without_a_cwd_asks_for_the_cwd_it_was_written_for() -> None:
    entry = replace(ENTRY, args=("server.py",), gateway_cwd="/srv/proj")
    found = hidden_paths(entry, home=HOME, masked=(), exists=HOST.__contains__)
    assert [(h.path, h.given_as, h.grant) for h in found] == [("/srv/proj", "args[0]", "cwd: /srv/proj")]
    grant = yaml.safe_load(found[0].grant)
    assert grant == {"cwd": "/srv/proj"}


def test_a_path_in_the_command_line_is_not_a_grant_of_its_own() -> None:
    # The decision (docs/security.md): only cwd is shown by itself; an argument is proposed.
    entry = replace(ENTRY, args=("/srv/repo",), cwd="/work/app")
    assert hints_for(entry) == [("/srv/repo", "read", "args[0]")]


@pytest.mark.parametrize(
    "path", ["/srv/repo", "/srv/my repo", "/srv/a: b", "/srv/#x", "/srv/[x]", "/srv/it's", "/srv/{x}"]
)
@pytest.mark.parametrize("access", ["read", "write"])
def test_a_proposed_grant_is_valid_yaml_for_the_sandbox_as_written(path: str, access: str) -> None:
    line = grant_line(access, path)  # type: ignore[arg-type]
    sandbox = SandboxConfig.model_validate(yaml.safe_load(line)["sandbox"])
    assert getattr(sandbox, access) == (path,)


def test_the_sentence_names_each_path_where_it_was_given_and_the_line_to_add() -> None:
    found = hidden_paths(
        replace(ENTRY, args=("--repository", "/srv/repo")), home=HOME, masked=(), exists=HOST.__contains__
    )
    assert hint_sentence(found) == (
        "/srv/repo (args[1]) is not visible in its sandbox: add `sandbox: {read: [/srv/repo]}` to its entry"
    )
