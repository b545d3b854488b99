"""All-or-nothing writing of several files.

Two phases: ``stage`` writes each new content to a temp file beside its target (same
directory, so the later rename is atomic) and backs up the file it will replace; ``apply``
then ``os.replace``s every temp file onto its target. Any ``OSError`` in either phase rolls
back what was already replaced (from the backups), removes created files and directories,
and re-raises. Not safe against concurrent writers: callers serialise commits.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

NEW_FILE_MODE = 0o644
_PREFIX = ".roundtrip-"


class FileTransaction:
    """One use: ``write_all(...)`` either changes every target or none (barring a failing rollback)."""

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []
        self._backups: dict[Path, Path] = {}
        self._replaced: list[Path] = []
        self._created_dirs: list[Path] = []
        self._used = False
        self.rollback_failures: list[str] = []
        self.failed_at: Path | None = None

    def write_all(self, writes: list[tuple[Path, bytes]]) -> None:
        """Write ``(target, data)`` pairs atomically as a group.

        Raises the first ``OSError`` after rolling back; ``failed_at`` then names the target
        being written and ``rollback_failures`` lists targets that could not be restored.
        """
        if self._used:
            raise RuntimeError("a FileTransaction is single-use")
        self._used = True
        ok = False
        try:
            for target, data in writes:
                self.failed_at = target
                self._stage(target, data)
            for tmp, target in self._staged:
                self.failed_at = target
                os.replace(tmp, target)
                self._replaced.append(target)
            ok = True
            self.failed_at = None
        except OSError:
            self._rollback()
            raise
        finally:
            self._cleanup(ok)

    def _stage(self, target: Path, data: bytes) -> None:
        self._make_parents(target.parent)
        existing = target.exists()
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=_PREFIX, suffix=".tmp")
        tmp = Path(name)
        self._staged.append((tmp, target))
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if existing and target.is_file():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
            fd, backup_name = tempfile.mkstemp(dir=target.parent, prefix=_PREFIX, suffix=".bak")
            os.close(fd)
            backup = Path(backup_name)
            self._backups[target] = backup
            shutil.copy2(target, backup)
        else:
            os.chmod(tmp, NEW_FILE_MODE)

    def _make_parents(self, directory: Path) -> None:
        missing: list[Path] = []
        probe = directory
        while not probe.exists():
            missing.append(probe)
            probe = probe.parent
        for path in reversed(missing):
            path.mkdir()
            self._created_dirs.append(path)

    def _rollback(self) -> None:
        for target in reversed(self._replaced):
            backup = self._backups.pop(target, None)
            try:
                if backup is None:
                    target.unlink()
                else:
                    os.replace(backup, target)
            except OSError as exc:
                self.rollback_failures.append(f"{target}: {exc.strerror or exc}")

    def _cleanup(self, ok: bool) -> None:
        # A replaced temp file no longer exists under its name, so unlinking every one is safe.
        for path in [*(tmp for tmp, _ in self._staged), *self._backups.values()]:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        if not ok:
            # Deepest first; a directory someone else filled meanwhile stays.
            for directory in reversed(self._created_dirs):
                with contextlib.suppress(OSError):
                    directory.rmdir()
