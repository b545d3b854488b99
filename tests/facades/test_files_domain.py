from pathlib import Path

import pytest

from mcp_aggregator.facades import Domain, RoundtripStore, build_files_domain

ALPHA_SHA = "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "a.txt").write_text("alpha\n")
    return tmp_path


@pytest.fixture
def files(root: Path) -> Domain:
    ids = iter(["m1", "m2"])
    return build_files_domain(RoundtripStore([root], new_id=lambda: next(ids)))


async def test_start_at_each_detail_level(files: Domain) -> None:
    minimal = await files.dispatch({"cmd": "roundtrip_start", "detail": "minimal", "params": {"paths": ["a.txt"]}})
    assert minimal == {
        "ok": True,
        "cmd": "roundtrip_start",
        "data": {"manifestId": "m1", "files": [{"path": "a.txt", "sha256": ALPHA_SHA}]},
        "count": 1,
    }
    full = await files.dispatch({"cmd": "roundtrip_start", "detail": "full", "params": {"paths": ["a.txt", "b.txt"]}})
    assert full["data"]["files"] == [
        {"path": "a.txt", "sha256": ALPHA_SHA, "content": "alpha\n", "exists": True, "bytes": 6},
        {"path": "b.txt", "sha256": None, "content": None, "exists": False, "bytes": 0},
    ]


async def test_preview_returns_diffs_and_warns_of_conflicts(files: Domain, root: Path) -> None:
    await files.dispatch({"cmd": "roundtrip_start", "params": {"paths": ["a.txt", "b.txt"]}})
    changes = [{"path": "a.txt", "content": "alpha\nbeta\n"}, {"path": "b.txt", "content": "b\n"}]
    clean = await files.dispatch({"cmd": "roundtrip_preview", "params": {"manifestId": "m1", "changes": changes}})
    assert clean["count"] == 2
    assert clean["data"]["files"][0] == {
        "path": "a.txt",
        "action": "update",
        "diff": "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n alpha\n+beta\n",
    }
    assert "warnings" not in clean["data"]
    (root / "a.txt").write_text("theirs\n")
    minimal = await files.dispatch(
        {"cmd": "roundtrip_preview", "detail": "minimal", "params": {"manifestId": "m1", "changes": changes}}
    )
    assert minimal["data"] == {
        "files": [
            {"path": "a.txt", "action": "update", "conflict": True},
            {"path": "b.txt", "action": "create"},
        ],
        "warnings": ["a.txt changed on disk since roundtrip_start"],
    }


async def test_commit_applies_and_reports_skips(files: Domain, root: Path) -> None:
    await files.dispatch({"cmd": "roundtrip_start", "params": {"paths": ["a.txt", "b.txt"]}})
    changes = [{"path": "a.txt", "content": "A\n"}, {"path": "b.txt", "content": "B\n"}]
    envelope = await files.dispatch(
        {"cmd": "roundtrip_commit", "params": {"manifestId": "m1", "changes": changes, "mode": "add_only"}}
    )
    assert envelope == {
        "ok": True,
        "cmd": "roundtrip_commit",
        "data": {"applied": [{"path": "b.txt", "action": "create"}], "skipped": ["a.txt"]},
        "count": 1,
    }
    assert (root / "a.txt").read_text() == "alpha\n"
    assert (root / "b.txt").read_text() == "B\n"


async def test_commit_defaults_to_replace(files: Domain, root: Path) -> None:
    await files.dispatch({"cmd": "roundtrip_start", "params": {"paths": ["a.txt"]}})
    envelope = await files.dispatch(
        {
            "cmd": "roundtrip_commit",
            "params": {"manifestId": "m1", "changes": [{"path": "a.txt", "content": "A"}]},
        }
    )
    assert envelope["data"] == {"applied": [{"path": "a.txt", "action": "update"}]}
    assert (root / "a.txt").read_text() == "A"


async def test_a_conflicting_commit_fails_and_writes_nothing(files: Domain, root: Path) -> None:
    await files.dispatch({"cmd": "roundtrip_start", "params": {"paths": ["a.txt", "b.txt"]}})
    (root / "a.txt").write_text("theirs\n")
    changes = [{"path": "b.txt", "content": "B"}, {"path": "a.txt", "content": "A"}]
    envelope = await files.dispatch({"cmd": "roundtrip_commit", "params": {"manifestId": "m1", "changes": changes}})
    assert envelope == {
        "ok": False,
        "cmd": "roundtrip_commit",
        "error": "conflict: changed on disk since roundtrip_start: a.txt; nothing was written",
    }
    assert not (root / "b.txt").exists()


@pytest.mark.parametrize(
    ("cmd", "params", "error"),
    [
        ("roundtrip_start", {}, "params.paths: is required"),
        ("roundtrip_start", {"paths": []}, "params.paths: [] should be non-empty"),
        ("roundtrip_start", {"paths": ["../x"]}, "../x: '..' is not allowed in paths"),
        ("roundtrip_start", {"paths": ["/etc/hosts"]}, "/etc/hosts: absolute paths are not allowed"),
        (
            "roundtrip_preview",
            {"manifestId": "m9", "changes": [{"path": "a.txt", "content": ""}]},
            "manifestId: unknown or expired manifest 'm9'",
        ),
        (
            "roundtrip_preview",
            {"manifestId": "m1", "changes": [{"path": "a.txt"}]},
            "params.changes[0].content: is required",
        ),
        (
            "roundtrip_commit",
            {"manifestId": "m1", "changes": [{"path": "a.txt", "content": 1}]},
            "params.changes[0].content: must be of type string",
        ),
        (
            "roundtrip_commit",
            {"manifestId": "m1", "changes": [{"path": "a.txt", "content": ""}], "mode": "merge"},
            "params.mode: must be one of replace, add_only, update_only",
        ),
    ],
)
async def test_bad_requests_name_the_field(files: Domain, cmd: str, params: dict[str, object], error: str) -> None:
    envelope = await files.dispatch({"cmd": cmd, "params": params})
    assert envelope["ok"] is False
    assert envelope["cmd"] == cmd
    assert envelope["error"].startswith(error)
