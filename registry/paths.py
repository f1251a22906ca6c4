"""Where the application keeps files: a module with no third-party imports."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_cache_dir"]

_APP_DIR = "capability-compiler"


def default_cache_dir() -> Path:
    """Return the XDG cache directory for this application.

    ``$XDG_CACHE_HOME/capability-compiler`` when ``XDG_CACHE_HOME`` is set to an
    absolute path (the XDG Base Directory specification says relative values are to
    be ignored), else ``~/.cache/capability-compiler``.

    Returns:
        The directory path; it is not created here.
    """
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"
    return base / _APP_DIR
