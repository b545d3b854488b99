"""Files that hold secrets (the registry, the admin token) live in a private folder, mode 0700/0600."""

from __future__ import annotations

import os
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if missing; the folder itself ends up 0700.

    An existing folder that others can read is tightened, since it holds literal env and
    header values (the registry) and the admin token.
    """
    path.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
    if path.stat().st_mode & 0o077:
        path.chmod(DIR_MODE)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty with mode 0600 if missing (in a private folder); tighten it if looser."""
    private_dir(path.parent)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    except FileExistsError:
        if path.stat().st_mode & 0o077:
            path.chmod(FILE_MODE)
    else:
        os.close(fd)
    return path
