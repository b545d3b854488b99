"""Manifest-based file roundtripping: read files with their hashes, preview edits, commit atomically.

Paths are relative to a workspace root (with several roots, the first path segment names
the root by its directory name). ``..``, absolute paths, and symlinks resolving outside
the root are refused. A commit first checks every changed file still has the hash the
manifest recorded (a conflict aborts before anything is written), then writes all files
through a ``FileTransaction``: every file or none.
"""

from __future__ import annotations

import difflib
import hashlib
import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath, PureWindowsPath

from mcp_aggregator.errors import RoundtripError
from mcp_aggregator.facades.file_transaction import FileTransaction

# Stands for "a directory is here now": never equal to a hex digest, so it reads as a conflict.
_DIRECTORY = "<directory>"


class CommitMode(StrEnum):
    REPLACE = "replace"  # overwrite existing, create new
    ADD_ONLY = "add_only"  # skip existing, create new
    UPDATE_ONLY = "update_only"  # overwrite existing, skip new


@dataclass(frozen=True, slots=True)
class FileState:
    """A file as ``roundtrip_start`` saw it; ``sha256`` and ``content`` are None if it did not exist."""

    path: str
    sha256: str | None
    content: str | None

    @property
    def exists(self) -> bool:
        return self.sha256 is not None


@dataclass(frozen=True, slots=True)
class Manifest:
    id: str
    files: Mapping[str, FileState]


@dataclass(frozen=True, slots=True)
class Change:
    path: str
    content: str


@dataclass(frozen=True, slots=True)
class PlannedChange:
    """What a commit would do to one file.

    ``action``: ``create`` | ``update`` | ``unchanged`` | ``skip`` (the mode leaves it alone).
    ``conflict``: the file changed on disk since the manifest was taken.
    """

    path: str
    action: str
    conflict: bool
    diff: str


class RoundtripStore:
    """Manifests in memory (the oldest are dropped past ``max_manifests``) over workspace roots.

    Every method raises ``RoundtripError`` with a message naming the path and the reason.
    File I/O is blocking: async callers run these methods in a worker thread, one commit at
    a time.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        *,
        max_manifests: int = 64,
        max_files: int = 100,
        max_file_bytes: int = 1_000_000,
        new_id: Callable[[], str] = lambda: secrets.token_hex(8),
    ) -> None:
        if not roots:
            raise ValueError("roundtripping needs at least one workspace root")
        self._roots = {root.resolve().name: root.resolve() for root in roots}
        if len(self._roots) != len(roots):
            raise ValueError("workspace roots must have distinct directory names")
        self._single = len(roots) == 1
        self._manifests: OrderedDict[str, Manifest] = OrderedDict()
        self._max_manifests = max_manifests
        self._max_files = max_files
        self._max_file_bytes = max_file_bytes
        self._new_id = new_id

    def start(self, paths: Sequence[str]) -> Manifest:
        if not paths:
            raise RoundtripError("paths: give at least one path")
        if len(paths) > self._max_files:
            raise RoundtripError(f"paths: at most {self._max_files} files per manifest")
        files: dict[str, FileState] = {}
        for raw in paths:
            key, target = self._resolve(raw)
            data = self._read(key, target)
            if data is None:
                files[key] = FileState(key, None, None)
                continue
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise RoundtripError(f"{key}: not a UTF-8 text file") from exc
            files[key] = FileState(key, hashlib.sha256(data).hexdigest(), text)
        manifest = Manifest(self._new_id(), files)
        self._manifests[manifest.id] = manifest
        while len(self._manifests) > self._max_manifests:
            self._manifests.popitem(last=False)
        return manifest

    def manifest(self, manifest_id: str) -> Manifest:
        try:
            return self._manifests[manifest_id]
        except KeyError:
            raise RoundtripError(f"manifestId: unknown or expired manifest {manifest_id!r}") from None

    def preview(self, manifest_id: str, changes: Sequence[Change], mode: CommitMode) -> list[PlannedChange]:
        """What ``commit`` would do, with unified diffs against the files as they are now."""
        return [plan for plan, _, _ in self._plan(manifest_id, changes, mode)]

    def commit(self, manifest_id: str, changes: Sequence[Change], mode: CommitMode) -> list[PlannedChange]:
        """Apply the changes atomically; returns the plan that was carried out.

        Raises ``RoundtripError`` (nothing written) on a conflict, and after a rollback
        when a write fails. On success the manifest records the new hashes, so a further
        commit on it conflicts only with changes made by others.
        """
        planned = self._plan(manifest_id, changes, mode)
        conflicts = [plan.path for plan, _, _ in planned if plan.conflict]
        if conflicts:
            raise RoundtripError(
                f"conflict: changed on disk since roundtrip_start: {', '.join(conflicts)}; nothing was written"
            )
        writes = [(target, data) for plan, target, data in planned if plan.action in ("create", "update")]
        keys = {target: plan.path for plan, target, _ in planned}
        transaction = FileTransaction()
        try:
            transaction.write_all(writes)
        except OSError as exc:
            where = f" at {keys[transaction.failed_at]}" if transaction.failed_at in keys else ""
            outcome = (
                f"could not restore {', '.join(transaction.rollback_failures)}"
                if transaction.rollback_failures
                else "no file was changed"
            )
            raise RoundtripError(f"commit failed{where}: {exc.strerror or exc}; {outcome}") from exc
        manifest = self.manifest(manifest_id)
        files = dict(manifest.files)
        for plan, _, data in planned:
            if plan.action in ("create", "update"):
                files[plan.path] = FileState(plan.path, hashlib.sha256(data).hexdigest(), data.decode("utf-8"))
        self._manifests[manifest_id] = Manifest(manifest_id, files)
        return [plan for plan, _, _ in planned]

    def _plan(
        self, manifest_id: str, changes: Sequence[Change], mode: CommitMode
    ) -> list[tuple[PlannedChange, Path, bytes]]:
        manifest = self.manifest(manifest_id)
        if not changes:
            raise RoundtripError("changes: give at least one change")
        seen: set[str] = set()
        planned: list[tuple[PlannedChange, Path, bytes]] = []
        for index, change in enumerate(changes):
            key, target = self._resolve(change.path)
            if key in seen:
                raise RoundtripError(f"changes[{index}].path: {key} appears twice")
            seen.add(key)
            recorded = manifest.files.get(key)
            if recorded is None:
                raise RoundtripError(
                    f"changes[{index}].path: {key} is not in manifest {manifest_id}; list it in roundtrip_start"
                )
            data = change.content.encode("utf-8")
            if len(data) > self._max_file_bytes:
                raise RoundtripError(f"changes[{index}].content: larger than {self._max_file_bytes} bytes")
            current = self._fingerprint(key, target)
            conflict = current != recorded.sha256
            old_text = self._current_text(target) if current not in (None, _DIRECTORY) else None
            action = _action(recorded.exists, mode, unchanged=old_text == change.content)
            diff = "" if action in ("skip", "unchanged") else _diff(key, old_text, change.content)
            planned.append((PlannedChange(key, action, conflict, diff), target, data))
        return planned

    def _resolve(self, raw: object) -> tuple[str, Path]:
        if not isinstance(raw, str) or not raw.strip():
            raise RoundtripError(f"path {raw!r}: must be a non-empty string")
        posix = PurePosixPath(raw)
        if posix.is_absolute() or PureWindowsPath(raw).is_absolute() or raw.startswith("~"):
            raise RoundtripError(f"{raw}: absolute paths are not allowed; use a path relative to the workspace")
        parts = [part for part in posix.parts if part != "."]
        if ".." in parts:
            raise RoundtripError(f"{raw}: '..' is not allowed in paths")
        if self._single:
            (root,) = self._roots.values()
            key = "/".join(parts)
        else:
            if not parts or parts[0] not in self._roots:
                names = ", ".join(self._roots)
                raise RoundtripError(f"{raw}: must start with a workspace root name ({names})")
            root = self._roots[parts[0]]
            key, parts = "/".join(parts), parts[1:]
        if not parts:
            raise RoundtripError(f"{raw}: names the workspace root itself, not a file")
        try:
            target = root.joinpath(*parts).resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop
            raise RoundtripError(f"{raw}: cannot resolve: {exc}") from exc
        if not target.is_relative_to(root) or target == root:
            raise RoundtripError(f"{raw}: resolves outside the workspace root (symlink); refused")
        return key, target

    def _read(self, key: str, target: Path) -> bytes | None:
        try:
            size = target.stat().st_size
            if target.is_dir():
                raise RoundtripError(f"{key}: is a directory, not a file")
            if size > self._max_file_bytes:
                raise RoundtripError(f"{key}: larger than {self._max_file_bytes} bytes")
            return target.read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            raise RoundtripError(f"{key}: cannot read: {exc.strerror or exc}") from exc

    def _fingerprint(self, key: str, target: Path) -> str | None:
        if target.is_dir():
            return _DIRECTORY
        data = self._read(key, target)
        return None if data is None else hashlib.sha256(data).hexdigest()

    @staticmethod
    def _current_text(target: Path) -> str | None:
        try:
            return target.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            return None


def _action(exists: bool, mode: CommitMode, *, unchanged: bool) -> str:
    if exists:
        if mode is CommitMode.ADD_ONLY:
            return "skip"
        return "unchanged" if unchanged else "update"
    return "skip" if mode is CommitMode.UPDATE_ONLY else "create"


def _diff(key: str, old: str | None, new: str) -> str:
    # A last line without its newline would run into the next diff line.
    before = [line if line.endswith("\n") else line + "\n" for line in (old or "").splitlines(keepends=True)]
    after = [line if line.endswith("\n") else line + "\n" for line in new.splitlines(keepends=True)]
    source = f"a/{key}" if old is not None else "/dev/null"
    return "".join(difflib.unified_diff(before, after, fromfile=source, tofile=f"b/{key}"))
