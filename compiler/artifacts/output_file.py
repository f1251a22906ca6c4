"""Writing an artifact file (a lock, an audit page) atomically, by one set of rules.

:func:`write_atomically` writes a temporary file in the target's folder and renames it
over the target, so a reader sees the old file or the new one, never a partial one. A
symlink is followed (the file it points to is replaced, and the link stays a link); a
target that exists and is not a regular file (a directory, a FIFO, a device such as
``/dev/full``, a ``/dev/fd/N`` pipe) is refused; missing parent folders are created; an
existing file's permission bits are kept, a new file gets ``0o644``. ``-`` (standard
output) is the caller's to handle.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

__all__ = ["holds_text", "write_atomically"]


def write_atomically(
    data: bytes | Iterable[bytes],
    path: str | Path,
    *,
    option: str,
    refuse: Callable[[str], Exception],
    durable: bool,
    keep_same: bool = False,
) -> Path:
    """Write ``data`` to ``path`` atomically (see the module docstring).

    Args:
        data: the file's bytes, or its pieces in order (written one by one as they come:
            an error raised while they are made removes the temporary file and leaves
            the target as it was).
        path: the target as the user gave it.
        option: the CLI option that names the target (``--output``), for the message.
        refuse: builds the error raised for a target that is not a regular file.
        durable: sync the new file to disk before the rename (a lock must survive a
            crash; a page is a view, made again at will).
        keep_same: leave a file that already holds exactly ``data`` (bytes, not pieces)
            as it is (its time stamp too): the rename costs the file system a flush.

    Returns:
        The file written (``path`` with symlinks resolved).

    Raises:
        Exception: ``refuse(message)`` for a target that exists and is not a regular file.
        OSError: the folder is not writable, or the disk is full.
    """
    target = Path(os.path.realpath(path))
    try:
        info = os.stat(path)  # a /dev/fd/N link names a pipe realpath cannot
    except FileNotFoundError:
        mode = 0o644
    else:
        if not stat.S_ISREG(info.st_mode):
            raise refuse(f"{path}: not a regular file; give a file path for {option} "
                         "(or '-' for standard output)")
        mode = info.st_mode & 0o777
        if keep_same and isinstance(data, bytes) and info.st_size == len(data):
            with contextlib.suppress(OSError):
                if target.read_bytes() == data:
                    return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in (data,) if isinstance(data, bytes) else data:
                handle.write(piece)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return target


def holds_text(path: Path, pieces: Iterable[bytes]) -> bool | None:
    """Whether the file holds the text whose UTF-8 ``pieces`` are given, read as
    ``Path.read_text`` reads it (UTF-8, universal newlines), compared piece by piece.

    Returns:
        ``None`` when the file does not exist; ``False`` when it differs or is not UTF-8.

    Raises:
        OSError: the file exists but cannot be read.
    """
    try:
        handle = path.open(encoding="utf-8")
    except FileNotFoundError:
        return None
    decoder = codecs.getincrementaldecoder("utf-8")()
    with handle:
        try:
            for piece in pieces:
                text = decoder.decode(piece)
                if handle.read(len(text)) != text:
                    return False
            return handle.read(1) == ""
        except UnicodeDecodeError:
            return False
