import hashlib
import os
from pathlib import Path

import pytest

from mcp_aggregator.errors import RoundtripError
from mcp_aggregator.facades import CommitMode, RoundtripStore
from mcp_aggregator.facades.roundtrip import Change


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def snapshot(root: Path) -> dict[str, str | None]:
    """Every entry under root: file contents, None for directories."""
    return {
        str(path.relative_to(root)): (path.read_text() if path.is_file() else None) for path in sorted(root.rglob("*"))
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "src").mkdir()
    (workspace / "src" / "b.py").write_text("print('b')\n")
    return workspace


@pytest.fixture
def store(root: Path) -> RoundtripStore:
    ids = iter(f"m{i}" for i in range(100))
    return RoundtripStore([root], new_id=lambda: next(ids))


def test_start_records_hash_and_content_and_absent_files(store: RoundtripStore) -> None:
    manifest = store.start(["a.txt", "./src/b.py", "new/c.txt"])
    assert manifest.id == "m0"
    assert list(manifest.files) == ["a.txt", "src/b.py", "new/c.txt"]
    assert manifest.files["a.txt"].sha256 == sha("alpha\n")
    assert manifest.files["src/b.py"].content == "print('b')\n"
    assert manifest.files["new/c.txt"].exists is False


def test_preview_shows_unified_diffs_and_actions(store: RoundtripStore) -> None:
    store.start(["a.txt", "c.txt", "src/b.py"])
    plans = store.preview(
        "m0",
        [Change("a.txt", "alpha\nbeta\n"), Change("c.txt", "new"), Change("src/b.py", "print('b')\n")],
        CommitMode.REPLACE,
    )
    assert [(p.path, p.action, p.conflict) for p in plans] == [
        ("a.txt", "update", False),
        ("c.txt", "create", False),
        ("src/b.py", "unchanged", False),
    ]
    assert plans[0].diff == "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n alpha\n+beta\n"
    assert plans[1].diff == "--- /dev/null\n+++ b/c.txt\n@@ -0,0 +1 @@\n+new\n"
    assert plans[2].diff == ""


def test_preview_warns_of_a_file_changed_since_start(store: RoundtripStore, root: Path) -> None:
    store.start(["a.txt"])
    (root / "a.txt").write_text("edited by someone else\n")
    (plan,) = store.preview("m0", [Change("a.txt", "mine\n")], CommitMode.REPLACE)
    assert plan.conflict is True
    assert "-edited by someone else" in plan.diff


@pytest.mark.parametrize(
    ("mode", "a_after", "c_exists", "actions"),
    [
        (CommitMode.REPLACE, "A2\n", True, ["update", "create"]),
        (CommitMode.ADD_ONLY, "alpha\n", True, ["skip", "create"]),
        (CommitMode.UPDATE_ONLY, "A2\n", False, ["update", "skip"]),
    ],
)
def test_each_mode_writes_what_it_promises(
    store: RoundtripStore, root: Path, mode: CommitMode, a_after: str, c_exists: bool, actions: list[str]
) -> None:
    store.start(["a.txt", "deep/er/c.txt"])
    plans = store.commit("m0", [Change("a.txt", "A2\n"), Change("deep/er/c.txt", "C\n")], mode)
    assert [p.action for p in plans] == actions
    assert (root / "a.txt").read_text() == a_after
    assert (root / "deep/er/c.txt").exists() is c_exists
    assert not [p for p in root.rglob(".roundtrip-*")]


def test_commit_keeps_the_file_mode_of_replaced_files(store: RoundtripStore, root: Path) -> None:
    os.chmod(root / "a.txt", 0o600)
    store.start(["a.txt"])
    store.commit("m0", [Change("a.txt", "x")], CommitMode.REPLACE)
    assert (root / "a.txt").stat().st_mode & 0o777 == 0o600


def test_a_conflict_aborts_the_commit_before_anything_is_written(store: RoundtripStore, root: Path) -> None:
    store.start(["a.txt", "src/b.py", "c.txt"])
    (root / "src/b.py").write_text("changed meanwhile\n")
    before = snapshot(root)
    with pytest.raises(RoundtripError, match=r"^conflict: changed on disk since roundtrip_start: src/b.py; "):
        store.commit(
            "m0",
            [Change("a.txt", "A2"), Change("c.txt", "C"), Change("src/b.py", "B2")],
            CommitMode.REPLACE,
        )
    assert snapshot(root) == before


def test_a_file_created_or_deleted_since_start_is_a_conflict(store: RoundtripStore, root: Path) -> None:
    store.start(["a.txt", "c.txt"])
    (root / "c.txt").write_text("appeared")
    with pytest.raises(RoundtripError, match=r"c\.txt"):
        store.commit("m0", [Change("c.txt", "C")], CommitMode.ADD_ONLY)
    (root / "a.txt").unlink()
    with pytest.raises(RoundtripError, match=r"a\.txt"):
        store.commit("m0", [Change("a.txt", "A")], CommitMode.REPLACE)


def test_a_failure_while_replacing_rolls_back_every_file(store: RoundtripStore, root: Path) -> None:
    # "d" as a file and "d/x.txt" as a file inside directory "d" cannot both exist: staging
    # creates directory d for x.txt, so replacing d's temp file onto it fails for real, after
    # a.txt and d/x.txt were already replaced.
    store.start(["a.txt", "d/x.txt", "d"])
    before = snapshot(root)
    with pytest.raises(RoundtripError, match=r"^commit failed at d: Is a directory; no file was changed$"):
        store.commit(
            "m0",
            [Change("a.txt", "A2"), Change("d/x.txt", "X"), Change("d", "D")],
            CommitMode.REPLACE,
        )
    assert snapshot(root) == before
    assert store.manifest("m0").files["a.txt"].sha256 == sha("alpha\n")


def test_a_failure_while_staging_leaves_every_file_as_it_was(store: RoundtripStore, root: Path) -> None:
    # a.txt is a regular file, so a.txt/inner.txt cannot be created: staging fails after
    # a.txt's own new content was already staged.
    store.start(["src/b.py", "a.txt/inner.txt"])
    before = snapshot(root)
    with pytest.raises(
        RoundtripError, match=r"^commit failed at a.txt/inner.txt: Not a directory; no file was changed$"
    ):
        store.commit("m0", [Change("src/b.py", "B2"), Change("a.txt/inner.txt", "I")], CommitMode.REPLACE)
    assert snapshot(root) == before


def test_a_successful_commit_updates_the_manifest_for_the_next_round(store: RoundtripStore, root: Path) -> None:
    store.start(["a.txt"])
    store.commit("m0", [Change("a.txt", "one")], CommitMode.REPLACE)
    store.commit("m0", [Change("a.txt", "two")], CommitMode.REPLACE)
    assert (root / "a.txt").read_text() == "two"


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("../outside.txt", "'..' is not allowed"),
        ("src/../../outside.txt", "'..' is not allowed"),
        ("/etc/passwd", "absolute paths are not allowed"),
        ("C:\\Windows\\win.ini", "absolute paths are not allowed"),
        ("~/secrets", "absolute paths are not allowed"),
        ("", "must be a non-empty string"),
        (".", "names the workspace root itself"),
    ],
)
def test_paths_escaping_the_root_are_refused(store: RoundtripStore, path: str, reason: str) -> None:
    with pytest.raises(RoundtripError, match=reason):
        store.start([path])


def test_symlinks_resolving_outside_the_root_are_refused(store: RoundtripStore, root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("s")
    (root / "linkdir").symlink_to(outside)
    (root / "linkfile").symlink_to(outside / "secret.txt")
    for path in ("linkdir/secret.txt", "linkfile", "linkdir/new.txt"):
        with pytest.raises(RoundtripError, match="resolves outside the workspace root"):
            store.start([path])
    manifest = store.start(["a.txt"])
    with pytest.raises(RoundtripError, match="resolves outside the workspace root"):
        store.commit(manifest.id, [Change("linkdir/new.txt", "x")], CommitMode.REPLACE)
    assert not (outside / "new.txt").exists()


def test_a_symlink_inside_the_root_is_followed(store: RoundtripStore, root: Path) -> None:
    (root / "alias.txt").symlink_to(root / "a.txt")
    manifest = store.start(["alias.txt"])
    assert manifest.files["alias.txt"].content == "alpha\n"


def test_several_roots_are_addressed_by_their_directory_name(tmp_path: Path) -> None:
    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "f.txt").write_text(name)
    store = RoundtripStore([tmp_path / "one", tmp_path / "two"])
    manifest = store.start(["two/f.txt"])
    assert manifest.files["two/f.txt"].content == "two"
    with pytest.raises(RoundtripError, match=r"must start with a workspace root name \(one, two\)"):
        store.start(["f.txt"])


@pytest.mark.parametrize(
    ("setup", "paths", "reason"),
    [
        (lambda r: None, ["src"], "src: is a directory"),
        (
            lambda r: (r / "bin.dat").write_bytes(b"\xff\xfe\x00"),
            ["bin.dat"],
            "bin.dat: not a UTF-8 text file",
        ),
        (lambda r: (r / "big.txt").write_text("x" * 11), ["big.txt"], "big.txt: larger than 10 bytes"),
        (lambda r: None, [], "paths: give at least one path"),
    ],
)
def test_start_refuses_what_it_cannot_roundtrip(root: Path, setup, paths: list[str], reason: str) -> None:  # type: ignore[no-untyped-def]
    setup(root)
    with pytest.raises(RoundtripError, match=reason):
        RoundtripStore([root], max_file_bytes=10).start(paths)


def test_changes_must_be_in_the_manifest_and_unique(store: RoundtripStore) -> None:
    store.start(["a.txt"])
    with pytest.raises(RoundtripError, match=r"changes\[0\].path: src/b.py is not in manifest m0"):
        store.commit("m0", [Change("src/b.py", "x")], CommitMode.REPLACE)
    with pytest.raises(RoundtripError, match=r"changes\[1\].path: a.txt appears twice"):
        store.preview("m0", [Change("a.txt", "x"), Change("./a.txt", "y")], CommitMode.REPLACE)
    with pytest.raises(RoundtripError, match="changes: give at least one change"):
        store.preview("m0", [], CommitMode.REPLACE)


def test_unknown_and_evicted_manifests_are_refused(root: Path) -> None:
    store = RoundtripStore([root], max_manifests=1)
    first = store.start(["a.txt"])
    store.start(["a.txt"])
    with pytest.raises(RoundtripError, match="manifestId: unknown or expired manifest"):
        store.preview(first.id, [Change("a.txt", "x")], CommitMode.REPLACE)


def test_roots_need_distinct_names(tmp_path: Path) -> None:
    (tmp_path / "x" / "ws").mkdir(parents=True)
    (tmp_path / "y" / "ws").mkdir(parents=True)
    with pytest.raises(ValueError, match="distinct directory names"):
        RoundtripStore([tmp_path / "x" / "ws", tmp_path / "y" / "ws"])
    with pytest.raises(ValueError, match="at least one"):
        RoundtripStore([])
