"""Writing an artifact file (a lock, an audit page) atomically, by one set of rules.

:func:`write_atomically` writes a temporary file in the target's folder and renames it
over the target, so a reader sees the old file or the new one, never a partial one. A
symlink is followed (the file it points to is replaced, and the link stays a link); a
target that exists and is not a regular file (a directory, a FIFO, a device such as
``/dev/full``, a ``/dev/fd/N`` pipe) is refused; missing parent folders are created; an
existing file's permission bits are kept, and its group where the user may set it (a
member of the group, or root), a new file gets ``0o644``. ``-`` (standard
output) is the caller's to handle.

The temporary file has no name while it is written where the system allows it (Linux
``O_TMPFILE``, on file systems that support it, with ``/proc`` mounted): it is linked as
``.NAME.XXXXXXXX.tmp`` only once complete, just before the rename, so a process killed
while writing (``SIGKILL``, a power cut) leaves nothing behind. Elsewhere it is a named
``.NAME.XXXXXXXX.tmp`` from the start (removed on any error, but not after a kill).
Reading an existing file (:func:`holds_text`, ``keep_same``) opens it without blocking
and refuses anything but a regular file, so a FIFO or a folder is an error, not a hang.
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

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
        mode, group = 0o644, -1
    else:
        if not stat.S_ISREG(info.st_mode):
            raise refuse(_not_regular(path, option))
        mode, group = info.st_mode & 0o777, info.st_gid
        if keep_same and isinstance(data, bytes) and info.st_size == len(data):
            with contextlib.suppress(OSError), _open_regular(target, option, refuse) as old:
                if old is not None and old.read(len(data) + 1) == data:
                    return target
    target.parent.mkdir(parents=True, exist_ok=True)
    unnamed = _unnamed(target.parent)
    if unnamed is None:
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp",
                                    dir=target.parent)
    else:
        fd, temp = unnamed, ""
    try:
        with os.fdopen(fd, "wb" if temp else "w+b") as handle:
            for piece in (data,) if isinstance(data, bytes) else data:
                handle.write(piece)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
            if group not in (-1, os.getegid()):  # the file's group, where we may keep it
                with contextlib.suppress(OSError):
                    os.fchown(handle.fileno(), -1, group)
            os.fchmod(handle.fileno(), mode)
            if not temp:  # complete: now give it a name, beside the target
                handle.flush()
                temp = _name(handle, target, mode, durable)
        os.replace(temp, target)
    except BaseException:
        if temp:
            with contextlib.suppress(OSError):
                os.unlink(temp)
        raise
    return target


def _not_regular(path: str | Path, option: str) -> str:
    return (f"{path}: not a regular file; give a file path for {option} "
            "(or '-' for standard output)")


def _unnamed(folder: Path) -> int | None:
    """A file with no name in ``folder`` (Linux ``O_TMPFILE``), or ``None`` where the
    system or the file system has none (or ``/proc/self/fd`` is missing, to link it)."""
    flag = getattr(os, "O_TMPFILE", 0)
    if not flag or not os.path.isdir("/proc/self/fd"):
        return None
    try:
        return os.open(folder, flag | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT):
            return None  # this file system (or an old kernel) has no O_TMPFILE
        raise


def _name(handle: BinaryIO, target: Path, mode: int, durable: bool) -> str:
    """A name for the complete unnamed file: linked (:func:`_link`), or, where the link
    is refused (a file system or a sandbox that forbids it), copied to a named file."""
    try:
        return _link(handle.fileno(), target)
    except FileExistsError:
        raise
    except OSError:
        pass
    fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as copy:
            handle.seek(0)
            shutil.copyfileobj(handle, copy)
            if durable:
                copy.flush()
                os.fsync(copy.fileno())
            os.fchmod(copy.fileno(), mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def _link(fd: int, target: Path) -> str:
    """Give the unnamed file ``fd`` a fresh ``.NAME.XXXXXXXX.tmp`` name beside ``target``."""
    # linkat(AT_SYMLINK_FOLLOW) from /proc/self/fd: a src_dir_fd makes os.link call
    # linkat (plain link() would link the /proc symlink itself: EXDEV).
    proc = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for _ in range(100):
            temp = str(target.parent / f".{target.name}.{os.urandom(4).hex()}.tmp")
            try:
                os.link(str(fd), temp, src_dir_fd=proc, follow_symlinks=True)
            except FileExistsError:
                continue
            return temp
    finally:
        os.close(proc)
    raise FileExistsError(errno.EEXIST, "no free temporary name", str(target.parent))


@contextlib.contextmanager
def _open_regular(path: str | Path, option: str,
                  refuse: Callable[[str], Exception]) -> Iterator[BinaryIO | None]:
    """``path`` opened for reading without blocking (a FIFO does not wait for a writer),
    or ``None`` when it does not exist; ``refuse(message)`` when it is not a regular file.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        yield None
        return
    except IsADirectoryError:
        raise refuse(_not_regular(path, option)) from None
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except BaseException:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise refuse(_not_regular(path, option))
    os.set_blocking(fd, True)
    with os.fdopen(fd, "rb") as handle:
        yield handle


def holds_text(path: Path, pieces: Iterable[bytes], *, option: str,
               refuse: Callable[[str], Exception]) -> bool | None:
    """Whether the file holds the text whose UTF-8 ``pieces`` are given, read as
    ``Path.read_text`` reads it (UTF-8, universal newlines), compared piece by piece.

    Args:
        path: the file.
        pieces: the expected text, as UTF-8 bytes.
        option: the CLI option that names the file (``--output``), for the message.
        refuse: builds the error raised for a path that is not a regular file.

    Returns:
        ``None`` when the file does not exist; ``False`` when it differs or is not UTF-8.

    Raises:
        Exception: ``refuse(message)`` for a directory, a FIFO, a device (checked
            without blocking: a FIFO with no writer does not hang).
        OSError: the file exists but cannot be read.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    with _open_regular(path, option, refuse) as raw:
        if raw is None:
            return None
        handle = io.TextIOWrapper(raw, encoding="utf-8")  # as Path.open: universal newlines
        try:
            for piece in pieces:
                text = decoder.decode(piece)
                if handle.read(len(text)) != text:
                    return False
            return handle.read(1) == ""
        except UnicodeDecodeError:
            return False
        finally:
            handle.detach()
